#!/usr/bin/env bash
# Runs every benchmark and prints its figures. Benchmarks measure; they never fail a build.
# One at a time: `node --import tsx bench/<name>.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."
for bench in search-quality learning search-speed hybrid-load hybrid-scale versus-penguiflow prompt-size skills skill-search grpc-skills cache-economics usage watch-fanout mcp-sync mcp-endpoint mcp-skills mcp-gateways register-stall grpc-throughput grpc-10k telemetry-overhead auth-overhead score-calibration semantic change-log replicas workers snapshots ledger copy-to-postgres console; do
  [ -f "bench/$bench.ts" ] || continue
  printf '\n########## bench/%s.ts\n' "$bench"
  node --import tsx "bench/$bench.ts" || echo "(bench/$bench.ts exited with $?)"
done
