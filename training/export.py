"""Exports a trained sentence-transformers folder as a wayfind model folder (the all-MiniLM-L6-v2
layout src/semantic/model.ts reads): the encoder as ONNX with a `last_hidden_state` output, its
MatMul weights quantized to int8 per channel (onnxruntime quantize_dynamic), activations then
quantized per token (training/per_token.py), beside the tokenizer files.

Usage: python training/export.py TRAINED_DIR OUT_DIR --tokenizer-from SHIPPED_MODEL_DIR
The tokenizer files come from the shipped model's folder (the same vocabulary; its
tokenizer_config.json says model_max_length 128, the length wayfind embeds at).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import onnx

from per_token import rewrite

TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"]


def export_fp32(trained: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        """The encoder called by keyword, returning its last hidden state only."""

        def __init__(self) -> None:
            super().__init__()
            # Eager attention exports as plain MatMul/Softmax; the default (scaled-dot-product) one
            # brings mask helpers and shape nodes that make every query measurably slower.
            self.bert = AutoModel.from_pretrained(str(trained), attn_implementation="eager").eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    tokens = torch.ones((2, 16), dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            Encoder().eval(),
            (tokens, torch.ones_like(tokens), torch.zeros_like(tokens)),
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch_size", 1: "sequence_length"}
                for name in ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]
            },
            opset_version=17,
            dynamo=False,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trained", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--tokenizer-from", type=Path, required=True)
    args = parser.parse_args()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    (args.out / "onnx").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        fp32 = Path(work) / "model.onnx"
        int8 = Path(work) / "model_int8.onnx"
        export_fp32(args.trained, fp32)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        model = onnx.load(str(int8))
        count = rewrite(model)
        onnx.save(model, str(args.out / "onnx" / "model_quantized.onnx"))
    for name in TOKENIZER_FILES:
        shutil.copy(args.tokenizer_from / name, args.out / name)
    print(f"{args.out}: exported, {count} activation quantizers made per token")


if __name__ == "__main__":
    main()
