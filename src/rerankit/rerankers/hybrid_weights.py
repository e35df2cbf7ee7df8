"""What the hybrid's weight options may be: ``weights`` (by signal name) change the
calibrated hybrid, ``text_weights`` the relative one; either given to the other is an error
naming the fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scorers.recipe import ROLES

__all__ = ["check_weight_options", "weight_shares"]


def check_weight_options(
    scores: str, text_weights: Any, weights: Any, model: str | None = None
) -> None:
    """``text_weights`` weigh only the relative hybrid and ``weights`` only the
    calibrated one: either given to the other mode is an error naming the fix (with a
    ``model`` the built-in calibration does not fit, ``weights`` have none to change)."""
    if model is not None and weights is not None:
        raise ValueError(
            "weights change the calibrated hybrid's signals, whose calibration fits the "
            f"bundled all-MiniLM-L6-v2, not {model!r}: give calibration= (rerankit tune "
            "--calibrate fits one), or text_weights = [bm25, bm25_background] to weigh "
            "the relative hybrid it falls back to (the embedding takes the rest)"
        )
    if model is not None:  # (it falls back to the relative hybrid, text_weights and all)
        return
    if scores == "calibrated" and text_weights is not None:
        raise ValueError(
            "text_weights weigh hybrid-relative's signals; the calibrated hybrid does "
            "not read them: change its signals' weights by name with weights = "
            f"{{ bm25_background = 0.7 }} (signals: {', '.join(ROLES)}; in Python "
            'HybridReranker(weights={"bm25_background": 0.7})), or use type = '
            '"hybrid-relative" for text_weights'
        )
    if scores != "calibrated" and weights is not None:
        raise ValueError(
            "weights change the calibrated hybrid's signals; this hybrid's scores are "
            "relative, weighed by text_weights = [bm25, bm25_background] (the embedding "
            "takes the rest)"
        )


def weight_shares(weights: Mapping[str, float]) -> dict[str, float]:
    """Weights as shares of their sum, rounded (the fusion divides them by their sum)."""
    total = sum(weights.values()) or 1.0
    return {k: round(w / total, 6) for k, w in weights.items() if w}
