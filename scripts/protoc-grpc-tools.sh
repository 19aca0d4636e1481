#!/usr/bin/env bash
# `protoc` for buf's protoc_builtin Python plugins: grpcio-tools' bundled protoc, with its built-in
# python, pyi and grpc_python generators, from the pinned .venv (see scripts/setup-tools.sh).
exec "$(dirname "$0")/../.venv/bin/python" -m grpc_tools.protoc "$@"
