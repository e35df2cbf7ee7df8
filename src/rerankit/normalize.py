"""Score normalisation: the one place scores are mapped into [0, 1].

One rule for constant scores everywhere: they carry no information, so ``min_max``,
``z_score`` and ``rank`` map them to 0.5 each and ``softmax`` gives the uniform ``1/n``; a
single score is a constant list. Non-finite input is a ``ValueError`` naming the positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "NORMALIZATION_METHODS",
    "SCORE_SCALES",
    "THRESHOLD_NOTES",
    "check_normalization_method",
    "check_score_scale",
    "normalize_scores",
    "rank_positions",
    "ranked_unit_scores",
    "scale_to_unit",
    "served_scales",
    "unit_scale",
    "unit_scores",
]

NORMALIZATION_METHODS = ("min_max", "z_score", "softmax", "rank")

#: What a reranker's or scorer's scores mean. Every scale but ``relative`` depends only on
#: the (query, document) pair, so scores are comparable across requests:
#:
#: * ``probability``: an estimate of P(relevant) in [0, 1] (a calibrated fusion);
#: * ``unit``: a fixed-range score in [0, 1] that is not a probability (coverage, an LLM's
#:   normalised judgment, a cross-encoder after its sigmoid);
#: * ``cosine``: a cosine similarity in [-1, 1];
#: * ``grade10``: a judgment on a 0-10 scale (an LLM's pointwise grade);
#: * ``logit``: an unbounded score whose sigmoid is the model's probability (a
#:   cross-encoder's raw output);
#: * ``relative``: meaningful only next to the other documents of the same request (BM25
#:   with the candidates' own statistics, min-max fusion, rank fusion, a caller's
#:   first-stage score of unknown scale).
SCORE_SCALES = ("probability", "unit", "cosine", "grade10", "logit", "relative")

#: what a threshold means on a scale that is no probability (the
#: min_score rule's warning; ``{t}`` is the threshold)
THRESHOLD_NOTES = {
    "relative": (
        "the scores are relative (comparable only within this result: BM25 over the "
        "candidates, min-max or rank fusion, a retriever's score), so a threshold of {t:g} "
        "keeps a different share of each query's documents and is no probability; cut by "
        "rank (top_k), or threshold a reranker whose score_scale is 'probability'"
    ),
    "logit": (
        "the scores are logits (unbounded; the model's probability is their sigmoid), so "
        "{t:g} is no probability: the logit of a probability p is log(p / (1 - p)), 0 for "
        "0.5"
    ),
}


def _as_finite_array(scores: Sequence[float] | np.ndarray, what: str = "scores") -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{what} contain non-finite values at positions {bad[:10].tolist()}")
    return arr


def check_normalization_method(method: str) -> str:
    """``method`` as :data:`NORMALIZATION_METHODS` spells it (``min-max`` is ``min_max``:
    either spelling works); ``ValueError`` for any other."""
    spelled = method.replace("-", "_") if isinstance(method, str) else method
    if spelled not in NORMALIZATION_METHODS:
        raise ValueError(
            f"unknown normalization method {method!r}; "
            f"use one of {', '.join(NORMALIZATION_METHODS)}"
        )
    return spelled


def rank_positions(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks, highest score first; ties share their average rank."""
    arr = np.asarray(scores, dtype=np.float64)
    n = arr.shape[0]
    if n == 0:
        return np.zeros(0)
    order = np.argsort(-arr, kind="stable")
    ordinal = np.empty(n, dtype=np.float64)
    ordinal[order] = np.arange(1, n + 1)
    # Average the ordinal ranks inside each group of equal scores.
    _, group, counts = np.unique(arr, return_inverse=True, return_counts=True)
    sums = np.bincount(group, weights=ordinal)
    return sums[group] / counts[group]


def normalize_scores(scores: Sequence[float] | np.ndarray, method: str = "min_max") -> np.ndarray:
    """Map finite scores into [0, 1], keeping their order.

    ``min_max``: linear, worst 0 and best 1. ``z_score``: standard score then logistic
    sigmoid. ``softmax``: ``exp`` normalised to sum 1. ``rank``: ``(n - rank) / (n - 1)``.
    """
    arr = _as_finite_array(scores)
    method = check_normalization_method(method)
    n = arr.shape[0]
    if n == 0:
        return arr
    if method == "softmax":
        e = np.exp(arr - arr.max())
        return e / e.sum()
    lo, hi = arr.min(), arr.max()
    if hi == lo:
        return np.full(n, 0.5)
    if method == "min_max":
        out = (arr - lo) / (hi - lo)
    elif method == "z_score":
        std = arr.std()
        if not std > 0:  # spread too small to measure in float64
            return np.full(n, 0.5)
        out = 1.0 / (1.0 + np.exp(-(arr - arr.mean()) / std))
    else:  # rank
        out = (n - rank_positions(arr)) / (n - 1)
    return np.clip(out, 0.0, 1.0)


def check_score_scale(scale: str) -> str:
    """``scale`` if it is one of :data:`SCORE_SCALES`, else ``ValueError``."""
    if scale not in SCORE_SCALES:
        raise ValueError(f"unknown score scale {scale!r}; use one of {', '.join(SCORE_SCALES)}")
    return scale


def scale_to_unit(scores: Sequence[float] | np.ndarray, scale: str) -> np.ndarray:
    """Scores in [0, 1]: by a fixed map of their ``scale`` (so each depends only on its own
    raw score) for every scale but ``relative``: probabilities and unit scores as they are
    (clipped), cosines below 0 as 0, 0-10 grades divided by 10, logits through the sigmoid.
    ``relative`` scores are min-max normalised over the list (best 1, worst 0; a constant
    list, one score included, 0.5 each) and stay relative. :func:`unit_scale` names the
    scale of the scores this returns."""
    arr = _as_finite_array(scores)
    check_score_scale(scale)
    if scale in ("probability", "unit", "cosine"):
        return np.clip(arr, 0.0, 1.0)
    if scale == "grade10":
        return np.clip(arr / 10.0, 0.0, 1.0)
    if scale == "logit":
        return 0.5 * (1.0 + np.tanh(0.5 * arr))  # the sigmoid, without overflow
    return normalize_scores(arr, "min_max")


def ranked_unit_scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Relative scores of a ranked list (best first) in [0, 1], never rising with rank:
    the best 1, the worst 0. Scores that fall with rank are min-max normalised (a constant
    list, one score included, 0.5 each), as :func:`scale_to_unit` does. Where the order is
    not the scores' (a cascade's documents left behind by an earlier stage, on that stage's
    scale; a rule that reordered), the list is cut into stretches whose scores fall with
    rank, and each is min-max normalised within the share of [0, 1] its ranks take (ranks
    ``s..e`` of ``n``: ``[1 - e/(n-1), 1 - s/(n-1)]``), so a later stretch scores below
    every document of an earlier one."""
    arr = _as_finite_array(scores)
    n = arr.shape[0]
    starts = [0, *(np.flatnonzero(arr[1:] > arr[:-1]) + 1).tolist()]
    if len(starts) == 1:  # the scores fall with rank (or there are none)
        return normalize_scores(arr, "min_max")
    out = np.empty(n)
    ends = [*starts[1:], n]
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        run = arr[s:e]
        hi, lo = 1.0 - s / (n - 1), 1.0 - (e - 1) / (n - 1)
        spread = run.max() - run.min()
        if spread > 0:
            out[s:e] = lo + (hi - lo) * ((run - run.min()) / spread)
        else:  # alike: the top of the first stretch, the bottom of the last
            out[s:e] = hi if j == 0 else lo if j == len(starts) - 1 else (hi + lo) / 2
    return np.clip(out, 0.0, 1.0)


def unit_scale(scale: str) -> str:
    """The scale of :func:`scale_to_unit`'s output for scores of ``scale``: ``probability``
    and ``relative`` stay what they are; every other scale's fixed map gives ``unit`` (a
    logit's sigmoid is in (0, 1) but not a calibrated probability)."""
    check_score_scale(scale)
    return scale if scale in ("probability", "relative") else "unit"


def served_scales(scale: str) -> dict[str, str]:
    """What the service says of a pipeline whose scores are of ``scale`` (in ``/info``,
    ``/v1/models`` and each answer's ``meta``): ``scores``, the scale of the
    ``relevance_score`` it answers (:func:`unit_scale`: a cross-encoder's logit is answered
    as its sigmoid, ``unit``), and ``raw_scores``, the pipeline's own (TEI's ``raw_scores``)."""
    return {"scores": unit_scale(scale), "raw_scores": scale}


def unit_scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Scores that already lie in [0, 1] as they are; any others min-max normalised (for
    scores of unknown scale; :func:`scale_to_unit` is the map for a known one)."""
    arr = _as_finite_array(scores)
    if arr.size and arr.min() >= 0.0 and arr.max() <= 1.0:
        return arr
    return normalize_scores(arr, "min_max")
