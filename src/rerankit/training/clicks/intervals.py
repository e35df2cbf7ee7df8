"""The confidence intervals of the interleaving report (:mod:`.interleave`): the normal
interval of the mean credit per clicked session (optimized interleaving, over sessions),
and percentile bootstraps of team draft's delta over sessions or over queries."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

__all__ = ["mean_interval", "query_bootstrap", "session_bootstrap"]


def mean_interval(values: Sequence[float], confidence: float) -> tuple[float, float]:
    """The normal interval of the mean credit per clicked session (sessions are
    independent draws of the traffic; the credits are real numbers, so the interval is
    the normal one rather than a bootstrap of counts)."""
    if not values:
        return (0.0, 0.0)
    mean = statistics.fmean(values)
    if len(values) < 2:
        return (mean, mean)
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * statistics.stdev(values) / math.sqrt(len(values))
    return (mean - half, mean + half)


def session_bootstrap(
    counts: tuple[int, int, int, int], confidence: float, resamples: int, seed: int
) -> tuple[float, float]:
    """The percentile interval of delta when the sessions are resampled with replacement:
    ``counts`` of sessions won by each, tied with clicks, and without a credited click
    (resampling sessions draws these four counts from a multinomial)."""
    total = sum(counts)
    if counts[0] + counts[1] + counts[2] == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(total, np.asarray(counts, dtype=np.float64) / total, size=resamples)
    den = drawn[:, :3].sum(axis=1)
    deltas = np.where(den > 0, (drawn[:, 0] - drawn[:, 1]) / np.maximum(den, 1), 0.0)
    tail = (1 - confidence) / 2
    return float(np.quantile(deltas, tail)), float(np.quantile(deltas, 1 - tail))


def query_bootstrap(
    groups: Sequence[tuple[int, int]], confidence: float, resamples: int, seed: int
) -> tuple[float, float]:
    """The percentile interval of delta when the queries are resampled with replacement."""
    diff = np.array([g[0] for g in groups], dtype=np.float64)
    clicked = np.array([g[1] for g in groups], dtype=np.float64)
    if clicked.sum() == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    num, den = diff[picks].sum(axis=1), clicked[picks].sum(axis=1)
    deltas = np.where(den > 0, num / np.maximum(den, 1), 0.0)
    tail = (1 - confidence) / 2
    return float(np.quantile(deltas, tail)), float(np.quantile(deltas, 1 - tail))
