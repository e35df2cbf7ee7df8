"""What the default costs on documents it has not seen before, beside what it costs on
documents whose vectors it keeps, and beside a cross-encoder of MiniLM-L6's shape.

The default ``hybrid`` encodes each document (whole and by passages) once and keeps the
vectors (in memory; with ``RERANKIT_EMBEDDING_CACHE`` or the service's cache, across runs
and replicas), so a corpus it has seen is reranked without the model; a cross-encoder reads
every (query, document) pair each time. On TREC DL19's BM25 top 100 (short web passages)
and SciFact's training queries over BM25 of the corpus (abstracts, longer), one query at a
time, interleaved in a shuffled order per query for several rounds, all on ONNX Runtime
float32 on the CPU (the default's backend when ``onnx`` is installed):

- ``hybrid, first sight``: the default with no cache, so every document is encoded;
- ``hybrid, seen before``: the default with its in-memory cache, after one pass over the
  same candidates (the cost of the model left out: the case the README's table times);
- ``cross-encoder (MiniLM-L6 shape)``: random weights of ms-marco-MiniLM-L6-v2's shape
  (speed depends on shape, not values; see models.py), exported to ONNX.

Prints milliseconds per 100-candidate rerank (median and p95 over queries and rounds) and
each variant's time over the first-sight hybrid's.

Run: ``python -m benchmarks.speed.first_sight [--data dl19,scifact] [--queries 4] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

import rerankit
from benchmarks.common import interleave, load_queries, timed
from benchmarks.speed.models import build
from rerankit.backends.onnx import export
from rerankit.rerankers import HybridReranker
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

FIRST = "hybrid, first sight"


def scores_of(reranker: object) -> object:
    """``reranker`` as ``interleave`` times it: one ``rerankit.rerank`` call, its scores in
    the input order."""

    def run(query: str, texts: list[str]) -> list[float]:
        result = rerankit.rerank(query, texts, reranker=reranker)
        by_index = {r.index: r.score for r in result}
        return [by_index[i] for i in range(len(texts))]

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="dl19,scifact")
    parser.add_argument("--queries", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.environ.pop("RERANKIT_EMBEDDING_CACHE", None)  # the first sight must not read one
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in args.data.split(","):
            pairs = load_queries(name, args.queries)
            texts = [t for _, ts in pairs for t in ts]
            folder = build("minilm", work / f"minilm-{name}", texts[:2000])
            onnx = export(str(folder), work / f"minilm-{name}-onnx", kind="cross_encoder")
            cold = HybridReranker(embedding=EmbeddingScorer(backend="onnx", cache=False))
            warm = HybridReranker(embedding=EmbeddingScorer(backend="onnx"))
            for query, candidates in pairs:  # every candidate seen once before the timing
                rerankit.rerank(query, candidates, reranker=warm)
            variants = {
                FIRST: timed(scores_of(cold)),
                "hybrid, seen before": timed(scores_of(warm)),
                "cross-encoder (MiniLM-L6 shape)": timed(
                    scores_of(CrossEncoderScorer(str(onnx), backend="onnx"))
                ),
            }
            print(f"{name}...", file=sys.stderr, flush=True)
            _, lats, last = interleave(variants, pairs, args.rounds)
            same = all(
                np.allclose(a, b, atol=1e-5)
                for a, b in zip(last[FIRST], last["hybrid, seen before"], strict=True)
            )
            words = statistics.mean(len(t.split()) for t in texts)
            print(
                f"\n{name}: {len(pairs)} queries x 100 candidates (mean {words:.0f} words), "
                f"{args.rounds} interleaved rounds, ONNX float32, CPU\n"
            )
            print("| variant | p50 ms | p95 ms | vs first sight |")
            print("|---|---:|---:|---:|")
            base = statistics.median(lats[FIRST])
            for variant, taken in lats.items():
                p50, p95 = (1000 * float(np.percentile(taken, q)) for q in (50, 95))
                ratio = statistics.median(taken) / base
                print(f"| {variant} | {p50:.0f} | {p95:.0f} | {ratio:.2f}x |")
            print(f"\nfirst sight and seen before give the same scores: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
