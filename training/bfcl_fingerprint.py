"""Builds training/data/bfcl_fingerprint.json.gz: hashes (no text) of every function name, (name,
description), description and user question in BFCL, read from the PyPI package `bfcl-eval` at pinned
versions, each checked by sha256. check_exclusions.py refuses training pairs that near-duplicate any of them.

Usage: python training/bfcl_fingerprint.py [OUT (default training/data/bfcl_fingerprint.json.gz)]
Downloads the wheels into training/.work/bfcl (pip, no install).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from common import ROOT, NearDupIndex, bare_name, h64, name_key, norm  # noqa: E402

# The earliest version on PyPI (BFCL v3, with its v1-era categories), the latest (BFCL v4), and two
# between them whose questions were reworded.
WHEELS = {
    "2025.6.8": "f93fee3a66d33f8ea09e5174b4ba72aa80732b31506be1043da8ffb23c299cc3",
    "2025.10.2": "7ba33a08b71205354b08792d4fb39e26ca15e6b9379ef5efb5263ed93bc39a44",
    "2026.1.3": "c793dca5bb8c083ccacc95a74f3cb15f72723d5698e64204a23669ab907a76c9",
    "2026.3.23": "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a",
}
WORK = Path(__file__).resolve().parent / ".work" / "bfcl"


def wheel(version: str) -> Path:
    path = WORK / f"bfcl_eval-{version}-py3-none-any.whl"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--dest", str(WORK), f"bfcl-eval=={version}"],
            check=True,
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WHEELS[version]:
        raise SystemExit(f"{path.name}: sha256 {digest}, expected {WHEELS[version]}")
    return path


def records(text: str) -> list:
    """A file's JSON values: one per line (BFCL's usual form), or the whole file as one."""
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        return [json.loads(text)]


def walk(value, functions: list[dict], questions: list[str]) -> None:
    """Collects every function document ({name, description}) and user message anywhere in `value`."""
    if isinstance(value, dict):
        if isinstance(value.get("name"), str) and isinstance(value.get("description"), str):
            functions.append(value)
        if value.get("role") == "user" and isinstance(value.get("content"), str):
            questions.append(value["content"])
        for v in value.values():
            walk(v, functions, questions)
    elif isinstance(value, list):
        for v in value:
            walk(v, functions, questions)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bfcl_fingerprint.json.gz"
    functions: list[dict] = []
    questions: list[str] = []
    files: set[str] = set()
    for version in WHEELS:
        with zipfile.ZipFile(wheel(version)) as w:
            for name in w.namelist():
                # Answers only repeat the functions' names; everything else under data/ is read.
                if name.startswith("bfcl_eval/data/") and name.endswith(".json") and "possible_answer" not in name:
                    files.add(name.removeprefix("bfcl_eval/data/"))
                    for value in records(w.read(name).decode("utf-8")):
                        walk(value, functions, questions)

    name_keys: set[str] = set()
    pairs: set[str] = set()
    descriptions: dict[str, dict] = {}
    for f in functions:
        full, bare, desc = name_key(f["name"]), name_key(bare_name(f["name"])), norm(f["description"])
        name_keys.update({h64(full), h64(bare)})
        pairs.add(h64(bare + "\t" + desc))
        if len(desc.split()) >= 3:
            descriptions.setdefault(desc, NearDupIndex.entry(f["description"]))
    asked = {norm(q): NearDupIndex.entry(q) for q in questions if norm(q)}
    fingerprint = {
        "about": "Hashes (sha256, first 16 hex) of BFCL function names, name+description pairs, descriptions and "
        "user questions. Built by training/bfcl_fingerprint.py from the PyPI package bfcl-eval.",
        "source": {"pypi": "bfcl-eval", "versions": WHEELS},
        "files": sorted(files),
        "counts": {
            "functions": len(functions),
            "distinct_names": len({name_key(f["name"]) for f in functions}),
            "descriptions": len(descriptions),
            "questions": len(asked),
        },
        "name_keys": sorted(name_keys),
        "name_description_keys": sorted(pairs),
        "descriptions": [descriptions[k] for k in sorted(descriptions)],
        "questions": [asked[k] for k in sorted(asked)],
    }
    out.write_bytes(gzip.compress(json.dumps(fingerprint, separators=(",", ":")).encode("utf-8"), mtime=0))
    print(f"{out}: {fingerprint['counts']}, {len(files)} files")


if __name__ == "__main__":
    main()
