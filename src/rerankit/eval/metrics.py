"""Ranking metrics with trec_eval's conventions (linear gains, log2 discount; relevance >= 1
counts as relevant), and the paired Student's t-test ``rerankit eval`` reports. Pure Python
and numpy: no numba to compile, so the first evaluation in a process starts at once."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError

__all__ = [
    "METRICS",
    "average_precision",
    "mean_ndcg",
    "metric_value",
    "ndcg_at_k",
    "paired_standard_error",
    "paired_t_test",
    "parse_metrics",
    "precision_at_k",
    "ranked_ndcg",
    "recall_at_k",
    "reciprocal_rank",
    "student_t_two_sided",
]


def _check_cut_off(k: int) -> None:
    """A cut-off below 1 would measure nothing: an error, not a score of 0."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranking: gain = the judged relevance (unjudged = 0), discount
    ``1 / log2(rank + 1)``, ideal = the judged documents sorted by relevance. 0 when the
    query has no relevant document."""
    _check_cut_off(k)
    dcg = sum(
        judged.get(doc, 0) / math.log2(rank + 2)
        for rank, doc in enumerate(ranking[:k])
        if judged.get(doc, 0) > 0
    )
    ideal_gains = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal_gains))
    return dcg / idcg if idcg > 0 else 0.0


def reciprocal_rank(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """1 / the rank of the first relevant document (judged >= 1) in the top ``k``; 0 when
    none is there."""
    _check_cut_off(k)
    for rank, doc in enumerate(ranking[:k], start=1):
        if judged.get(doc, 0) >= 1:
            return 1.0 / rank
    return 0.0


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """The share of the relevant documents (judged >= 1) found in the top ``k``; 0 when the
    query has none."""
    _check_cut_off(k)
    relevant = {doc for doc, grade in judged.items() if grade >= 1}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def precision_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """The share of the top ``k`` places holding a relevant document (judged >= 1), over
    ``k`` places even when fewer are ranked (trec_eval's ``P_k``)."""
    _check_cut_off(k)
    return sum(judged.get(doc, 0) >= 1 for doc in ranking[:k]) / k


def average_precision(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Average precision of the top ``k``: the precision at each relevant document ranked
    there, summed over the number of relevant documents judged (trec_eval's ``map_cut_k``);
    0 when the query has none."""
    _check_cut_off(k)
    relevant = sum(grade >= 1 for grade in judged.values())
    found, total = 0, 0.0
    for rank, doc in enumerate(ranking[:k], start=1):
        if judged.get(doc, 0) >= 1:
            found += 1
            total += found / rank
    return total / relevant if relevant else 0.0


#: the metrics ``rerankit eval --metrics`` takes, by the name before ``@K``
METRICS: dict[str, Callable[[Sequence[str], Mapping[str, int], int], float]] = {
    "ndcg": ndcg_at_k,
    "mrr": reciprocal_rank,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "map": average_precision,
}


def parse_metrics(spec: str | Sequence[str]) -> list[str]:
    """``NAME@K`` metrics, comma-separated or a list, as canonical names (lower case, each
    once, in the order given): NAME one of :data:`METRICS`, K a positive cut-off. A mistake
    is an :class:`~rerankit.InputError` naming it and what is taken."""
    given = spec.split(",") if isinstance(spec, str) else list(spec)
    taken = f"NAME@K, NAME one of {', '.join(METRICS)} (ndcg@5,precision@5,map@100)"
    names: list[str] = []
    for item in (str(g).strip() for g in given):
        if not item:
            continue
        name, at, cut = item.lower().partition("@")
        if name not in METRICS:
            raise InputError(f"unknown metric {item!r}: give {taken}")
        if not at:
            raise InputError(f"metric {item!r} needs a cut-off: {name}@10, say")
        if not cut.isdigit() or int(cut) < 1:
            raise InputError(f"metric {item!r}: the cut-off must be a positive integer")
        canonical = f"{name}@{int(cut)}"
        if canonical not in names:
            names.append(canonical)
    if not names:
        raise InputError(f"no metric given: give {taken}")
    return names


def metric_value(metric: str, ranking: Sequence[str], judged: Mapping[str, int]) -> float:
    """One query's ``metric`` (a name :func:`parse_metrics` returns) of ``ranking``."""
    name, _, cut = metric.partition("@")
    return METRICS[name](ranking, judged, int(cut))


def mean_ndcg(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int = 10
) -> float:
    """Mean nDCG@k over every query of ``qrels``, as :func:`rerankit.evaluate`'s table
    averages it: a query with no relevant document (every grade 0) scores 0, and so does
    a query missing from ``run`` (trec_eval with ``-c``)."""
    scored = [ndcg_at_k(run.get(qid, ()), judged, k) for qid, judged in qrels.items()]
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


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _regularized_beta(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, given x and y = 1 - x (each
    computed directly, so neither loses its digits near 1)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, y) / b


def student_t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t distribution with ``df`` degrees of freedom."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 0.0
    return min(1.0, _regularized_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t)))


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sided p-value of a paired Student's t-test of ``a`` against ``b`` (per-query
    scores of two runs, in the same query order); None when it is undefined: fewer than two
    pairs, or every difference zero. Differences all equal and not zero give 0."""
    if len(a) != len(b):
        raise ValueError(f"paired scores must have the same length, got {len(a)} and {len(b)}")
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(diffs) < 2:
        return None
    if np.all(diffs == diffs[0]):  # no spread (not even a rounding error's)
        return None if diffs[0] == 0.0 else 0.0
    se = paired_standard_error(diffs)
    return student_t_two_sided(float(diffs.mean()) / se, len(diffs) - 1)
