"""Fine-tunes the sentence-embedding model for tool retrieval: a request and the text of the tool that
serves it are pulled together, other tools pushed apart (MultipleNegativesRankingLoss: every other tool
of the batch is a negative, plus the pair's hard negative — another tool of the same service — where
the source gives one).

Usage:
  python training/train.py --base DIR --pairs PAIRS --texts TEXTS --out DIR [--epochs N] [--lr X]
      [--batch N] [--max-per-tool N] [--compose X] [--interpolate X] [--dev-out FILE] [--seed N]

PAIRS: the training pairs (JSONL, gzipped or not; training/data/README.md). TEXTS: the text wayfind
embeds each tool as (training/texts.ts). Requests of a pair are held out as a dev set (a share of each
source, by request, never in training) and written to --dev-out, so candidates are compared on data
the model never saw — the odd halves of the public sets and the team's requests stay the report.

Requests for several tools are rare in the sources, and a request of two intents must sit near both
tools, not between them: --compose adds that many (as a share of the kept pairs) requests made of two
training requests of different tools of one source, each paired with both tools.

The saved weights are --interpolate of the way from the base model's to the fine-tuned ones (WiSE-FT,
Wortsman et al. 2022): fine-tuning on a few sources pulls the model toward their catalogs and wording,
and the midpoint keeps most of the gain on them while keeping the general model's sense of requests
unlike them — the MCP catalogs and requests wayfind is judged on are by design nothing it trains on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from collections import defaultdict
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


JOINERS = (" and ", ". Also, ", "; then ", ", and after that ", ". ")


def compose_two_intents(kept: list[dict], count: int) -> list[tuple[str, dict]]:
    """`count` (request, tool) couples: two single-tool requests of one source for different tools,
    joined into one request, paired with each of the two tools."""
    singles: dict[str, list[dict]] = defaultdict(list)
    for p in kept:
        # Short enough that two of them fit the model's sequence length.
        if p.get("n_gold", 1) == 1 and len(p["request"]) <= 110:
            singles[p["source"]].append(p)
    pools = [pool for pool in singles.values() if len({q["tool"]["name"] for q in pool}) > 1]
    couples: list[tuple[str, dict]] = []
    while pools and len(couples) < count:
        pool = random.choice(pools)
        a, b = random.sample(pool, 2)
        if a["tool"]["name"] == b["tool"]["name"]:
            continue
        request = a["request"].rstrip(" .?!") + random.choice(JOINERS) + b["request"]
        couples += [(request, a["tool"]), (request, b["tool"])]
    return couples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="sentence-transformers folder to start from")
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--texts", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--max-per-tool", type=int, default=40, help="pairs kept per tool (the rest are dropped)")
    parser.add_argument("--compose", type=float, default=0.0, help="two-intent requests to add, a share of the kept pairs")
    parser.add_argument(
        "--interpolate", type=float, default=1.0, help="share of the way from the base weights to the tuned ones"
    )
    parser.add_argument("--dev-share", type=float, default=0.08, help="share of each source's requests held out")
    parser.add_argument("--dev-out", type=Path)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers, MultiDatasetBatchSamplers

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    texts = {(t["name"], t["description"]): t["text"] for t in read_jsonl(args.texts)}
    text_of = lambda tool: texts[(tool["name"], tool["description"])]
    pairs = read_jsonl(args.pairs)

    # Held out by request, a share of each source: never trained on.
    by_source: dict[str, list[str]] = defaultdict(list)
    for p in pairs:
        if p["request"] not in by_source[p["source"]]:
            by_source[p["source"]].append(p["request"])
    dev_requests: set[str] = set()
    for requests in by_source.values():
        random.shuffle(requests)
        dev_requests.update(requests[: max(1, int(len(requests) * args.dev_share))])
    train_pairs = [p for p in pairs if p["request"] not in dev_requests]
    dev_pairs = [p for p in pairs if p["request"] in dev_requests]
    if args.dev_out:
        args.dev_out.write_text("".join(json.dumps(p) + "\n" for p in dev_pairs))

    # At most so many pairs per tool (one MetaTool plugin alone has hundreds), drawn at random.
    random.shuffle(train_pairs)
    per_tool: dict[tuple[str, str], int] = defaultdict(int)
    kept = []
    for p in train_pairs:
        key = (p["tool"]["name"], p["tool"]["description"])
        if per_tool[key] < args.max_per_tool:
            per_tool[key] += 1
            kept.append(p)

    composed = compose_two_intents(kept, int(len(kept) * args.compose))
    triplets = {"anchor": [], "positive": [], "negative": []}
    couples = {"anchor": [], "positive": []}
    for p in kept:
        negatives = p.get("negatives") or []
        if negatives:
            triplets["anchor"].append(p["request"])
            triplets["positive"].append(text_of(p["tool"]))
            triplets["negative"].append(text_of(random.choice(negatives[:3])))
        else:
            couples["anchor"].append(p["request"])
            couples["positive"].append(text_of(p["tool"]))
    for request, tool in composed:
        couples["anchor"].append(request)
        couples["positive"].append(text_of(tool))
    datasets = {"triplets": Dataset.from_dict(triplets), "pairs": Dataset.from_dict(couples)}
    print(
        f"pairs {len(pairs)}: train {len(kept)} ({len(triplets['anchor'])} with a hard negative), "
        f"two-intent {len(composed)}, dev {len(dev_pairs)} ({len(dev_requests)} requests), dropped past the per-tool cap "
        f"{len(train_pairs) - len(kept)}",
        flush=True,
    )

    model = SentenceTransformer(str(args.base), device="cpu")
    model.max_seq_length = args.max_seq_length
    loss = MultipleNegativesRankingLoss(model)
    training_args = SentenceTransformerTrainingArguments(
        output_dir=str(args.out / "checkpoints"),
        num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch,
        learning_rate=args.lr,
        warmup_ratio=0.1,
        weight_decay=0.01,
        # A batch never holds a text twice: a request of several tools, or a tool asked by several
        # requests, would otherwise count as its own negative.
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,
        save_strategy="no",
        logging_steps=50,
        seed=args.seed,
        use_cpu=True,
        report_to="none",
        dataloader_num_workers=0,
    )
    trainer = SentenceTransformerTrainer(model=model, args=training_args, train_dataset=datasets, loss=loss)
    started = time.time()
    trainer.train()
    print(f"trained in {(time.time() - started) / 60:.1f} min", flush=True)
    if args.interpolate != 1.0:
        interpolate(model, SentenceTransformer(str(args.base), device="cpu"), args.interpolate)
    model.save(str(args.out / "model"))


def interpolate(tuned, base, share: float) -> None:
    """Moves `tuned`'s weights to `share` of the way from `base`'s to its own."""
    start = base.state_dict()
    tuned.load_state_dict(
        {k: (1 - share) * start[k] + share * v if v.is_floating_point() else v for k, v in tuned.state_dict().items()}
    )


if __name__ == "__main__":
    main()
