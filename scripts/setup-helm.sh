#!/usr/bin/env bash
# Installs the pinned helm into .tools/bin (go install from the Go module proxy: helm's own release
# downloads are not reachable everywhere), for the chart's tests (test/deploy/helm.test.ts). Quick
# when it is there already; exits 1 saying why when it cannot install it.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.22.0
helm=".tools/bin/helm"
# A helm built by go install says only its minor version (v3.22).
if [ -x "$helm" ] && "$helm" version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
  exit 0
fi
command -v go >/dev/null || { echo "setup-helm: go is not installed, so helm cannot be built" >&2; exit 1; }
mkdir -p .tools/bin
echo "setup-helm: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (a few minutes the first time)"
GOBIN="$PWD/.tools/bin" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$helm" version --short
