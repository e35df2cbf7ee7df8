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
    "check_normalization_method",
    "normalize_scores",
    "rank_positions",
    "unit_scores",
]

NORMALIZATION_METHODS = ("min_max", "z_score", "softmax", "rank")


def _as_finite_array(scores: Sequence[float] | np.ndarray, what: str = "scores") -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{what} contain non-finite values at positions {bad[:10].tolist()}")
    return arr


def check_normalization_method(method: str) -> None:
    """Raise ``ValueError`` unless ``method`` is one of :data:`NORMALIZATION_METHODS`."""
    if method not in NORMALIZATION_METHODS:
        raise ValueError(
            f"unknown normalization method {method!r}; "
            f"use one of {', '.join(NORMALIZATION_METHODS)}"
        )


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
    check_normalization_method(method)
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


def unit_scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Scores that already lie in [0, 1] as they are; any others min-max normalised."""
    arr = _as_finite_array(scores)
    if arr.size and arr.min() >= 0.0 and arr.max() <= 1.0:
        return arr
    return normalize_scores(arr, "min_max")
