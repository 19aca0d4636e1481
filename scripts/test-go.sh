#!/usr/bin/env bash
# Builds and vets the generated Go client (gen/go) and runs the Go example's tests, which start the
# real wayfind server (node, so `npm ci` must have run). Runs from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "test-go: go is not installed" >&2; exit 1; }
[ -d node_modules ] || { echo "test-go: run npm ci first (the tests start the server)" >&2; exit 1; }

echo "== gen/go: go build, go vet"
(cd gen/go && go build ./... && go vet ./...)

echo "== examples/go: go vet, go test"
cd examples/go
go vet ./...
# One test binary starts one server; -count=1 so a cached pass never hides a server change.
go test -count=1 -timeout 120s ./...
