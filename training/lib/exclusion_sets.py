"""The held-out material and the rules that keep it out of training.

Rules (each offence names its rule):
- source-not-listed / source-refused: every pair's `source` must be a source listed as usable in
  sources.yaml; a source whose name or provenance says BFCL / Berkeley / OpenFunctions is refused.
- mcp-name: a tool (the answer or a negative) whose name, compared by wayfind's nameKey, equals an
  MCP catalog tool's full name (`server.tool`), or whose bare name equals an MCP tool's bare name
  while their descriptions share half their words or more.
- mcp-description: a tool description equal (normalised) to an MCP catalog description, or a
  near-duplicate of one (word 3-gram Jaccard >= 0.5, or >= 0.8 of the smaller one's 3-grams inside
  the other).
- held-out-request: a request equal or near-duplicate (same rule; texts of up to 8 words also when
  they have the same word set) to an odd-half request of toolbench/metatool or to one of the team's
  MCP requests (mcp_requests*.jsonl).
- bfcl-request: a request near-duplicate of any BFCL question (any version in git history).
- bfcl-tool: a tool whose (bare name, description) equals a BFCL function's, or whose description is
  a near-duplicate of a BFCL function description.
Warnings (reported, not failures): a tool whose bare name equals an MCP or BFCL function name with an
unrelated description (generic names like `search` or `get_weather` occur everywhere).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from common import (
    ROOT,
    NearDupIndex,
    bare_name,
    h64,
    held_out_requests,
    mcp_catalog_tools,
    name_key,
    norm,
)

FINGERPRINT = ROOT / "bfcl_fingerprint.json.gz"
SOURCES_YAML = ROOT / "sources.yaml"
REFUSED_PATTERN = re.compile(r"bfcl|berkeley|openfunction|function[-_ ]?call(ing)?[-_ ]?leaderboard", re.I)


def _word_overlap(a: str, b: str) -> float:
    wa, wb = set(norm(a).split()), set(norm(b).split())
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def listed_sources() -> dict[str, dict]:
    """name -> entry of the usable sources in sources.yaml."""
    import yaml  # PyYAML; present with the Python environment here

    data = yaml.safe_load(SOURCES_YAML.read_text(encoding="utf-8"))
    return {s["name"]: s for s in data.get("sources", []) if s.get("usable")}


UNNAMED_LICENCE = re.compile(r"^\s*(|none|unknown|unclear|n/?a|tbd|\?+)\s*$", re.I)


def named_licence(source: dict) -> bool:
    """A source may be trained on only if sources.yaml names its licence (not blank or "unknown")."""
    licence = source.get("licence")
    return isinstance(licence, str) and not UNNAMED_LICENCE.match(licence)


class Checker:
    def __init__(self, mcp_tools: list[dict], held_out: list[dict], bfcl: dict, sources: dict[str, dict]):
        self.sources = sources
        self.mcp_full = {name_key(t["name"]): t for t in mcp_tools}
        self.mcp_bare: dict[str, list[dict]] = {}
        for t in mcp_tools:
            self.mcp_bare.setdefault(name_key(bare_name(t["name"])), []).append(t)
        self.mcp_desc_exact = {norm(t["description"]): t for t in mcp_tools if len(norm(t["description"]).split()) >= 3}
        self.mcp_desc = NearDupIndex()
        for t in mcp_tools:
            if len(norm(t["description"]).split()) >= 3:
                self.mcp_desc.add_text(t["description"], t["name"])
        self.held = NearDupIndex()
        for q in held_out:
            self.held.add_text(q["query"], f"{q['set']}:{q['id']}")
        self.bfcl_names = set(bfcl.get("name_keys", []))
        self.bfcl_pairs = set(bfcl.get("name_description_keys", []))
        self.bfcl_desc = NearDupIndex()
        for i, e in enumerate(bfcl.get("descriptions", [])):
            self.bfcl_desc.add(e, f"bfcl-description#{i}")
        self.bfcl_q = NearDupIndex()
        for i, e in enumerate(bfcl.get("questions", [])):
            self.bfcl_q.add(e, f"bfcl-question#{i}")
        self.warnings: dict[str, int] = {}

    @classmethod
    def load(cls) -> "Checker":
        if not FINGERPRINT.exists():
            raise SystemExit(f"{FINGERPRINT} is missing: the BFCL fingerprint ships with the repository")
        bfcl = json.loads(gzip.decompress(FINGERPRINT.read_bytes()))
        return cls(mcp_catalog_tools(), held_out_requests(), bfcl, listed_sources())

    def _warn(self, key: str) -> None:
        self.warnings[key] = self.warnings.get(key, 0) + 1

    def tool_offences(self, tool: dict, role: str) -> list[dict]:
        key = (tool.get("name", ""), tool.get("description", ""), role)
        cache = self.__dict__.setdefault("_tool_cache", {})
        if key not in cache:
            cache[key] = self._tool_offences(tool, role)
        return cache[key]

    def _tool_offences(self, tool: dict, role: str) -> list[dict]:
        out = []
        name, desc = tool.get("name", ""), tool.get("description", "")
        full, bare = name_key(name), name_key(bare_name(name))
        if full in self.mcp_full:
            out.append({"rule": "mcp-name", "detail": f"{role} {name!r} is MCP tool {self.mcp_full[full]['name']!r}"})
        for t in self.mcp_bare.get(bare, []):
            if _word_overlap(desc, t["description"]) >= 0.5:
                out.append({"rule": "mcp-name", "detail": f"{role} {name!r} ~ MCP tool {t['name']!r} (name + description)"})
                break
        else:
            if bare in self.mcp_bare:
                self._warn("bare name equals an MCP tool's, descriptions unrelated")
        nd = norm(desc)
        if nd in self.mcp_desc_exact:
            out.append({"rule": "mcp-description", "detail": f"{role} description equals MCP {self.mcp_desc_exact[nd]['name']!r}"})
        elif len(nd.split()) >= 3:
            m = self.mcp_desc.match(desc)
            if m:
                out.append({"rule": "mcp-description", "detail": f"{role} description ~ MCP {self.mcp_desc.labels[m[0]]!r} ({m[1]})"})
        if h64(bare + "\t" + nd) in self.bfcl_pairs:
            out.append({"rule": "bfcl-tool", "detail": f"{role} {name!r}: name and description of a BFCL function"})
        elif len(nd.split()) >= 3 and (m := self.bfcl_desc.match(desc)):
            out.append({"rule": "bfcl-tool", "detail": f"{role} {name!r}: description ~ {self.bfcl_desc.labels[m[0]]} ({m[1]})"})
        elif h64(bare) in self.bfcl_names or h64(full) in self.bfcl_names:
            self._warn("bare name equals a BFCL function's, description unrelated")
        return out

    def offences(self, row: dict) -> list[dict]:
        out = []
        src = row.get("source", "")
        if REFUSED_PATTERN.search(src):
            out.append({"rule": "source-refused", "detail": f"source {src!r} looks BFCL-derived"})
        elif src not in self.sources:
            out.append({"rule": "source-not-listed", "detail": f"source {src!r} is not a usable source in sources.yaml"})
        elif REFUSED_PATTERN.search(json.dumps(self.sources[src].get("from", ""))):
            out.append({"rule": "source-refused", "detail": f"source {src!r} comes from a BFCL path"})
        elif not named_licence(self.sources[src]):
            out.append({"rule": "source-unlicensed", "detail": f"source {src!r} names no licence in sources.yaml"})
        out += self.tool_offences(row.get("tool", {}), "tool")
        for n in row.get("negatives", []) or []:
            out += self.tool_offences(n, "negative")
        req = row.get("request", "")
        m = self.held.match(req)
        if m:
            out.append({"rule": "held-out-request", "detail": f"request ~ {self.held.labels[m[0]]} ({m[1]})"})
        m = self.bfcl_q.match(req)
        if m:
            out.append({"rule": "bfcl-request", "detail": f"request ~ {self.bfcl_q.labels[m[0]]} ({m[1]})"})
        return out
