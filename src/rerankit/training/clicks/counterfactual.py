"""Counterfactual estimates from a click log: each document's relevance by inverse
propensity weighting, and the nDCG@10 a ranking would have had, with those estimates as
gains, for the sessions the log holds (Joachims, Swaminathan and Schnabel, "Unbiased
learning-to-rank with biased feedback", WSDM 2017)."""

from __future__ import annotations

import math

import numpy as np

from .sessions import QueryLog

__all__ = ["MIN_PROPENSITY", "counterfactual_ndcg", "ips_relevance", "served_ndcg"]

#: propensities are clipped from below at this (relative to position 1): a click at a
#: position hardly anyone looks at would otherwise outweigh everything else
MIN_PROPENSITY = 0.05


def _theta(propensities: np.ndarray, depth: int, clip: float) -> np.ndarray:
    theta = np.ones(depth)
    values = np.asarray(propensities, dtype=np.float64)[:depth]
    theta[: len(values)] = np.nan_to_num(values, nan=1.0)  # NaN: a position never shown
    return np.maximum(theta, clip)


def ips_relevance(
    log: QueryLog, propensities: np.ndarray, *, clip: float = MIN_PROPENSITY
) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's relevance estimate, its clicks over its expected examinations
    (the propensities of the positions it was shown at, each clipped at ``clip``), and
    those expected examinations (0 for a document never shown: its estimate is NaN)."""
    shows, clicks = log.counts()
    theta = _theta(propensities, shows.shape[1], clip)
    mass = shows @ theta
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.where(mass > 0, clicks.sum(axis=1) / mass, np.nan)
    return estimate, mass


def _dcg(gains: np.ndarray, k: int = 10) -> float:
    top = gains[:k]
    return float(np.sum(top / np.log2(np.arange(2, len(top) + 2))))


def counterfactual_ndcg(scores: np.ndarray, gains: np.ndarray, k: int = 10) -> float:
    """nDCG@k of ordering the candidates by ``scores`` (ties keep their order) with
    ``gains`` (relevance estimates; NaN, never shown, counts as 0); NaN when no gain is
    positive."""
    g = np.nan_to_num(np.asarray(gains, dtype=np.float64), nan=0.0)
    ideal = _dcg(np.sort(g)[::-1], k)
    if ideal <= 0:
        return math.nan
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return _dcg(g[order], k) / ideal


def served_ndcg(log: QueryLog, gains: np.ndarray, k: int = 10) -> float:
    """The counterfactual nDCG@k of what was served: each session's shown order scored
    with ``gains`` (as :func:`counterfactual_ndcg`), averaged over the sessions."""
    g = np.nan_to_num(np.asarray(gains, dtype=np.float64), nan=0.0)
    ideal = _dcg(np.sort(g)[::-1], k)
    if ideal <= 0:
        return math.nan
    shown = log.shown[:, :k]
    values = np.where(shown >= 0, g[np.where(shown >= 0, shown, 0)], 0.0)
    discount = 1 / np.log2(np.arange(2, shown.shape[1] + 2))
    return float(np.mean(values @ discount)) / ideal
