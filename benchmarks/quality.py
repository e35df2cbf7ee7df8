"""Reranking quality: nDCG@10 of rerankit's rerankers on each query's BM25 top-100.

Datasets (from ``../shared/data``): SciFact and NFCorpus (BEIR test splits; the top-100 comes
from rerankit's own BM25 over the whole corpus, Anserini's k1=0.9, b=0.4) and TREC DL19
passage (the stored BM25 top-100 run). Rerankers:

* ``first stage``: the candidates' own order (no reranking);
* ``bm25``: BM25 over the 100 candidates (idf from the candidates), the library default;
* ``embedding``: cosine of the bundled all-MiniLM-L6-v2 embeddings;
* ``hybrid rrf`` / ``hybrid weighted``: both fused by reciprocal rank fusion (k=60) or by an
  equal-weight sum of min-max normalised scores.

``--tune`` chooses the hybrid's fusion instead: RRF or a weighted sum of min-max normalised
scores, with BM25 weights 0.2-0.5, scored on the *development* queries (SciFact train,
NFCorpus dev; DL19 has no development split), never on the test queries reported above.

Document embeddings are kept in an SQLite cache (``--cache``), so a second run skips the
encoding. Run: ``python benchmarks/quality.py [--datasets scifact nfcorpus dl19] [--tune]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from rerankit import BM25Scorer, EmbeddingScorer, ScorerReranker
from rerankit.eval import Dataset, load_beir, mean_ndcg
from rerankit.eval.first_stage import BM25Index
from rerankit.fusion import fuse, normalize_scores
from rerankit.pipeline import Reranker, hybrid_reranker

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = {
    "scifact": DATA / "beir" / "scifact",
    "nfcorpus": DATA / "beir" / "nfcorpus",
    "dl19": DATA / "msmarco" / "trec-dl-2019-bm25-top100",
}


def candidates(data: Dataset, depth: int) -> dict[str, list[str]]:
    if data.run is not None:
        return {qid: data.run.get(qid, [])[:depth] for qid in data.queries}
    ids = list(data.corpus)
    return BM25Index(ids, [data.text(i) for i in ids]).run(data.queries, depth)


DEV_SPLITS = {"scifact": "train", "nfcorpus": "dev"}
GRID = [(m, w) for m in ("rrf", "weighted_average") for w in (0.2, 0.3, 0.4, 0.5)]


def tune(embedding: EmbeddingScorer, depth: int) -> None:
    """nDCG@10 of each fusion of the grid on the development queries."""
    bm25 = BM25Scorer()
    table: dict[tuple[str, float], list[float]] = {key: [] for key in GRID}
    for name, split in DEV_SPLITS.items():
        data = load_beir(SETS[name], split)
        first = candidates(data, depth)
        pool = sorted({d for ids in first.values() for d in ids})
        embedding.encode_documents([data.text(d) for d in pool])
        runs: dict[tuple[str, float], dict[str, list[str]]] = {key: {} for key in GRID}
        for qid, ids in first.items():
            if not ids:
                continue
            texts = [data.text(d) for d in ids]
            raw = np.vstack(
                [
                    bm25.score_texts(data.queries[qid], texts),
                    embedding.score_texts(data.queries[qid], texts),
                ]
            )
            normalised = np.vstack([normalize_scores(row, "min_max") for row in raw])
            for method, w in GRID:
                matrix = raw if method == "rrf" else normalised
                fused = fuse(matrix, method, np.array([w, 1.0 - w]))
                runs[method, w][qid] = [ids[i] for i in np.argsort(-fused, kind="stable")]
        for key in GRID:
            table[key].append(mean_ndcg(runs[key], data.qrels))
        print(f"{name} {split}: {len(data.queries)} queries", flush=True)
    print("\nnDCG@10 x 100 on development queries (weights: bm25 / embedding)\n")
    print("| fusion | " + " | ".join(f"{n} {s}" for n, s in DEV_SPLITS.items()) + " | mean |")
    print("|---|" + "---:|" * (len(DEV_SPLITS) + 1))
    for (method, w), values in table.items():
        cells = " | ".join(f"{100 * v:.2f}" for v in values)
        mean = 100 * sum(values) / len(values)
        print(f"| {method} {w:.1f} / {1 - w:.1f} | {cells} | {mean:.2f} |")
    best = max(table, key=lambda k: sum(table[k]))
    print(f"\nbest: {best[0]} with bm25 weight {best[1]:.1f}")


def rerank_run(
    reranker: Reranker, data: Dataset, first: dict[str, list[str]]
) -> dict[str, list[str]]:
    run: dict[str, list[str]] = {}
    for qid, doc_ids in first.items():
        if not doc_ids:
            run[qid] = []  # the first stage found nothing for this query
            continue
        docs = [{"id": d, "text": data.text(d)} for d in doc_ids]
        run[qid] = [r.id for r in reranker.rerank(data.queries[qid], docs)]
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--cache", default=".cache/embeddings.sqlite")
    parser.add_argument("--tune", action="store_true", help="choose the hybrid's fusion on dev")
    args = parser.parse_args()
    missing = [n for n in args.datasets if not SETS[n].exists()]
    if missing:
        sys.exit(f"datasets not found under {DATA}: {', '.join(missing)}")

    embedding = EmbeddingScorer(cache_path=args.cache)
    if args.tune:
        tune(embedding, args.depth)
        return
    rerankers: dict[str, Reranker] = {
        "bm25": ScorerReranker(BM25Scorer()),
        "embedding": ScorerReranker(embedding),
        "hybrid (default)": hybrid_reranker(embedding),
        "hybrid rrf 0.5 / 0.5": hybrid_reranker(
            embedding, combination_method="rrf", weights={"bm25": 0.5, "embedding": 0.5}
        ),
        "hybrid weighted 0.5 / 0.5": hybrid_reranker(
            embedding,
            combination_method="weighted_average",
            weights={"bm25": 0.5, "embedding": 0.5},
        ),
    }
    table: dict[str, dict[str, float]] = {}
    for name in args.datasets:
        start = time.perf_counter()
        data = load_beir(SETS[name])
        first = candidates(data, args.depth)
        pool = sorted({d for ids in first.values() for d in ids})
        embedding.encode_documents([data.text(d) for d in pool])  # once, cached on disk
        table[name] = {"first stage": mean_ndcg(first, data.qrels)}
        for label, reranker in rerankers.items():
            table[name][label] = mean_ndcg(rerank_run(reranker, data, first), data.qrels)
        print(
            f"{name}: {len(data.queries)} queries, {len(pool)} distinct candidates, "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )

    labels = ["first stage", *rerankers]
    print(f"\nnDCG@10 x 100, reranking each query's BM25 top-{args.depth}\n")
    print("| reranker | " + " | ".join(args.datasets) + " | mean |")
    print("|---|" + "---:|" * (len(args.datasets) + 1))
    for label in labels:
        values = [100 * table[n][label] for n in args.datasets]
        cells = " | ".join(f"{v:.2f}" for v in values)
        print(f"| {label} | {cells} | {sum(values) / len(values):.2f} |")


if __name__ == "__main__":
    main()
