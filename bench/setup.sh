#!/usr/bin/env bash
# Installs the gRPC load client used by bench/grpc-throughput.ts into .tools/bin (idempotent).
# ghz is built from source with the Go toolchain from the Go module proxy, at a pinned version.
set -euo pipefail
GHZ_VERSION="${GHZ_VERSION:-v0.121.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin"
mkdir -p "$BIN"
STAMP="$BIN/.ghz-version" # go install leaves `ghz --version` as "dev": remember what we built
if [[ -x "$BIN/ghz" && "$(cat "$STAMP" 2>/dev/null)" == "$GHZ_VERSION" ]]; then
  echo "ghz ${GHZ_VERSION} already in $BIN" >&2
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "bench/setup.sh: Go toolchain not found; install Go >= 1.21 (or put ghz on PATH)" >&2
  exit 1
fi
echo "installing ghz ${GHZ_VERSION} into $BIN ..." >&2
GOBIN="$BIN" CGO_ENABLED=0 go install "github.com/bojand/ghz/cmd/ghz@${GHZ_VERSION}"
echo "$GHZ_VERSION" >"$STAMP"
echo "installed $BIN/ghz (${GHZ_VERSION})" >&2
