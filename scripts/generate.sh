#!/usr/bin/env bash
# Regenerates gen/ (TypeScript, Go, Python) from proto/ with pinned local plugins.
# CI runs this and fails on any diff: never edit gen/ by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tools.sh
export PATH="$PWD/node_modules/.bin:$PATH"

buf lint
buf format --exit-code --diff >/dev/null || { echo "proto files are not formatted: run 'npx buf format -w'" >&2; exit 1; }

# Remove what the previous run generated so deleted protos leave nothing behind. Packaging files
# (gen/go/go.mod, gen/python/pyproject.toml) are maintained by hand and stay.
rm -rf gen/ts gen/python/wayfind
find gen/go -name '*.pb.go' -delete 2>/dev/null || true

buf generate
# Python packages need __init__.py files, which protoc does not write.
find gen/python/wayfind -type d -exec touch {}/__init__.py \;
touch gen/python/wayfind/py.typed
