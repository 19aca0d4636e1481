#!/usr/bin/env bash
# Rebuilds a model folder's static tier (static/vectors.bin, static/config.json and its score curve
# static/calibration.json) from the model itself, one command, CPU only:
#   bash training/static.sh [MODEL_DIR]       (default models/all-MiniLM-L6-v2)
# 1. the pinned Python environment (setup.sh); 2. the tool texts of the training pairs and of the
# team's shared training data, as wayfind embeds them (texts.ts); 3. the word-piece rows distilled from
# the model folder's own ONNX graph (static.py: its requests and tool texts pass the held-out check
# first); 4. the static tier's score curve, fitted on the even halves (bench/score-calibration.ts
# --tier static --write); 5. search quality with every request read by the static tier beside the
# model (bench/search-quality.ts). The team's shared data is read from ../shared/data/training (or
# WAYFIND_SHARED/data/training) when it is there, never copied into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/all-MiniLM-L6-v2}
work=training/.work
shared="${WAYFIND_SHARED:-../shared}/data/training"
mkdir -p "$work"

bash training/setup.sh
py=training/.venv/bin/python

echo "== tool texts"
inputs=(training/data/pairs.jsonl.gz)
if [ -d "$shared" ]; then inputs+=("$shared"/*.jsonl); else echo "(no $shared: the repository's pairs only)"; fi
node --import tsx training/texts.ts "${inputs[0]}" "$work/static-texts.jsonl" "${inputs[@]:1}"

echo "== static tier of $model"
shared_flag=()
[ -d "$shared" ] && shared_flag=(--shared "$shared")
"$py" training/static.py --model "$model" --texts "$work/static-texts.jsonl" --pairs training/data/pairs.jsonl.gz \
  "${shared_flag[@]}" --out "$model/static"

echo "== its score curve (static/calibration.json, fitted on the even halves)"
WAYFIND_MODEL_DIR="$(cd "$model" && pwd)" node --import tsx bench/score-calibration.ts --tier static --write

echo "== search quality, the model and its static tier"
WAYFIND_MODEL_DIR="$(cd "$model" && pwd)" node --import tsx bench/search-quality.ts > "$work/quality-static.txt"
echo "written: $work/quality-static.txt; update $model/SHA256SUMS and README.md"
