#!/usr/bin/env bash
# Everything CI checks, in order, from the project's own files. `npm test` runs this.
# Needs `npm ci` first; installs the pinned Go plugins and the Python venv itself.
# WAYFIND_TEST_SKIP_DEPLOY=1 leaves out the fresh clone, the Helm chart and the container image (a
# local run, CONTRIBUTING.md); CI runs everything. Each step's time and the total are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

steps=()
step_started=$SECONDS
run_started=$SECONDS
current_step=""
end_step() {
  [ -n "$current_step" ] && steps+=("$(printf '%5d s  %s' $((SECONDS - step_started)) "$current_step")")
  step_started=$SECONDS
}
step() {
  end_step
  current_step="$*"
  printf '\n== %s\n' "$*"
}
summary() {
  local status=$?
  end_step
  current_step=""
  printf '\n== time by step%s\n' "$([ "$status" -ne 0 ] && echo " (stopped by a failure)")"
  printf '%s\n' "${steps[@]}"
  printf '%5d s  in all\n' $((SECONDS - run_started))
}
trap summary EXIT
skip_deploy="${WAYFIND_TEST_SKIP_DEPLOY:-}"

step "lint and format (biome)"
biome ci .

step "typecheck (tsc, strict): the server, and the web console (console/, browser types)"
tsc --noEmit -p .
tsc --noEmit -p console

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

# Suites that time the event loop (they watch health checks: test/support/health.ts) run after the
# rest, one file at a time: sharing two cores with other suites would measure the machine's load,
# not the server's longest turn.
mapfile -t timed_suites < <(grep -rl --include='*.test.ts' "support/health.ts" test | sort)
untimed=()
for suite in "${timed_suites[@]}"; do untimed+=(--exclude "$suite"); done

# The deployment suites that need helm or podman run in their own steps at the end, once their tools
# are there; the build-context check needs neither.
step "TypeScript tests (vitest)"
vitest run "${untimed[@]}" --exclude 'test/deploy/helm.test.ts' --exclude 'test/deploy/image.test.ts'


step "TypeScript tests that time the event loop, alone (vitest)"
vitest run --no-file-parallelism "${timed_suites[@]}"

# Every suite that starts a server (on a port or in process: test/support/server.ts), again with each
# test server a replica on PostgreSQL (its own database in a PostgreSQL the tests start:
# docs/replicas.md). Left out: the replica suites (they run their own fleets above) and mcp.test.ts
# (it inspects the MCP processes this process runs itself, which a replica leaves to the holder of
# each server's lease).
step "TypeScript server suites on PostgreSQL (WAYFIND_TEST_STORAGE=postgres)"
mapfile -t server_suites < <(grep -rl --include='*.test.ts' -e "startTestServer" -e "startRouterServer" test \
  | grep -v -e '^test/server/replica' -e '^test/server/mcp.test.ts$' | sort)
timed_server_suites=()
untimed_server_suites=()
for suite in "${server_suites[@]}"; do
  if printf '%s\n' "${timed_suites[@]}" | grep -qx -- "$suite"; then
    timed_server_suites+=("$suite")
  else
    untimed_server_suites+=("$suite")
  fi
done
WAYFIND_TEST_STORAGE=postgres vitest run "${untimed_server_suites[@]}"
if [ "${#timed_server_suites[@]}" -gt 0 ]; then
  WAYFIND_TEST_STORAGE=postgres vitest run --no-file-parallelism "${timed_server_suites[@]}"
fi

step "no PostgreSQL left running by the tests"
if pgrep -af -- "-D [^ ]*/wayfind-pg-" >&2; then
  echo "the PostgreSQL servers above were left running by the tests: a suite does not stop what it starts" >&2
  exit 1
fi

step "Go client tests"
bash scripts/test-go.sh

step "Python client tests"
bash scripts/test-python.sh

if [ -n "$skip_deploy" ]; then
  step "fresh clone, Helm chart, container image"
  echo "SKIPPED: WAYFIND_TEST_SKIP_DEPLOY is set (CI runs them)"
  exit 0
fi

step "fresh clone: install from the lock, serve the demo, one call, stop"
bash scripts/test-fresh-clone.sh

step "the Helm chart: helm lint, helm template with several value sets (deploy/helm/wayfind)"
if bash scripts/setup-helm.sh; then
  vitest run test/deploy/helm.test.ts
else
  echo "SKIPPED: helm could not be installed (scripts/setup-helm.sh needs go and the Go module proxy)"
fi

step "the container image: npm run image, then serve, /readyz, a search, SIGTERM (podman)"
if command -v podman >/dev/null 2>&1; then
  bash scripts/image.sh
  vitest run test/deploy/image.test.ts
else
  echo "SKIPPED: podman is not installed (apt-get install podman runc debootstrap)"
fi
