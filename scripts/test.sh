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

step "imports: no cycles, no import from a higher layer (dependency-cruiser, .dependency-cruiser.mjs)"
npm run --silent depcruise

step "no unused files, exports or dependencies (knip, knip.ts)"
npm run --silent knip

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

# Every suite that starts a server, again with each test server a replica on PostgreSQL (its own
# database in a PostgreSQL the tests start: docs/replicas.md). Left out: the replica suites (they run
# their own fleets above) and mcp.test.ts (it inspects the MCP processes this process runs itself,
# which a replica leaves to the holder of each server's lease).
step "TypeScript server suites on PostgreSQL (WAYFIND_TEST_STORAGE=postgres)"
mapfile -t server_suites < <(grep -rl --include='*.test.ts' "startTestServer" test \
  | grep -v -e '^test/server/replica' -e '^test/server/mcp.test.ts$' | sort)
WAYFIND_TEST_STORAGE=postgres vitest run "${server_suites[@]}"

step "no PostgreSQL left running by the tests"
if pgrep -af -- "-D [^ ]*/wayfind-pg-" >&2; then
  echo "the PostgreSQL servers above were left running by the tests: a suite does not stop what it starts" >&2
  exit 1
fi

step "Go client tests"
bash scripts/test-go.sh

step "Python client tests"
bash scripts/test-python.sh

step "fresh clone: install from the lock, serve the demo, one call, stop"
bash scripts/test-fresh-clone.sh
