#!/usr/bin/env bash
# Everything CI checks, in order, from the project's own files. `npm test` runs this.
# Needs `npm ci` first; installs the pinned Go plugins and the Python venv itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

step() { printf '\n== %s\n' "$*"; }

step "lint and format (biome)"
biome ci .

step "typecheck (tsc, strict)"
tsc --noEmit -p .

step "generated code is up to date (buf lint, buf format, buf generate)"
bash scripts/generate.sh
if [ -n "$(git status --porcelain -- gen 2>/dev/null)" ]; then
  git status --porcelain -- gen
  echo "gen/ differs from what proto/ generates: run 'npm run generate' and commit the result" >&2
  exit 1
fi

step "no breaking proto changes against main"
if git rev-parse --verify --quiet main >/dev/null; then
  buf breaking proto --against '.git#branch=main,subdir=proto'
else
  echo "no main branch to compare with; skipped"
fi

step "TypeScript tests (vitest)"
vitest run

step "Go client tests"
bash scripts/test-go.sh

step "Python client tests"
bash scripts/test-python.sh

step "fresh clone: install from the lock, serve the demo, one call, stop"
bash scripts/test-fresh-clone.sh
