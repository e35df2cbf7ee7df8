"""Cross-encoder speed beside sentence-transformers, on a model with ms-marco-MiniLM-L6-v2's
exact shape (BERT, 6 layers, hidden 384, 12 heads; random weights: speed depends on shape,
not values) and the bundled MiniLM's real WordPiece tokenizer.

    python benchmarks/cross_encoder.py [--queries 8] [--rounds 3] [--data DL19_FOLDER]

Each query reranks its BM25 top 100 passages of TREC DL19. Variants run interleaved, query
by query in a shuffled order (the machine is shared and noisy), for several rounds:
sentence-transformers' ``CrossEncoder.predict`` on the folder (the reference), rerankit's
``CrossEncoderScorer``
on torch, on ONNX Runtime float32 and int8 (exported with ``rerankit export --kind
cross-encoder``). Prints documents per second (median over rounds), p50/p95 latency of a
100-candidate rerank, each variant's speed relative to sentence-transformers, and for int8
the order kept against float32 (Kendall tau per query, same top document).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DL19 = REPO.parent / "shared" / "data" / "msmarco" / "trec-dl-2019-bm25-top100"


def build_minilm_cross_encoder(folder: Path) -> Path:
    """A randomly initialised cross-encoder with ms-marco-MiniLM-L6-v2's config."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from rerankit.backends.bundled import bundled_model_path

    if (folder / "config.json").is_file():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def load_pairs(data: Path, queries: int) -> list[tuple[str, list[str]]]:
    """``queries`` DL19 queries (the first, by id) with their BM25 top 100 passages."""
    corpus = {}
    with (data / "corpus.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            corpus[row["_id"]] = row["text"]
    texts = {}
    with (data / "queries.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            texts[row["_id"]] = row["text"]
    ranked: dict[str, list[str]] = {}
    with (data / "bm25_top100.run.trec").open() as f:
        for line in f:
            qid, _, doc, *_ = line.split()
            ranked.setdefault(qid, []).append(doc)
    chosen = sorted(q for q in ranked if q in texts)[:queries]
    return [(texts[q], [corpus[d] for d in ranked[q][:100]]) for q in chosen]


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DL19)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        print(f"no DL19 folder at {args.data}: pass --data", file=sys.stderr)
        return 2
    import torch
    from sentence_transformers import CrossEncoder

    from rerankit import CrossEncoderScorer, Document
    from rerankit.backends.onnx import export

    torch.set_num_threads(2)
    work = Path(tempfile.mkdtemp(prefix="rerankit-ce-bench-"))
    folder = build_minilm_cross_encoder(work / "minilm-ce")
    onnx_folder = export(
        str(folder), work / "minilm-ce-onnx", kind="cross_encoder", quantize="int8"
    )
    pairs = load_pairs(args.data, args.queries)
    docs = [(q, [Document(t) for t in ts]) for q, ts in pairs]
    n_docs = sum(len(ts) for _, ts in pairs)

    st = CrossEncoder(str(folder), device="cpu", max_length=512)
    variants = {
        "sentence-transformers CrossEncoder.predict": None,
        "rerankit CrossEncoderScorer, torch": CrossEncoderScorer(
            str(folder), device="cpu", batch_size=args.batch_size
        ),
        "rerankit CrossEncoderScorer, ONNX fp32": CrossEncoderScorer(
            str(onnx_folder), backend="onnx", batch_size=args.batch_size
        ),
        "rerankit CrossEncoderScorer, ONNX int8": CrossEncoderScorer(
            str(onnx_folder), backend="onnx", quantize="int8", batch_size=args.batch_size
        ),
    }

    def score(name: str, index: int) -> np.ndarray:
        scorer = variants[name]
        query, texts = pairs[index]
        if scorer is None:
            out = st.predict(
                [(query, x) for x in texts],
                batch_size=args.batch_size,
                show_progress_bar=False,
                activation_fn=torch.nn.Identity(),
            )
        else:
            out = asyncio.run(scorer.score(query, docs[index][1])).values
        return np.asarray(out, dtype=np.float64)

    for name in variants:  # warm up: load each model, one query
        score(name, 0)
    seconds: dict[str, list[float]] = {n: [] for n in variants}  # per round
    lats: dict[str, list[float]] = {n: [] for n in variants}
    last: dict[str, list[np.ndarray]] = {n: [np.zeros(0)] * len(pairs) for n in variants}
    rng = random.Random(0)
    for r in range(args.rounds):
        spent = dict.fromkeys(variants, 0.0)
        for index in range(len(pairs)):  # every variant on each query, in a shuffled order
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                t = time.perf_counter()
                last[name][index] = score(name, index)
                took = time.perf_counter() - t
                spent[name] += took
                lats[name].append(took)
        for name in variants:
            seconds[name].append(spent[name])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rates = {n: [n_docs / s for s in seconds[n]] for n in variants}

    reference = statistics.median(rates["sentence-transformers CrossEncoder.predict"])
    print(
        f"{len(pairs)} DL19 queries x 100 BM25 passages, {args.rounds} interleaved rounds, "
        f"2 threads, batch {args.batch_size}; model: ms-marco-MiniLM-L6-v2's shape\n"
    )
    print("| variant | docs/s | vs sentence-transformers | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for name in variants:
        rate = statistics.median(rates[name])
        p50 = 1000 * float(np.percentile(lats[name], 50))
        p95 = 1000 * float(np.percentile(lats[name], 95))
        print(f"| {name} | {rate:.0f} | {rate / reference:.2f}x | {p50:.0f} | {p95:.0f} |")
    fp32 = last["rerankit CrossEncoderScorer, ONNX fp32"]
    int8 = last["rerankit CrossEncoderScorer, ONNX int8"]
    torch_out = last["rerankit CrossEncoderScorer, torch"]
    st_out = last["sentence-transformers CrossEncoder.predict"]
    taus = [kendall_tau(a, b) for a, b in zip(fp32, int8, strict=True)]
    same_top = np.mean([int(np.argmax(a) == np.argmax(b)) for a, b in zip(fp32, int8, strict=True)])
    gap = max(float(np.max(np.abs(a - b))) for a, b in zip(st_out, torch_out, strict=True))
    print(
        f"\nint8 against fp32: Kendall tau min {min(taus):.3f}, median "
        f"{statistics.median(taus):.3f}; same top document on {100 * same_top:.0f}% of "
        f"queries. rerankit torch against sentence-transformers: max |logit difference| "
        f"{gap:.2e}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
