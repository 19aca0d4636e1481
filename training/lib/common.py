"""Shared helpers: text normalisation, wayfind's word analysis (ported), shingles, the held-out sets.

Nothing here downloads anything. Paths default to this repository's layout; WAYFIND_SHARED names the
team's shared folder (default: ../shared beside the repository, checked only where it exists).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "data"
MAIN = Path(__file__).resolve().parent.parent.parent
SHARED = Path(os.environ.get("WAYFIND_SHARED", str(MAIN.parent / "shared")))
EVAL = MAIN / "data" / "eval"


# ---------------------------------------------------------------- normalisation

_PUNCT = re.compile(r"[^\w\s]+", re.UNICODE)
_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    """Lowercase, NFKC, punctuation stripped (underscores too), whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text or "").lower().replace("_", " ")
    t = _PUNCT.sub(" ", t)
    return _WS.sub(" ", t).strip()


def name_key(name: str) -> str:
    """wayfind's nameKey: case- and separator-insensitive (`Send-Message`, `sendMessage` -> sendmessage)."""
    return re.sub(r"[\W_]+", "", (name or "").lower(), flags=re.UNICODE)


def bare_name(name: str) -> str:
    """wayfind's bareName: the part after the last `.` (or an MCP-style `server__tool`)."""
    tail = name.rsplit(".", 1)[-1]
    return tail.split("__", 1)[1] if "__" in tail else tail


def words(text: str) -> list[str]:
    return norm(text).split()


def shingles(text: str, n: int = 3) -> set[str]:
    w = words(text)
    if len(w) < n:
        return {" ".join(w)} if w else set()
    return {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}


def h64(s: str) -> str:
    """Short stable hash (hex, 16 chars) used in fingerprints so no held-out text is stored."""
    return hashlib.sha256(s.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------- wayfind's analyze() (src/discovery/text.ts)

STOPWORDS = set(
    (
        "a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being "
        "am do does did doing have has had having i me my mine we us our you your yours he him his she her it its they them "
        "their this that these those there here what which who whom whose when where why how all any both each few more most "
        "other some such no nor not only own same so than too very s t can could will would shall should may might must "
        "just also please thanks thank like want wants wanted need needs needed help let lets know tell give provide "
        "hi hello hey ok okay im ive id ill youre dont doesnt cant wont up out over under again further once very really "
        "something anything everything someone anyone some way able"
    ).split()
)

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _cls(ch: str) -> int:
    if "a" <= ch <= "z":
        return 1
    if "A" <= ch <= "Z":
        return 2
    if "0" <= ch <= "9":
        return 3
    if ord(ch) < 128:
        return 0
    if _CJK.match(ch):
        return 4
    if ch.isalpha():
        return 2 if ch.isupper() else 1
    if ch.isdigit():
        return 3
    return 0


def split_words(text: str) -> list[str]:
    """Port of splitWords: breaks identifiers apart (fooBar, HTTPServer, v2api, a_b, a-b, a.b)."""
    out: list[str] = []
    start = -1
    prev = 0
    n = len(text)
    for i in range(n + 1):
        cls = 0 if i >= n else _cls(text[i])
        if start >= 0:
            boundary = cls in (0, 4) or prev == 4
            if not boundary:
                if cls == 2 and prev in (1, 3):
                    boundary = True
                elif cls == 3 and prev != 3:
                    boundary = True
                elif prev == 3 and cls != 3:
                    boundary = True
                elif cls == 1 and prev == 2 and i - start > 1:
                    out.append(text[start : i - 1].lower())
                    start = i - 1
            if boundary:
                out.append(text[start:i].lower())
                start = -1
        if start < 0 and cls != 0:
            start = i
        prev = cls
    return out


_DERIVATIONS = [
    ("izations", "", 4), ("ization", "", 4), ("ational", "", 5), ("fulness", "", 4), ("ations", "", 5),
    ("ation", "", 5), ("ments", "", 4), ("ment", "", 4), ("ness", "", 4), ("ize", "", 4), ("iz", "", 4),
    ("ise", "", 4), ("ful", "", 4), ("er", "", 4), ("ly", "", 4),
]  # fmt: skip


def _undouble(w: str) -> str:
    return w[:-1] if re.search(r"([bdfgmnprt])\1$", w) else w


def stem(word: str) -> str:
    w = word
    if len(w) <= 3 or not re.fullmatch(r"[a-z]+", w):
        return w
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif re.search(r"(xes|ches|shes|zes)$", w):
        w = w[:-2]
    elif w.endswith("s") and not re.search(r"(ss|us|is)$", w):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5 and re.search(r"[aeiouy]", w[:-3]):
        w = _undouble(w[:-3])
    elif w.endswith("ed") and not w.endswith("eed") and len(w) > 4 and re.search(r"[aeiouy]", w[:-2]):
        w = _undouble(w[:-2])
    for _ in range(2):
        for suffix, repl, min_stem in _DERIVATIONS:
            if w.endswith(suffix) and len(w) - len(suffix) >= min_stem:
                w = w[: -len(suffix)] + repl
                break
    if len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def analyze(text: str) -> list[str]:
    return [stem(w) for w in split_words(text or "") if w not in STOPWORDS]


def request_kind(request: str, tool_name: str, tool_description: str) -> str:
    """The bench's kinds, applied to one pair.

    paraphrase: no analysed request word in the tool's name or description (bench/search-quality.ts);
    direct: every analysed word of the tool's bare name is in the request;
    partial: anything between.
    """
    asked = set(analyze(request))
    own = set(analyze(f"{tool_name} {tool_description}"))
    if not asked & own:
        return "paraphrase"
    name_words = set(analyze(bare_name(tool_name)))
    if name_words and name_words <= asked:
        return "direct"
    return "partial"


# ------------------------------------------------------------------ held-out sets


def read_jsonl(path: Path) -> list[dict]:
    """A JSONL file, gzipped (.gz) or not."""
    with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")) as f:
        return [json.loads(line) for line in f if line.strip()]


def eval_queries(set_name: str) -> list[dict]:
    """A public set's requests exactly as bench/lib/eval-halves.ts reads them (blank lines dropped)."""
    return read_jsonl(EVAL / f"{set_name}_queries.jsonl")


def halves(set_name: str) -> tuple[list[dict], list[dict]]:
    """(even, odd) by 0-based position among non-blank lines, as eval-halves.ts splits them."""
    qs = eval_queries(set_name)
    return [q for i, q in enumerate(qs) if i % 2 == 0], [q for i, q in enumerate(qs) if i % 2 == 1]


MCP_CATALOG_FILES = ["mcp_catalog.jsonl", "livemcpbench_catalog.jsonl"]
TEAM_REQUEST_FILES = ["mcp_requests.jsonl", "mcp_requests_multilingual.jsonl"]


def mcp_catalog_tools() -> list[dict]:
    """Every tool of the held-out MCP catalogs, in data/eval and in shared/data (deduplicated)."""
    seen: set[tuple[str, str]] = set()
    out: list[dict] = []
    dirs = [EVAL, SHARED / "data"]
    for d in dirs:
        for fname in MCP_CATALOG_FILES:
            p = d / fname
            if not p.exists():
                continue
            for t in read_jsonl(p):
                key = (t.get("name", ""), t.get("description", ""))
                if key in seen:
                    continue
                seen.add(key)
                out.append({"name": t.get("name", ""), "description": t.get("description", "") or "", "file": str(p)})
    # Any other catalog someone drops into shared/data that is not one of the public even-half sets.
    sd = SHARED / "data"
    if sd.exists():
        for p in sorted(sd.glob("*.jsonl")):
            if p.name in MCP_CATALOG_FILES or p.name.startswith(("toolbench_", "metatool_")):
                continue
            for t in read_jsonl(p):
                if "name" in t and "description" in t:
                    key = (t["name"], t["description"] or "")
                    if key not in seen:
                        seen.add(key)
                        out.append({"name": t["name"], "description": t["description"] or "", "file": str(p)})
    return out


def held_out_requests() -> list[dict]:
    """Requests that must never be trained on: odd halves of toolbench/metatool, the team's MCP sets."""
    out: list[dict] = []
    for s in ("toolbench", "metatool"):
        _, odd = halves(s)
        out += [{"query": q["query"], "set": f"{s}-odd", "id": q["id"]} for q in odd]
    for fname in TEAM_REQUEST_FILES:
        p = EVAL / fname
        if p.exists():
            out += [{"query": q["query"], "set": fname, "id": q["id"]} for q in read_jsonl(p)]
    return out


# --------------------------------------------------------------- near-duplicates


COMMON_POSTING = 200  # a 3-gram in more indexed texts than this only serves the prefix filter


class NearDupIndex:
    """Finds near-duplicates of a probe among indexed texts, by content words and word 3-grams.

    A probe is a near-duplicate of an indexed text when, after normalisation:
    - they are equal; or
    - their content-word sets (wayfind's analyze(): stopwords out, stemmed) both have >= 2 words and
      Jaccard >= content_j (rewordings and reorderings of the same request); or
    - their word-3-gram Jaccard >= gram_j while their content-word Jaccard >= 0.7; or
    - (contain set) the smaller text has >= contain_min 3-grams, >= 0.8 of them inside the larger, and
      >= 0.9 of its content words too (a held-out request copied inside a longer one).
    Short templated texts ("Can you help me find a bus." / "... a hotel.") share most 3-grams but
    not their content words, so they do not match. Everything is stored as short hashes, so an index
    can be saved without the texts it was built from (the BFCL fingerprint is such an index).
    """

    def __init__(self, content_j: float = 0.8, gram_j: float = 0.5, contain_min: int | None = 6):
        self.content_j, self.gram_j, self.contain_min = content_j, gram_j, contain_min
        self.labels: list[str] = []
        self.exact: dict[str, int] = {}
        self.sh: list[set[str]] = []
        self.cw: list[set[str]] = []
        self.inv_sh: dict[str, list[int]] = {}
        self.inv_cw: dict[str, list[int]] = {}

    @staticmethod
    def entry(text: str) -> dict:
        return {
            "exact": h64(norm(text)),
            "cw": sorted({h64(w) for w in analyze(text)}),
            "sh": sorted({h64(g) for g in shingles(text)}),
        }

    def add(self, entry: dict, label: str) -> None:
        i = len(self.labels)
        self.labels.append(label)
        self.exact.setdefault(entry["exact"], i)
        self.sh.append(set(entry["sh"]))
        self.cw.append(set(entry["cw"]))
        for g in entry["sh"]:
            self.inv_sh.setdefault(g, []).append(i)
        for w in entry["cw"]:
            self.inv_cw.setdefault(w, []).append(i)

    def add_text(self, text: str, label: str) -> None:
        if norm(text):
            self.add(self.entry(text), label)

    def match(self, probe: str) -> tuple[int, str, float] | None:
        """(index, how, score) of the closest near-duplicate, or None (memoised per probe)."""
        cache = self.__dict__.setdefault("_cache", {})
        if probe not in cache:
            cache[probe] = self._match(probe)
        return cache[probe]

    def _match(self, probe: str) -> tuple[int, str, float] | None:
        if not norm(probe):
            return None
        e = self.entry(probe)
        if e["exact"] in self.exact:
            return self.exact[e["exact"]], "equal", 1.0
        s, c = set(e["sh"]), set(e["cw"])
        cands: set[int] = set()
        # Prefix filter: a text with 3-gram Jaccard >= gram_j shares one of the probe's rarest
        # len(s) - ceil(gram_j * len(s)) + 1 3-grams; for containment, any 3-gram that is not common
        # (a copied sentence shares several, and a rare one among them).
        by_rarity = sorted(s, key=lambda g: len(self.inv_sh.get(g, ())))
        k = len(s) - math.ceil(self.gram_j * len(s)) + 1
        for j, g in enumerate(by_rarity):
            posting = self.inv_sh.get(g, ())
            if j < k or len(posting) <= COMMON_POSTING:
                cands.update(posting)
        # Any text with content Jaccard >= content_j shares one of the probe's 3 rarest content words.
        for w in sorted(c, key=lambda w: len(self.inv_cw.get(w, ())))[:3]:
            cands.update(self.inv_cw.get(w, ()))
        best = None
        for i in cands:
            oc, os_ = self.cw[i], self.sh[i]
            cu = len(c | oc)
            cj = len(c & oc) / cu if cu else 0.0
            shared = len(s & os_)
            gj = shared / len(s | os_) if (s or os_) else 0.0
            cand = None
            if len(c) >= 2 and len(oc) >= 2 and cj >= self.content_j:
                cand = (i, f"content-words {cj:.2f}", cj)
            elif gj >= self.gram_j and cj >= 0.7:
                cand = (i, f"3gram-jaccard {gj:.2f}", gj)
            elif self.contain_min is not None:
                small_s, small_c, big_c = (s, c, oc) if len(s) <= len(os_) else (os_, oc, c)
                if len(small_s) >= self.contain_min and shared / len(small_s) >= 0.8:
                    if small_c and len(small_c & big_c) / len(small_c) >= 0.9:
                        cand = (i, f"3gram-containment {shared / len(small_s):.2f}", shared / len(small_s))
            if cand and (best is None or cand[2] > best[2]):
                best = cand
        return best
