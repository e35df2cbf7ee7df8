"""Score combination, pure numpy (normalisation lives in :mod:`rerankit.normalize` and is
re-exported here).

Conventions (documented choices where the source designs were silent):

* **Constant scores** carry no information: ``min_max``, ``z_score`` and ``rank`` map them to
  0.5 each; ``softmax`` gives the uniform ``1/n``. A single score is a constant list.
* **Non-finite input** (NaN, inf) to these functions is a ``ValueError`` naming the position.
  Rerankers apply their own policy first: a non-finite score counts as that strategy's worst
  score, the document is flagged and the result carries a warning.
* **Weights** are keyed by strategy name. Naming an unknown strategy, leaving one out,
  negative or non-finite weights, or all-zero weights are errors. Weights are rescaled to sum
  to 1, so ``{"a": 2, "b": 1}`` means two thirds and one third. A strategy weighing 0 is
  left out, whatever the method: the result is that of the others alone (``m`` below counts
  only those above 0; MAX, MIN and COMB_MNZ's count skip it), and a reranker does not run it.
* **Ranks** are 1-based, best first, with tied scores sharing their average rank.

Methods and their output range for ``m`` strategies whose inputs lie in ``[0, 1]``:

=================  ===================================================  ==================
method             combined score                                        range
=================  ===================================================  ==================
WEIGHTED_AVERAGE   ``sum(w_i * s_i)``                                    ``[0, 1]``
COMB_SUM           ``m * sum(w_i * s_i)`` (the plain sum when equal w)   ``[0, m]``
COMB_MNZ           COMB_SUM times the number of strategies scoring > 0   ``[0, m*m]``
MAX / MIN          max / min of ``s_i`` (weights unused)                 ``[0, 1]``
RRF                ``sum(m * w_i / (k + rank_i))``, ``k`` = 60            ``(0, m/(k+1)]``
BORDA              ``sum(m * w_i * (n_i - rank_i + 1))``                 ``[0, m*n]``
=================  ===================================================  ==================

A strategy that did not score an entity (``combine_scores`` over dicts with different keys)
contributes nothing to the sums and is skipped by MAX and MIN.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from enum import Enum

import numpy as np

from .normalize import (
    NORMALIZATION_METHODS,
    normalize_scores,
    rank_positions,
)

__all__ = [
    "NORMALIZATION_METHODS",
    "ScoreCombinationMethod",
    "combine_scores",
    "contributions",
    "fuse",
    "normalize_rows",
    "normalize_scores",
    "rank_positions",
    "resolve_weights",
]


class ScoreCombinationMethod(str, Enum):
    """How several strategies' scores become one."""

    WEIGHTED_AVERAGE = "weighted_average"
    RRF = "rrf"
    MAX = "max"
    MIN = "min"
    COMB_SUM = "comb_sum"
    COMB_MNZ = "comb_mnz"
    BORDA = "borda"

    @classmethod
    def parse(cls, value: ScoreCombinationMethod | str) -> ScoreCombinationMethod:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower().replace("-", "_"))  # either spelling
        except ValueError:
            try:
                return cls[str(value).upper()]
            except KeyError:
                names = ", ".join(m.value for m in cls)
                raise ValueError(
                    f"unknown combination method {value!r}; use one of {names}"
                ) from None

    @property
    def uses_ranks(self) -> bool:
        return self in (ScoreCombinationMethod.RRF, ScoreCombinationMethod.BORDA)


def check_rrf_k(rrf_k: float) -> None:
    """Raise ``ValueError`` unless the RRF constant is >= 0."""
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")


def resolve_weights(names: Sequence[str], weights: Mapping[str, float] | None) -> np.ndarray:
    """Weights in strategy order, rescaled to sum to 1 (equal when ``weights`` is None)."""
    m = len(names)
    if m == 0:
        raise ValueError("at least one strategy is needed")
    if weights is None:
        return np.full(m, 1.0 / m)
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"weights must be a mapping of strategy name to weight, got {type(weights).__name__}"
        )
    unknown = [k for k in weights if k not in names]
    if unknown:
        raise ValueError(
            f"weights name unknown strategies {unknown}; the strategies are {list(names)}"
        )
    missing = [n for n in names if n not in weights]
    if missing:
        raise ValueError(f"weights must give every strategy a weight; missing {missing}")
    w = np.array([weights[n] for n in names], dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weights must be finite and >= 0, got {dict(weights)}")
    total = w.sum()
    if total <= 0:
        raise ValueError("weights must not all be zero")
    return w / total


def fuse(
    matrix: np.ndarray,
    method: ScoreCombinationMethod | str,
    weights: np.ndarray,
    *,
    rrf_k: float = 60.0,
    present: np.ndarray | None = None,
) -> np.ndarray:
    """Combine an ``(m strategies, n items)`` score matrix into ``n`` scores.

    ``weights`` must already sum to 1 (see :func:`resolve_weights`); ``present`` marks which
    strategy scored which item (all, when None).
    """
    method = ScoreCombinationMethod.parse(method)
    scores = np.asarray(matrix, dtype=np.float64)
    if present is None:
        present = np.ones(scores.shape, dtype=bool)
    w = np.asarray(weights, dtype=np.float64)
    if len(w) and not w.all():  # a strategy weighing 0 is left out, in every method
        scores, present, w = scores[w > 0], present[w > 0], w[w > 0]
    m, n = scores.shape
    w = w[:, None]
    check_rrf_k(rrf_k)

    if method in (ScoreCombinationMethod.MAX, ScoreCombinationMethod.MIN):
        fill = -np.inf if method is ScoreCombinationMethod.MAX else np.inf
        masked = np.where(present, scores, fill)
        out = masked.max(axis=0) if method is ScoreCombinationMethod.MAX else masked.min(axis=0)
        return np.where(present.any(axis=0), out, 0.0)

    if method.uses_ranks:
        ranks = np.zeros((m, n))
        sizes = present.sum(axis=1)
        for i in range(m):  # one pass per strategy, vectorised over items
            ranks[i, present[i]] = rank_positions(scores[i, present[i]])
        if method is ScoreCombinationMethod.RRF:
            contrib = 1.0 / (rrf_k + ranks)
        else:
            contrib = sizes[:, None] - ranks + 1.0
        return (m * w * np.where(present, contrib, 0.0)).sum(axis=0)

    weighted = (w * np.where(present, scores, 0.0)).sum(axis=0)
    if method is ScoreCombinationMethod.WEIGHTED_AVERAGE:
        return weighted
    comb_sum = m * weighted
    if method is ScoreCombinationMethod.COMB_SUM:
        return comb_sum
    hits = (present & (scores > 0)).sum(axis=0)
    return comb_sum * hits


def normalize_rows(
    matrix: np.ndarray, method: ScoreCombinationMethod | str, normalization: str | None
) -> np.ndarray:
    """Each strategy's raw scores (one row each) as the fusion reads them: normalised with
    ``normalization`` for score-based methods; as they are for rank-based ones (RRF, BORDA)
    or when ``normalization`` is None."""
    rows = np.asarray(matrix, dtype=np.float64)
    if normalization is None or ScoreCombinationMethod.parse(method).uses_ranks:
        return rows
    return np.vstack([normalize_scores(r, normalization) for r in rows]) if len(rows) else rows


def contributions(
    matrix: np.ndarray,
    method: ScoreCombinationMethod | str,
    weights: np.ndarray,
    *,
    rrf_k: float = 60.0,
) -> np.ndarray:
    """Each strategy's share of :func:`fuse`'s result, shape ``(m, n)``; the columns sum to
    the fused scores. MAX and MIN credit the whole score to the strategy that supplied it
    (the first one on ties); a strategy weighing 0 is left out (its row is 0)."""
    method = ScoreCombinationMethod.parse(method)
    scores = np.asarray(matrix, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if len(w) and not w.all():
        out = np.zeros_like(scores)
        out[w > 0] = contributions(scores[w > 0], method, w[w > 0], rrf_k=rrf_k)
        return out
    m, n = scores.shape
    w = w[:, None]
    if method in (ScoreCombinationMethod.MAX, ScoreCombinationMethod.MIN):
        pick = scores.argmax(axis=0) if method is ScoreCombinationMethod.MAX else scores.argmin(0)
        out = np.zeros_like(scores)
        out[pick, np.arange(n)] = scores[pick, np.arange(n)]
        return out
    if method.uses_ranks:
        ranks = np.vstack([rank_positions(row) for row in scores]) if m else scores
        per = 1.0 / (rrf_k + ranks) if method is ScoreCombinationMethod.RRF else n - ranks + 1.0
        return m * w * per
    weighted = w * scores
    if method is ScoreCombinationMethod.WEIGHTED_AVERAGE:
        return weighted
    if method is ScoreCombinationMethod.COMB_SUM:
        return m * weighted
    return m * weighted * (scores > 0).sum(axis=0)


def combine_scores(
    score_dicts: Sequence[Mapping[Hashable, float]] | Mapping[str, Mapping[Hashable, float]],
    method: ScoreCombinationMethod | str = ScoreCombinationMethod.WEIGHTED_AVERAGE,
    weights: Mapping[str, float] | None = None,
    *,
    rrf_k: float = 60.0,
) -> dict[Hashable, float]:
    """Combine ``{entity_id: score}`` dicts from several strategies into one dict.

    A list of dicts names its strategies ``strategy_0``, ``strategy_1``, ...; a mapping of
    ``{strategy_name: {entity_id: score}}`` uses its own names. Scores are combined as given
    (normalise first if they live on different scales). Entities keep first-seen order.
    """
    if isinstance(score_dicts, Mapping):
        names = [str(k) for k in score_dicts]
        dicts = list(score_dicts.values())
    else:
        dicts = list(score_dicts)
        names = [f"strategy_{i}" for i in range(len(dicts))]
    if not dicts:
        return {}
    ids = list(dict.fromkeys(k for d in dicts for k in d))
    position = {k: j for j, k in enumerate(ids)}
    matrix = np.zeros((len(dicts), len(ids)))
    present = np.zeros_like(matrix, dtype=bool)
    for i, d in enumerate(dicts):
        for k, v in d.items():
            matrix[i, position[k]] = v
            present[i, position[k]] = True
        bad = [k for k, v in d.items() if not np.isfinite(v)]
        if bad:
            raise ValueError(f"strategy {names[i]!r} has non-finite scores for {bad[:5]}")
    out = fuse(matrix, method, resolve_weights(names, weights), rrf_k=rrf_k, present=present)
    return {k: float(v) for k, v in zip(ids, out, strict=True)}
