"""Rewrites a dynamically quantized sentence-embedding graph so that activations are quantized per token.

`onnxruntime.quantization.quantize_dynamic` quantizes each activation tensor as a whole
(DynamicQuantizeLinear: one scale and zero point for the tensor, padding included). A text's vector
then depends on what else shares its batch, so texts could only be embedded one at a time. This
rewrite gives every token (every row of each quantized MatMul's input) its own symmetric scale,
max|x| / 127, with the fixed zero point 128 on uint8: a row's integer products no longer depend on
any other row, so a text embeds to the same vector alone or in any batch, padded to any length. It
is also closer to the float graph, since one outlier token no longer coarsens every other token.

The weights, the tokenizer and everything else are unchanged. onnxruntime's MatMulIntegerToFloat
fusion assumes one activation scale per tensor, so a session must not apply it to the result: load it
at the basic optimisation level (src/semantic/model.ts does).

Usage:
  python training/per_token.py IN.onnx OUT.onnx [--check MODEL_DIR]
--check embeds sample texts (data/eval tool descriptions) with both graphs and prints how close each
is to the same graph with float activations, and whether OUT gives the same vectors alone and batched.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ZERO_POINT = "per_token_zero_point"
MARK = ("wayfind.activation_quantization", "per-token-symmetric")


def rewrite(model: onnx.ModelProto) -> int:
    """Replaces every DynamicQuantizeLinear of `model` in place; returns how many."""
    graph = model.graph
    if any(p.key == MARK[0] for p in model.metadata_props):
        raise SystemExit("the graph is already quantized per token")
    constants = {
        ZERO_POINT: np.array(128, dtype=np.uint8),
        "per_token_offset": np.array(128.0, dtype=np.float32),
        "per_token_levels": np.array(127.0, dtype=np.float32),
        # An all-zero row (padding) would divide by zero.
        "per_token_least": np.array(1e-8, dtype=np.float32),
    }
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in constants.items())
    nodes = []
    zero_points: dict[str, str] = {}
    count = 0
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        count += 1
        x = node.input[0]
        quantized, scale, zero_point = node.output
        p = f"{x}_per_token"
        nodes += [
            helper.make_node("Abs", [x], [f"{p}_abs"]),
            helper.make_node("ReduceMax", [f"{p}_abs"], [f"{p}_max"], keepdims=1, axes=[-1]),
            helper.make_node("Max", [f"{p}_max", "per_token_least"], [f"{p}_range"]),
            helper.make_node("Div", [f"{p}_range", "per_token_levels"], [scale]),
            helper.make_node("Div", [x, scale], [f"{p}_scaled"]),
            helper.make_node("Round", [f"{p}_scaled"], [f"{p}_rounded"]),
            helper.make_node("Add", [f"{p}_rounded", "per_token_offset"], [f"{p}_shifted"]),
            helper.make_node("Cast", [f"{p}_shifted"], [quantized], to=TensorProto.UINT8),
        ]
        zero_points[zero_point] = ZERO_POINT
    if count == 0:
        raise SystemExit("no DynamicQuantizeLinear in the graph: nothing to rewrite")
    for node in nodes:
        for i, name in enumerate(node.input):
            if name in zero_points:
                node.input[i] = zero_points[name]
    del graph.node[:]
    graph.node.extend(nodes)
    model.metadata_props.append(onnx.StringStringEntryProto(key=MARK[0], value=MARK[1]))
    onnx.checker.check_model(model)
    return count


def float_activations(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph with dequantized weights and float activations: the reference for --check."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    weights = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    replaced: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for n in graph.node:
        if n.op_type != "MatMulInteger":
            continue
        xq, wq, _, wz = n.input
        x = producer[xq].input[0]
        cast = consumers[n.output[0]][0]
        mul = consumers[cast.output[0]][0]
        scales = producer[next(i for i in mul.input if i != cast.output[0])]
        w_scale = next(i for i in scales.input if i in weights)
        w = (weights[wq].astype(np.float32) - weights[wz].astype(np.float32)) * weights[w_scale]
        graph.initializer.append(numpy_helper.from_array(w.astype(np.float32), f"{wq}_float"))
        replaced[id(n)] = helper.make_node("MatMul", [x, f"{wq}_float"], [mul.output[0]])
        dropped.update([id(cast), id(mul), id(scales)])
    kept = [
        replaced.get(id(n), n)
        for n in graph.node
        if id(n) not in dropped and n.op_type != "DynamicQuantizeLinear"
    ]
    del graph.node[:]
    graph.node.extend(kept)
    return model


def check(original: onnx.ModelProto, rewritten: onnx.ModelProto, model_dir: Path) -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    texts = []
    data = Path(__file__).resolve().parent.parent / "data" / "eval"
    for name in ["toolbench_catalog.jsonl", "metatool_catalog.jsonl"]:
        for line in (data / name).read_text().splitlines():
            tool = json.loads(line)
            texts.append(f"{tool['name'].replace('_', ' ')}: {tool.get('description') or ''}")
    random.Random(1).shuffle(texts)
    ids = [[101, *tokenizer.encode(t, add_special_tokens=False).ids[:126], 102] for t in texts[:300]]

    def session(model: onnx.ModelProto, level):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.graph_optimization_level = level
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def embed(s, batch, length=None):
        width = length or max(len(e) for e in batch)
        tokens = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(tokens)
        for row, e in enumerate(batch):
            tokens[row, : len(e)] = e
            mask[row, : len(e)] = 1
        feeds = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
        hidden = s.run(["last_hidden_state"], feeds)[0]
        vectors = np.array([hidden[row, : len(e)].mean(0) for row, e in enumerate(batch)])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    basic = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    reference = session(float_activations(original), ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    ref = np.vstack([embed(reference, [e]) for e in ids])
    for label, model in [("per tensor (in)", original), ("per token (out)", rewritten)]:
        s = session(model, basic)
        alone = np.vstack([embed(s, [e]) for e in ids])
        cos = (alone * ref).sum(1)
        batched = np.vstack([embed(s, ids[i : i + 16], 128) for i in range(0, len(ids), 16)])
        print(
            f"{label}: cosine to float activations mean {cos.mean():.5f}, min {cos.min():.5f}; "
            f"alone vs batches of 16 padded to 128: max |diff| {np.abs(alone - batched).max():.2e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--check", type=Path, metavar="MODEL_DIR", help="folder with tokenizer.json")
    args = parser.parse_args()
    original = onnx.load(args.input)
    rewritten = onnx.ModelProto.FromString(original.SerializeToString())
    count = rewrite(rewritten)
    onnx.save(rewritten, args.output)
    print(f"{args.output}: {count} activation quantizers made per token", file=sys.stderr)
    if args.check:
        check(original, rewritten, args.check)


if __name__ == "__main__":
    main()
