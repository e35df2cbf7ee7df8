"""A click simulator for testing and benchmarking learning from clicks: the position-based
model of the unbiased learning-to-rank literature, with ULTRA's published settings.

A user examines the document at position ``p`` with probability ``EXAMINATION[p - 1] **
eta`` (positions beyond the tenth are never examined) and clicks an examined document with
a probability set by its relevance grade, 0 to 4 (:data:`CLICK_BY_GRADE`: 0.1 for a
non-relevant document, the noise; 1.0 for a perfect one). A collection's judgments are
mapped onto 0-4 by its maximum grade (:func:`grades_0_to_4`): with grades 0-1, a relevant
document is a 4; with 0-2, grade 1 is a 2 and grade 2 a 4. An unjudged document is a 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .propensity import PROTECTED, randpair_orders
from .sessions import QueryLog

__all__ = [
    "CLICK_BY_GRADE",
    "EXAMINATION",
    "PositionBasedModel",
    "grades_0_to_4",
    "max_grade",
    "simulate_query",
]

#: the probability of examining each of the first ten positions at eta 1
EXAMINATION = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)
#: the probability of clicking an examined document of each grade, 0 to 4
CLICK_BY_GRADE = (0.1, 0.16, 0.28, 0.52, 1.0)


def max_grade(qrels: Mapping[str, Mapping[str, int]]) -> int:
    """The collection's highest judged grade (at least 1)."""
    return max([1, *(g for judged in qrels.values() for g in judged.values())])


def grades_0_to_4(doc_ids: Sequence[str], judged: Mapping[str, int], top: int) -> np.ndarray:
    """Each document's grade mapped onto 0-4 by the collection's maximum grade ``top``
    (``round(4 * grade / top)``; unjudged and negative grades are 0)."""
    if top < 1:
        raise ValueError(f"the maximum grade must be >= 1, got {top}")
    raw = np.array([max(0, int(judged.get(d, 0))) for d in doc_ids], dtype=np.float64)
    return np.clip(np.rint(4 * raw / top), 0, 4).astype(np.int64)


@dataclass(frozen=True)
class PositionBasedModel:
    """The position-based click model (see the module doc); ``eta`` sharpens (> 1) or
    flattens (< 1) the examination curve."""

    eta: float = 1.0
    examination_base: tuple[float, ...] = EXAMINATION
    click_by_grade: tuple[float, ...] = CLICK_BY_GRADE

    def examination(self, depth: int | None = None) -> np.ndarray:
        """The probability of examining positions 1..``depth`` (0 past the curve's end)."""
        base = np.asarray(self.examination_base, dtype=np.float64) ** self.eta
        depth = len(base) if depth is None else depth
        out = np.zeros(depth)
        out[: min(depth, len(base))] = base[:depth]
        return out

    def propensities(self, depth: int | None = None) -> np.ndarray:
        """The examination probabilities relative to the first position's: what a
        propensity estimate should find."""
        theta = self.examination(depth)
        return theta / theta[0]

    def attractiveness(self, grades: np.ndarray) -> np.ndarray:
        """The probability of clicking an examined document of each 0-4 grade."""
        return np.asarray(self.click_by_grade, dtype=np.float64)[np.asarray(grades)]

    def click(self, shown: np.ndarray, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Clicks of sessions that showed ``shown`` (sessions x positions, indices into
        ``grades``; -1: nothing shown there): a boolean array of the same shape."""
        depth = shown.shape[1]
        valid = shown >= 0
        p = (
            self.examination(depth)[None, :]
            * self.attractiveness(grades)[np.where(valid, shown, 0)]
        )
        return valid & (rng.random(shown.shape) < p)


def simulate_query(
    model: PositionBasedModel,
    *,
    key: str,
    query: str,
    doc_ids: Sequence[str],
    order: Sequence[int],
    grades: np.ndarray,
    sessions: int,
    rng: np.random.Generator,
    depth: int = 10,
    first_stage: Sequence[float] | None = None,
    explore: float = 0.0,
    protect: int = PROTECTED,
    pipeline: str = "",
) -> QueryLog:
    """``sessions`` sessions of one query whose logging ranker ordered the candidates
    ``doc_ids`` as ``order`` (indices, best first) and showed the first ``depth``; with
    ``explore`` > 0 each session's order goes through :func:`~.propensity.randpair_orders`
    first (with that share, the first ``protect`` positions untouched). ``grades``: each
    candidate's 0-4 grade. The result is what :func:`~.sessions.collect` makes of the same
    sessions' log."""
    base = np.asarray(order, dtype=np.int32)[None, :]
    orders = np.repeat(base, sessions, axis=0)
    if explore > 0:
        orders = randpair_orders(orders, rng, pairs=explore, protect=protect, depth=depth)
    shown = np.full((sessions, depth), -1, dtype=np.int32)
    width = min(depth, orders.shape[1])
    shown[:, :width] = orders[:, :width]
    clicked = model.click(shown, np.asarray(grades), rng)
    fs = np.full(len(doc_ids), np.nan) if first_stage is None else np.asarray(first_stage, float)
    return QueryLog(
        key=key,
        query=query,
        doc_ids=list(doc_ids),
        shown=shown,
        clicked=clicked,
        first_stage=fs,
        texts=[None] * len(doc_ids),
        hashes=[None] * len(doc_ids),
        pipelines=[pipeline] * sessions,
    )
