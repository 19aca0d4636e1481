#!/usr/bin/env bash
# Installs the generated Python client (gen/python) into .venv the way a user would, then runs the
# Python example's tests, which start the real wayfind server (node, so `npm ci` must have run).
# Needs .venv from `bash scripts/setup-python.sh` (no Go needed). Runs from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || { echo "test-python: .venv is missing; run bash scripts/setup-python.sh" >&2; exit 1; }
[ -d node_modules ] || { echo "test-python: run npm ci first (the tests start the server)" >&2; exit 1; }

echo "== pip install ./gen/python"
# Built from a copy: setuptools writes build/ and *.egg-info next to pyproject.toml, and gen/ must
# stay exactly what scripts/generate.sh produces.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R gen/python "$work/python"
.venv/bin/pip install --quiet --disable-pip-version-check "$work/python"
.venv/bin/pip check --disable-pip-version-check
# The tests must import the installed package, not a source tree.
.venv/bin/python -c 'import sys, wayfind.v1.usage_pb2_grpc as m; p = m.__file__; print(p); sys.exit("site-packages" not in p)'

echo "== pytest examples/python"
timeout 120 .venv/bin/python -m pytest examples/python -q -p no:cacheprovider
