"""Ranking metrics with trec_eval's conventions (linear gains, log2 discount)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["mean_ndcg", "ndcg_at_k", "paired_standard_error", "ranked_ndcg"]


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranking: gain = the judged relevance (unjudged = 0), discount
    ``1 / log2(rank + 1)``, ideal = the judged documents sorted by relevance. 0 when the
    query has no relevant document."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dcg = sum(
        judged.get(doc, 0) / math.log2(rank + 2)
        for rank, doc in enumerate(ranking[:k])
        if judged.get(doc, 0) > 0
    )
    ideal_gains = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal_gains))
    return dcg / idcg if idcg > 0 else 0.0


def mean_ndcg(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int = 10
) -> float:
    """Mean nDCG@k over the queries of ``qrels`` that have a relevant document (a query
    missing from ``run`` scores 0, as in trec_eval with ``-c``)."""
    scored = [
        ndcg_at_k(run.get(qid, ()), judged, k)
        for qid, judged in qrels.items()
        if any(g > 0 for g in judged.values())
    ]
    return sum(scored) / len(scored) if scored else 0.0


def ranked_ndcg(ids: Sequence[str], scores: np.ndarray, judged: Mapping[str, int]) -> float:
    """nDCG@10 of ``ids`` ordered by ``scores`` (ties keep the given order)."""

    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return ndcg_at_k([ids[i] for i in order], judged, 10)


def paired_standard_error(diffs: Sequence[float]) -> float | None:
    """The standard error of the mean of paired per-query differences (their sample
    standard deviation over the square root of their number); None under two."""
    if len(diffs) < 2:
        return None
    return float(np.std(np.asarray(diffs, dtype=float), ddof=1) / math.sqrt(len(diffs)))
