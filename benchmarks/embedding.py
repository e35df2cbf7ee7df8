"""EmbeddingScorer overhead and cache speed-up, on the bundled all-MiniLM-L6-v2.

From one run, on the same 1,000 documents (the first 1,000 TREC DL19 passages when
``../shared/data`` is present, else generated sentences):

* raw ``SentenceTransformer.encode`` of the documents and the query, with the scorer's
  batch size, against a rerank by ``EmbeddingScorer`` with a fresh (empty) cache, so it
  encodes everything too; rounds are interleaved and the medians compared (target: at most
  5% overhead);
* the same rerank repeated with the cache warm (target: at least 20x faster than the first).

Run: ``python benchmarks/embedding.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from rerankit import EmbeddingCache, EmbeddingScorer

DL19 = Path(__file__).resolve().parents[2] / "shared/data/msmarco/trec-dl-2019-bm25-top100"
QUERY = "how do vaccines train the immune system"


def documents(n: int) -> tuple[str, list[str]]:
    path = DL19 / "corpus.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as f:
            docs = [json.loads(line)["text"] for _, line in zip(range(n), f, strict=False)]
        return "DL19 passages", docs
    rng = np.random.default_rng(0)
    words = "immune vaccine cell virus market energy light river city model data".split()
    return "generated", [" ".join(rng.choice(words, size=60)) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    source, docs = documents(args.docs)
    base = EmbeddingScorer(batch_size=args.batch_size)
    model = base.model
    model.encode(docs[:64], batch_size=args.batch_size)  # warm-up
    words = sum(len(d.split()) for d in docs) / len(docs)
    print(f"{len(docs)} {source}, {words:.0f} words each; batch size {args.batch_size}")

    raw_times, ours_times, warm_times = [], [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        model.encode([QUERY], batch_size=args.batch_size, show_progress_bar=False)
        model.encode(docs, batch_size=args.batch_size, show_progress_bar=False)
        raw_times.append(time.perf_counter() - start)

        scorer = EmbeddingScorer(model, batch_size=args.batch_size, cache=EmbeddingCache())
        start = time.perf_counter()
        first = scorer.score_texts(QUERY, docs)
        ours_times.append(time.perf_counter() - start)

        start = time.perf_counter()
        again = scorer.score_texts(QUERY, docs)
        warm_times.append(time.perf_counter() - start)
        np.testing.assert_allclose(again, first, atol=1e-6)

    raw, ours, warm = (statistics.median(t) for t in (raw_times, ours_times, warm_times))
    print(f"  raw SentenceTransformer.encode (query + docs)  {raw * 1e3:9.1f} ms")
    print(
        f"  EmbeddingScorer, empty cache                    {ours * 1e3:9.1f} ms"
        f"   overhead {100 * (ours / raw - 1):+.1f}%"
    )
    print(
        f"  EmbeddingScorer, repeated (cache warm)          {warm * 1e3:9.1f} ms"
        f"   {ours / warm:.0f}x faster than the first"
    )
    print(f"  (medians of {args.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
