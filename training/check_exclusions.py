"""Fails loudly if pairs.jsonl holds anything held out of training (exit 1, offenders listed).

Checked for every pair, on the answer tool AND every negative (negatives are training input too):
- provenance: `source` must be a usable source of sources.yaml; names or paths that say BFCL /
  Berkeley / OpenFunctions are refused outright;
- the MCP catalogs (data/eval and shared/data: mcp_catalog.jsonl, livemcpbench_catalog.jsonl, and any
  other catalog dropped into shared/data): tool name equal by wayfind's nameKey to a catalog tool's
  `server.tool`, or bare name equal with half the description words shared; description equal
  (lowercase, punctuation stripped) or a near-duplicate (content words Jaccard >= 0.8, or word 3-gram
  Jaccard >= 0.5 with content words >= 0.7, or >= 0.8 of a >= 6-3-gram text inside the other);
- requests: near-duplicate (same rule) of an odd-half request of toolbench/metatool (0-based position
  among non-blank lines odd, as bench/lib/eval-halves.ts splits) or of the team's MCP requests;
- BFCL: near-duplicate of any BFCL question, (bare name, description) equal to a BFCL function's,
  or description near-duplicate of one — against data/bfcl_fingerprint.json.gz (hashes, built by
  bfcl_fingerprint.py from the PyPI package bfcl-eval).
Bare-name-only collisions with MCP/BFCL names (generic names: `search`, `get_news`) are warnings.

Usage: python3 training/check_exclusions.py [PAIRS (default training/data/pairs.jsonl.gz)] [--self-test]
       [--sample N]
  --self-test plants one offender of each kind into a copy of the data and exits 1 unless every one
  is caught (and the clean data passes).
"""

from __future__ import annotations

import json
import random
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from common import ROOT, halves, mcp_catalog_tools, read_jsonl  # noqa: E402
from exclusion_sets import Checker  # noqa: E402


def check(rows: list[dict], checker: Checker) -> dict[str, list[str]]:
    offenders: dict[str, list[str]] = defaultdict(list)
    for i, r in enumerate(rows):
        for h in checker.offences(r):
            offenders[h["rule"]].append(f"line {i + 1} [{r.get('source')}:{r.get('id')}] {h['detail']}")
    return offenders


def report(offenders: dict[str, list[str]], n: int, checker: Checker) -> int:
    if checker.warnings:
        for k, v in sorted(checker.warnings.items()):
            print(f"warning: {v} distinct tools: {k}")
    if not offenders:
        print(f"OK: {n} pairs, no held-out material found")
        return 0
    total = sum(len(v) for v in offenders.values())
    print(f"FAIL: {total} offences in {n} pairs", file=sys.stderr)
    for rule, items in sorted(offenders.items()):
        print(f"  {rule}: {len(items)}", file=sys.stderr)
        for line in items[:50]:
            print(f"    {line}", file=sys.stderr)
        if len(items) > 50:
            print(f"    ... {len(items) - 50} more", file=sys.stderr)
    return 1


def one_bfcl_question() -> str | None:
    """A BFCL question straight from a bfcl-eval wheel bfcl_fingerprint.py downloaded, if it is on this
    machine (self-test only)."""
    wheels = sorted((Path(__file__).resolve().parent / ".work" / "bfcl").glob("bfcl_eval-*.whl"))
    if not wheels:
        return None
    with zipfile.ZipFile(wheels[-1]) as w:
        names = [n for n in w.namelist() if n.endswith("_simple_python.json") and "possible_answer" not in n]
        if not names:
            return None
        first = json.loads(w.read(names[0]).decode("utf-8").splitlines()[7])
    return first["question"][0][0]["content"]


def self_test(rows: list[dict], checker: Checker) -> int:
    rnd = random.Random(44)
    base = rnd.choice([r for r in rows if r["source"] == "complexfuncbench"])
    mcp = rnd.choice([t for t in mcp_catalog_tools() if len(t["description"].split()) >= 6])
    odd_tb = halves("toolbench")[1][5]["query"]
    odd_mt = halves("metatool")[1][100]["query"]
    planted = {
        "mcp-name": {**base, "tool": {"name": mcp["name"], "description": "unrelated words here"}},
        "mcp-description": {**base, "tool": {"name": "someTool", "description": mcp["description"].upper() + "!"}},
        "mcp-description (negative)": {**base, "negatives": [{"name": "x", "description": mcp["description"]}]},
        "held-out-request (toolbench odd, reworded)": {**base, "request": "Hi! " + odd_tb.replace(".", " ;")},
        "held-out-request (metatool odd)": {**base, "request": odd_mt.lower()},
        "source-refused": {**base, "source": "bfcl-live"},
        "source-not-listed": {**base, "source": "some-new-set"},
        "source-unlicensed": {**base, "source": "set-without-licence"},
    }
    checker.sources["set-without-licence"] = {"name": "set-without-licence", "usable": True, "licence": "unknown"}
    q = one_bfcl_question()
    if q:
        planted["bfcl-request"] = {**base, "request": "Quick one: " + q}
    else:
        print("self-test: no bfcl-eval wheel here (training/bfcl_fingerprint.py), the BFCL request plant is skipped")
    failed = 0
    for label, row in planted.items():
        caught = {h["rule"] for h in checker.offences(row)}
        want = label.split(" ")[0]
        ok = want in caught
        failed += not ok
        print(f"self-test {'caught' if ok else 'MISSED'}: {label} -> {sorted(caught) or 'nothing'}")
    clean = check(rows, checker)
    if clean:
        print("self-test: the clean data does not pass")
        failed += 1
    print("self-test", "passed" if not failed else f"FAILED ({failed})")
    return 1 if failed else 0


def main() -> None:
    args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--") and sys.argv[i] != "--sample"]
    path = Path(args[0]) if args else ROOT / "pairs.jsonl.gz"
    rows = read_jsonl(path)
    if "--sample" in sys.argv:  # a quick self-test (the test suite's): every plant, checked beside a sample
        rows = random.Random(44).sample(rows, min(len(rows), int(sys.argv[sys.argv.index("--sample") + 1])))
    checker = Checker.load()
    if "--self-test" in sys.argv:
        sys.exit(self_test(rows, checker))
    offenders = check(rows, checker)
    by_source = Counter(r["source"] for r in rows)
    print("pairs by source: " + ", ".join(f"{k} {v}" for k, v in by_source.most_common()))
    sys.exit(report(offenders, len(rows), checker))


if __name__ == "__main__":
    main()
