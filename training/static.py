"""Distils the model's static tier: one vector per word piece of its vocabulary, so a request's meaning
costs a sum of rows (microseconds) instead of an inference (milliseconds) when the model cannot embed it
in time. A request's static vector is the normalised sum of its word pieces' rows, compared with the
tools' vectors the model itself made, so the rows are trained to give what the model gives: for each
text of a corpus of requests and tool texts, the cosine between the rows' sum and the model's vector of
the whole text is pulled towards 1 (the model is the teacher; no labels are read).

Each row starts where Model2Vec starts (the model's output for the word piece alone, between [CLS] and
[SEP]), weighted by how rare the piece is among the requests (smooth inverse frequency), so a word piece
the corpus never holds keeps the model's own sense of it.

Usage:
  python training/static.py --model DIR --texts TEXTS --pairs PAIRS [--shared DIR] --out DIR
      [--epochs N] [--lr X] [--seed N] [--crops N]

DIR: the model folder (onnx/model_quantized.onnx, tokenizer.json); the teacher is that very graph, so
the rows fit the vectors a server stores for its tools. TEXTS: tool texts as wayfind embeds them
(training/texts.ts over the same inputs). PAIRS: this folder's pairs (their requests). --shared: the
team's shared training folder, whose *.pairs.jsonl requests join the corpus once the held-out check
(training/lib/exclusion_sets.py: near-duplicates of held-out requests, BFCL questions, MCP catalog
tools) has dropped whatever it refuses. Writes DIR/vectors.bin (int8 rows, a float32 scale each) and
DIR/config.json (the teacher's sha256, the corpus, the fit).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from common import read_jsonl  # noqa: E402

MAX_TOKENS = 128
# The file's first bytes: what it is and its layout version.
MAGIC = b"WFSTATIC"
VERSION = 1


class Teacher:
    """The model folder's ONNX graph: mean-pooled, normalised vectors, as src/semantic/model.ts makes them."""

    def __init__(self, model_dir: Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.cls, self.sep, self.pad = (self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
        self.vocab_size = self.tokenizer.get_vocab_size()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        self.session = ort.InferenceSession(str(model_dir / "onnx" / "model_quantized.onnx"), options)
        self.inputs = [i.name for i in self.session.get_inputs()]

    def pieces(self, text: str) -> list[int]:
        """Word pieces without [CLS]/[SEP], cut as the server cuts them."""
        return self.tokenizer.encode(text[: MAX_TOKENS * 100], add_special_tokens=False).ids[: MAX_TOKENS - 2]

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return self.session.run(["last_hidden_state"], feeds)[0]

    def embed(self, texts: list[str], batch_tokens: int = 2048) -> np.ndarray:
        encoded = [[self.cls, *self.pieces(t), self.sep] for t in texts]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        out = np.zeros((len(texts), 0), np.float32)
        start = 0
        while start < len(order):
            rows = order[start : start + max(1, batch_tokens // len(encoded[order[start]]))]
            length = max(len(encoded[i]) for i in rows)
            ids = np.full((len(rows), length), self.pad, np.int64)
            mask = np.zeros((len(rows), length), np.int64)
            for r, i in enumerate(rows):
                ids[r, : len(encoded[i])] = encoded[i]
                mask[r, : len(encoded[i])] = 1
            pooled = (self.hidden(ids, mask) * mask[:, :, None]).sum(1)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), pooled.shape[1]), np.float32)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            start += len(rows)
        return out

    def piece_rows(self) -> np.ndarray:
        """The model's output at each word piece alone ([CLS] piece [SEP]), the piece's position."""
        ids = np.array([[self.cls, i, self.sep] for i in range(self.vocab_size)], np.int64)
        return np.concatenate(
            [self.hidden(ids[s : s + 1024], np.ones_like(ids[s : s + 1024]))[:, 1] for s in range(0, len(ids), 1024)]
        )


def shared_requests(shared: Path) -> tuple[list[str], dict[str, int]]:
    """Requests of the team's shared pairs that the held-out check lets through, and how many it dropped."""
    from exclusion_sets import Checker

    checker = Checker.load()
    kept: list[str] = []
    dropped: dict[str, int] = {}
    for path in sorted(shared.glob("*.pairs.jsonl")):
        for pair in read_jsonl(path):
            request = pair["request"]
            offences = [o["rule"] for t in pair.get("tools", []) for o in checker.tool_offences(t, "tool")]
            if checker.held.match(request):
                offences.append("held-out-request")
            if checker.bfcl_q.match(request):
                offences.append("bfcl-request")
            if offences:
                dropped[path.name] = dropped.get(path.name, 0) + 1
            else:
                kept.append(request)
    return kept, dropped


def allowed_tool_texts(texts_path: Path) -> tuple[list[str], int]:
    """Tool texts of TEXTS whose tool the held-out check lets through."""
    from exclusion_sets import Checker

    checker = Checker.load()
    kept, dropped = [], 0
    for tool in read_jsonl(texts_path):
        if checker.tool_offences(tool, "tool"):
            dropped += 1
        else:
            kept.append(tool["text"])
    return kept, dropped


def crops(texts: list[str], count: int, rnd: random.Random) -> list[str]:
    """Parts of the corpus's texts (sentences, clauses, runs of words): requests come in every length."""
    whole = set(texts)
    out: set[str] = set()
    for text in texts:
        for part in re.split(r"(?<=[.!?;])\s+|, (?:then|and then|also) ", text):
            part = part.strip()
            if len(part.split()) >= 3 and part not in whole:
                out.add(part)
        words = text.split()
        if len(words) > 5:
            a = rnd.randint(0, len(words) // 2)
            b = rnd.randint(a + 3, len(words))
            out.add(" ".join(words[a:b]))
    picked = sorted(out - whole)
    rnd.shuffle(picked)
    return picked[:count]


def train_rows(
    init: np.ndarray, pieces: list[list[int]], targets: np.ndarray, epochs: int, lr: float, seed: int
) -> tuple[np.ndarray, float]:
    """Rows whose normalised sums over each text's pieces come closest (cosine) to the teacher's vectors."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    rnd = random.Random(seed)
    rows = torch.nn.Parameter(torch.tensor(init, dtype=torch.float32))
    optimizer = torch.optim.Adam([rows], lr=lr)
    goal = torch.tensor(targets)
    batch = 256
    loss_mean = 0.0
    for epoch in range(epochs):
        started, order, total, steps = time.time(), list(range(len(pieces))), 0.0, 0
        rnd.shuffle(order)
        for s in range(0, len(order), batch):
            ids = order[s : s + batch]
            bags = [pieces[i] or [0] for i in ids]
            flat = torch.tensor([p for b in bags for p in b], dtype=torch.long)
            offsets = torch.tensor([0, *np.cumsum([len(b) for b in bags])[:-1]], dtype=torch.long)
            summed = torch.nn.functional.embedding_bag(flat, rows, offsets, mode="sum")
            loss = (1 - (torch.nn.functional.normalize(summed, dim=-1) * goal[ids]).sum(-1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, steps = total + loss.item(), steps + 1
        loss_mean = total / steps
        print(f"epoch {epoch + 1}/{epochs}: 1 - cosine {loss_mean:.4f} ({time.time() - started:.0f} s)", flush=True)
    return rows.detach().numpy(), loss_mean


def write_rows(rows: np.ndarray, path: Path) -> None:
    """MAGIC, version, rows, dims (uint32 LE), a float32 scale per row, then the int8 rows."""
    scale = np.abs(rows).max(axis=1) / 127
    scale[scale == 0] = 1
    codes = np.clip(np.round(rows / scale[:, None]), -127, 127).astype(np.int8)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(np.array([VERSION, rows.shape[0], rows.shape[1]], "<u4").tobytes())
        f.write(scale.astype("<f4").tobytes())
        f.write(codes.tobytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--texts", type=Path, required=True)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--shared", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--crops", type=int, default=60_000, help="parts of corpus texts added as texts of their own")
    args = parser.parse_args()
    rnd = random.Random(args.seed)

    requests = sorted({p["request"] for p in read_jsonl(args.pairs)})
    dropped: dict[str, int] = {}
    if args.shared is not None and args.shared.exists():
        more, dropped = shared_requests(args.shared)
        requests = sorted(set(requests) | set(more))
    tools, tools_dropped = allowed_tool_texts(args.texts)
    whole = requests + sorted(set(tools) - set(requests))
    corpus = whole + crops(whole, args.crops, rnd)
    print(
        f"corpus: {len(requests)} requests, {len(whole) - len(requests)} tool texts "
        f"({tools_dropped} tools refused), {len(corpus) - len(whole)} crops; shared pairs refused: {dropped}",
        flush=True,
    )

    teacher = Teacher(args.model)
    started = time.time()
    targets = teacher.embed(corpus)
    print(f"teacher vectors: {len(corpus)} texts in {time.time() - started:.0f} s", flush=True)
    pieces = [teacher.pieces(t) for t in corpus]
    counts = np.ones(teacher.vocab_size)
    for p in pieces[: len(requests)]:
        np.add.at(counts, p, 1)
    rarity = 1e-3 / (1e-3 + counts / counts.sum())
    alone = teacher.piece_rows()
    init = alone / np.linalg.norm(alone, axis=1, keepdims=True) * rarity[:, None]
    rows, loss = train_rows(init, pieces, targets, args.epochs, args.lr, args.seed)

    args.out.mkdir(parents=True, exist_ok=True)
    write_rows(rows, args.out / "vectors.bin")
    onnx = args.model / "onnx" / "model_quantized.onnx"
    config = {
        "format": "wayfind static tier: a normalised sum of word-piece rows (src/semantic/static-tier.ts)",
        "teacher_sha256": hashlib.sha256(onnx.read_bytes()).hexdigest(),
        "vocab_size": int(rows.shape[0]),
        "dims": int(rows.shape[1]),
        "corpus": {"requests": len(requests), "tool_texts": len(whole) - len(requests), "crops": len(corpus) - len(whole)},
        "fit": {"epochs": args.epochs, "lr": args.lr, "seed": args.seed, "one_minus_cosine": round(loss, 4)},
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"written: {args.out / 'vectors.bin'} ({(args.out / 'vectors.bin').stat().st_size} bytes), config.json")


if __name__ == "__main__":
    main()
