#!/usr/bin/env bash
# The Python side alone (no Go needed): .venv with grpcio-tools (the Python stubs), the client's
# dependencies and pytest, from python/requirements-dev.txt. For the Python example and its tests
# (examples/python/README.md); scripts/setup-tools.sh runs it too. Quick when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

reqs_hash=$(sha256sum python/requirements-dev.txt | cut -c1-16)
if [ ! -f ".venv/.installed-$reqs_hash" ]; then
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r python/requirements-dev.txt
  touch ".venv/.installed-$reqs_hash"
fi
