#!/usr/bin/env bash
# Installs the pinned code-generation and test toolchain that is not an npm package:
#   .tools/bin  protoc-gen-go, protoc-gen-go-grpc (go install at pinned versions)
#   .venv       Python with grpcio-tools (Python stubs) and pytest (Python client tests):
#               scripts/setup-python.sh, which needs no Go
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_GEN_GO_VERSION=v1.36.11
PROTOC_GEN_GO_GRPC_VERSION=v1.6.1

mkdir -p .tools/bin
export GOBIN="$PWD/.tools/bin"
stamp=".tools/go-plugins-$PROTOC_GEN_GO_VERSION-$PROTOC_GEN_GO_GRPC_VERSION"
if [ ! -f "$stamp" ]; then
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
  touch "$stamp"
fi

bash scripts/setup-python.sh
