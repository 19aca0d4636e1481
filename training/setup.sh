#!/usr/bin/env bash
# Creates training/.venv with the pinned packages of training/requirements.txt (from PyPI).
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
echo "training/.venv ready: $(.venv/bin/python --version)"
