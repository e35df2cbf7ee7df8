"""Dense pseudo-relevance feedback as a second stage, chosen on development queries only.

Decided: no default pipeline uses dense pseudo-relevance feedback (it did not beat the
hybrid alone on development queries); ``prf`` stays a scorer and an LTR feature. Reported
in docs/evaluation.md.

Stage 1 is the default ``hybrid`` given the BM25 first-stage scores. Stage 2 fuses (min-max,
weighted) the stage-1 order (``position``) with ``prf``: the cosine to the query's MiniLM
vector plus ``alpha`` times the mean vector of stage 1's ``top`` documents. Every (top,
alpha, weight) of the grid is scored on SciFact train and NFCorpus dev, and so is the hybrid
alone; the best mean is the choice. The test splits are then scored once, for the hybrid
alone and the best PRF setting (marked when development data did not choose it).

Run: ``python -m benchmarks.experiments.prf_dev`` (document embeddings cached in
``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from benchmarks.common import BEIR as DATA
from benchmarks.common import use_embedding_cache

DEV = {"SciFact train": ("scifact", "train"), "NFCorpus dev": ("nfcorpus", "dev")}
TEST = {"SciFact test": ("scifact", "test"), "NFCorpus test": ("nfcorpus", "test")}
TOPS, ALPHAS, WEIGHTS = (3, 5), (0.25, 0.5, 1.0), (0.5, 0.6, 0.7, 0.8, 0.9)


def stage_one(name: str, split: str):
    """Per query: ids in the hybrid's order, the query vector, the documents' vectors."""
    from rerankit import load
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import candidate_documents, first_stage

    data = load_beir(DATA / name, split)
    hybrid = load("hybrid")
    embedding = hybrid.embedding
    out = {}
    for qid, ranked in first_stage(data, "bm25", 100).items():
        if not ranked:
            continue
        result = hybrid.rerank(data.queries[qid], candidate_documents(data, ranked))
        ids = [r.id for r in result]
        vectors = np.asarray(embedding.encode_documents([r.text for r in result]), np.float64)
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        q = np.asarray(embedding.encode_queries([data.queries[qid]])[0], np.float64)
        out[qid] = (ids, q / np.linalg.norm(q), vectors)
    return data, out


def fused(ids, q, vectors, top, alpha, weight):
    from rerankit.scorers.prf import feedback_cosines

    prf = feedback_cosines(q, vectors, np.arange(min(top, len(ids))), alpha)
    n = len(ids)
    position = 1.0 - np.arange(n) / n
    span = prf.max() - prf.min()
    prf_norm = (prf - prf.min()) / span if span > 0 else np.full(n, 0.5)
    pos_norm = (position - position.min()) / (position.max() - position.min() or 1.0)
    score = weight * pos_norm + (1 - weight) * prf_norm
    return [ids[i] for i in np.argsort(-score, kind="stable")]


def ndcg(rows, qrels, params=None) -> float:
    from rerankit.eval.metrics import mean_ndcg

    run = {
        q: (ids if params is None else fused(ids, qv, vec, *params))
        for q, (ids, qv, vec) in rows.items()
    }
    return 100 * mean_ndcg(run, qrels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    use_embedding_cache()
    dev = {label: stage_one(*where) for label, where in DEV.items()}
    alone = [ndcg(rows, data.qrels) for data, rows in dev.values()]
    print(f"hybrid alone: {float(np.mean(alone)):.2f}  " + ", ".join(f"{c:.2f}" for c in alone))
    table = []
    for params in itertools.product(TOPS, ALPHAS, WEIGHTS):
        cells = [ndcg(rows, data.qrels, params) for data, rows in dev.values()]
        table.append((float(np.mean(cells)), params, cells))
    table.sort(key=lambda t: -t[0])
    print("\nbest development settings (top, alpha, weight of the stage-1 order):")
    for mean, params, cells in table[:5]:
        print(f"  {mean:.2f}  {params}  " + ", ".join(f"{c:.2f}" for c in cells))
    best = table[0][1]
    chosen = table[0][0] > float(np.mean(alone))
    verdict = "chosen" if chosen else "NOT chosen: the hybrid alone is better on development data"
    print(f"\nbest PRF: top={best[0]}, alpha={best[1]}, weight={best[2]} ({verdict})")
    print("test splits, once:")
    for label, where in TEST.items():
        data, rows = stage_one(*where)
        print(
            f"  {label}: hybrid {ndcg(rows, data.qrels):.2f}, "
            f"hybrid + prf {ndcg(rows, data.qrels, best):.2f}",
            flush=True,
        )
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
