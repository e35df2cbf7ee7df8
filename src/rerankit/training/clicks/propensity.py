"""How likely a user is to look at each position (the *propensity* of examination), the
quantity that corrects clicks for position bias; and RandPair, the light randomisation that
makes it measurable without a model.

:func:`estimate_propensities` reads them from a click log:

* **regression EM** (Wang et al., "Position bias estimation for unbiased learning to rank
  in personal search", WSDM 2018): a click happens when the user examines the position
  (probability ``theta[p]``) and finds the document relevant (``gamma``); EM alternates
  between each unclicked impression's posterior (examined but not relevant, or not
  examined) and refitting both. Relevance is modelled from the learning-to-rank features
  (a logistic regression over the features that do not depend on the list: a document's
  within-list rank would stand in for its position), so a document's relevance is tied to
  what it is, not where it was shown: the estimate is identifiable even when the logging
  ranker is deterministic, as long as similar documents appear at different positions
  across queries.
* **swaps** (intervention harvesting, Joachims et al. 2017, Agarwal et al. 2019): where the
  log shows the same document of the same query at two adjacent positions (RandPair's
  swaps, or two pipelines' orders), the ratio of its click rates there estimates the ratio
  of the two positions' propensities without any model of relevance. :func:`randpair`
  makes such swaps: it exchanges a small share of adjacent pairs below the top 3, so the
  positions users see most are never disturbed.

Propensities are relative: position 1 is 1.0 (inverse-propensity weighting needs only the
ratios).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ...scorers.learned import feature_columns
from .exploration import Exploration
from .reliability import PROTECTED, position_counts, position_ranges, reliability_warning

__all__ = [
    "PROTECTED",
    "RELEVANCE_FEATURES",
    "Propensities",
    "estimate_propensities",
    "randpair",
    "randpair_orders",
    "swap_ratios",
]

#: the features regression EM models relevance from: those that describe the document and
#: the query alone (a within-list rank or normalisation would carry the position)
RELEVANCE_FEATURES = (
    "first_stage",
    "cosine",
    "bm25",
    "bm25_background",
    "coverage",
    "log_length",
    "prf_cosine",
    "hybrid_logit",
    "passage_cosine",
)


def randpair_orders(
    orders: np.ndarray,
    rng: np.random.Generator,
    *,
    pairs: float = 0.1,
    protect: int = PROTECTED,
    depth: int = 10,
    share: float | None = None,
) -> np.ndarray:
    """RandPair over many orders at once (rows of indices, best first): walking down from
    position ``protect + 1``, each adjacent pair within the first ``depth`` positions is
    exchanged with probability ``pairs`` (the service's ``explore_pairs``; ``share`` is its
    former name), and a document moved is not moved again (so each moves by one position at
    most). Returns new orders; the input is not changed."""
    pairs = pairs if share is None else share
    if not 0 <= pairs <= 1:
        raise ValueError(f"pairs must be in [0, 1], got {pairs}")
    out = np.array(orders, copy=True)
    free = np.ones(out.shape[0], dtype=bool)
    last = min(depth, out.shape[1]) - 1  # the last position a pair can start at, 0-based
    for p in range(protect, last):
        swap = free & (rng.random(out.shape[0]) < pairs)
        out[swap, p], out[swap, p + 1] = out[swap, p + 1], out[swap, p].copy()
        free = ~swap  # the pair's second document stays where it went
    return out


def randpair(
    order: Sequence[int],
    rng: np.random.Generator,
    *,
    pairs: float = 0.1,
    protect: int = PROTECTED,
    depth: int = 10,
    share: float | None = None,
) -> tuple[list[int], list[int]]:
    """One answer's order after RandPair (:func:`randpair_orders`), and the 1-based
    positions ``p`` whose document was exchanged with the one at ``p + 1`` (what an
    impression's ``explore`` field records). The service calls it per request."""
    before = np.asarray(order)
    pairs = pairs if share is None else share
    after = randpair_orders(before[None, :], rng, pairs=pairs, protect=protect, depth=depth)[0]
    moved = np.flatnonzero(after != before)
    return after.tolist(), [int(p) + 1 for p in moved[::2]]


def swap_ratios(logs: Mapping[str, Any], depth: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Intervention harvesting: for each pair of adjacent positions ``(p, p + 1)``, the
    ratio of their propensities from the documents each query showed at both, and the
    weight of evidence behind it (NaN ratio and 0 weight where no document was at both).
    Each document's click rates at the two positions are averaged with weight
    ``n_p n_{p+1} / (n_p + n_{p+1})`` (its impressions there), so a document seen at one
    of them only once counts little."""
    top = np.zeros(depth - 1)
    bottom = np.zeros(depth - 1)
    weight = np.zeros(depth - 1)
    for log in logs.values():
        shows, clicks = log.counts()
        shows, clicks = shows[:, :depth], clicks[:, :depth]
        for p in range(min(depth, shows.shape[1]) - 1):
            a, b = shows[:, p], shows[:, p + 1]
            both = (a > 0) & (b > 0)
            if not both.any():
                continue
            w = a[both] * b[both] / (a[both] + b[both])
            top[p] += float(np.sum(w * clicks[both, p + 1] / b[both]))
            bottom[p] += float(np.sum(w * clicks[both, p] / a[both]))
            weight[p] += float(w.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bottom > 0, top / bottom, np.nan)
    return ratio, weight


@dataclass
class Propensities:
    """Relative propensities by position (``values[0]`` is position 1, 1.0; NaN for a
    position the log never showed anything at), how they were estimated, from how many
    sessions, and the swaps' ratios where the log had any; when estimated from a log, the
    sessions that showed something at each position and the clicks there (what
    :meth:`warning` judges them by)."""

    values: np.ndarray
    method: str
    sessions: int
    iterations: int = 0
    converged: bool = True
    swap_ratios: list[float | None] = field(default_factory=list)
    sessions_by_position: list[int] = field(default_factory=list)
    clicks_by_position: list[int] = field(default_factory=list)
    #: the log's exploration, when known (:func:`~.exploration.count_exploration`): what
    #: the caveat and the warning say of exchanged pairs that measured nothing
    exploration: Exploration | None = None

    def describe(self) -> str:
        shown = ", ".join(
            f"{p}: n/a (never shown)"
            if not math.isfinite(v)
            else f"{p}: <0.001"
            if v < 0.0005
            else f"{p}: {v:.3f}"
            for p, v in enumerate(self.values, start=1)
        )
        return f"propensities by position ({self.method}, {self.sessions} sessions): {shown}"

    def unmeasured(self) -> list[int]:
        """The positions (2 and below, each shown) whose value relative to the position
        above was not measured by exchanged pairs: what regression EM alone set."""
        ratios = self.swap_ratios or [None] * (len(self.values) - 1)
        return [
            p + 2
            for p, r in enumerate(ratios)
            if r is None and p + 1 < len(self.values) and math.isfinite(self.values[p + 1])
        ]

    def caveat(self) -> str | None:
        """What to keep in mind reading these, or None (every position measured by
        exchanged pairs, or not estimated by regression EM): which positions came from the
        logged order alone, and what the data can and cannot tell there."""
        missing = self.unmeasured()
        if not self.method.startswith("regression EM") or not missing:
            return None
        cannot = (
            "from the logged order alone regression EM tells a fall in attention down the "
            "page from a fall in relevance only through its model of relevance from the "
            "features; where the documents placed on top were more relevant than the "
            "features show, the estimate comes out steeper than users really are, and these "
            "clicks cannot tell whether they were"
        )
        if len(missing) == len(self.values) - 1 or not any(r is not None for r in self.swap_ratios):
            text = (
                f"no position was measured by exchanged pairs (RandPair, or a second "
                f"pipeline's order): {cannot}"
            )
            if self.exploration is not None and self.exploration.exchanged:
                text += f"; {self.exploration.too_few()}"
            return text
        top = [p for p in missing if p <= PROTECTED + 1]
        where = position_ranges(missing)
        were = "positions {} were" if len(missing) > 1 else "position {} was"
        text = f"{were.format(where)} not measured by exchanged pairs: {cannot}"
        if top:
            text += (
                f"; every position below {max(top)} is chained from {position_ranges(top)}, so "
                "an error there scales them all; "
            )
            if self.exploration is not None and self.exploration.moved_top:
                text += self.exploration.too_few(top)
            else:
                text += (
                    f"RandPair in the service never moves the top {PROTECTED}, so its "
                    "exploration does not fix it (propensities measured elsewhere do: "
                    "--propensities)"
                )
        return text

    def warning(self) -> str | None:
        """A plain warning naming the positions whose estimate is not to be trusted
        (resting on too few clicks, or higher than the position above: see
        :mod:`.reliability`) and what to do; None when there are none, or when the
        propensities were not estimated from a log (given, or the naive learner's)."""
        if not self.clicks_by_position:
            return None
        measured = [p + 2 for p, r in enumerate(self.swap_ratios) if r is not None]
        return reliability_warning(
            self.values, self.clicks_by_position, measured=measured, exploration=self.exploration
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "sessions": self.sessions,
            "iterations": self.iterations,
            "converged": self.converged,
            "by_position": [float(v) if math.isfinite(v) else None for v in self.values],
            "swap_ratios": self.swap_ratios,
            "sessions_by_position": self.sessions_by_position,
            "clicks_by_position": self.clicks_by_position,
            "exploration": None if self.exploration is None else asdict(self.exploration),
            "warning": self.warning(),
        }


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -35, 35)))


def _logistic(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: np.ndarray, steps: int = 2
) -> np.ndarray:
    """Weighted logistic regression with soft targets ``y`` in [0, 1] (a few Newton steps
    from ``beta``, a small ridge for stability)."""
    ridge = 1e-3 * float(w.sum()) / len(w) * np.eye(x.shape[1])
    ridge[0, 0] = 0.0  # no penalty on the intercept
    for _ in range(steps):
        p = _sigmoid(x @ beta)
        grad = x.T @ (w * (p - y)) + ridge @ beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(beta)), grad)
        beta = beta - step
        if float(np.max(np.abs(step))) < 1e-7:
            break
    return beta


#: each relevance feature enters regression EM's model through this many quantile bins
#: (besides linearly), so the model can bend where relevance does not rise evenly
BINS = 8


def _basis(x: np.ndarray) -> np.ndarray:
    """An intercept, the standardised features and, per feature, indicators of its
    quantile bins (:data:`BINS`): an additive logistic model flexible enough to follow
    relevance that rises in steps."""
    spread = x.std(axis=0)
    z = (x - x.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    parts = [np.ones((len(x), 1)), z]
    for j in range(x.shape[1]):
        edges = np.unique(np.quantile(x[:, j], np.linspace(0, 1, BINS + 1)[1:-1]))
        if len(edges):
            bins = np.searchsorted(edges, x[:, j], side="right")
            parts.append((bins[:, None] == np.arange(1, len(edges) + 1)[None, :]).astype(float))
    return np.hstack(parts)


def _cells(logs: Mapping[str, Any], depth: int):
    """Every (query-document, position) cell with impressions: shows, clicks, the
    position and the pair's number; and each pair's (query key, document index)."""
    n, c, pos, pair, pairs = [], [], [], [], []
    for key, log in logs.items():
        shows, clicks = log.counts()
        shows, clicks = shows[:, :depth], clicks[:, :depth]
        docs, positions = np.nonzero(shows)
        for d in np.unique(docs):
            pairs.append((key, int(d)))
        index = {d: len(pairs) - len(np.unique(docs)) + i for i, d in enumerate(np.unique(docs))}
        n.append(shows[docs, positions])
        c.append(clicks[docs, positions])
        pos.append(positions)
        pair.append(np.array([index[d] for d in docs], dtype=np.int64))
    if not pairs:
        raise ValueError("the log has no impressions within the positions read")
    return np.concatenate(n), np.concatenate(c), np.concatenate(pos), np.concatenate(pair), pairs


def estimate_propensities(
    logs: Mapping[str, Any],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]] | None = None,
    *,
    depth: int = 10,
    method: str = "auto",
    features: Sequence[str] = RELEVANCE_FEATURES,
    iterations: int = 3000,
    tolerance: float = 1e-6,
    min_swap_weight: float = 30.0,
) -> Propensities:
    """Propensities by position 1..``depth`` from click logs (:class:`~.sessions.QueryLog`
    by query key). ``method``: ``"em"`` (regression EM over ``rows``, the features of
    each query's candidates, ``{key: (doc ids, matrix)}``, in the logs' candidate order),
    ``"swaps"`` (adjacent ratios from :func:`swap_ratios`, chained from position 1; needs
    swaps at every position), or ``"auto"``: EM, with each adjacent ratio that the swaps
    measure with at least ``min_swap_weight`` of evidence, and a click at both positions,
    taken from them instead (so no position's estimate is 0)."""
    if method not in ("auto", "em", "swaps"):
        raise ValueError(f"method {method!r}: expected auto, em or swaps")
    sessions = sum(log.sessions for log in logs.values())
    counts = position_counts(logs, depth)
    ratios, weight = swap_ratios(logs, depth)
    # a ratio of 0 (no click at the lower position) measures nothing: too few clicks
    measured = [
        float(r) if w >= min_swap_weight and math.isfinite(r) and r > 0 else None
        for r, w in zip(ratios, weight, strict=True)
    ]
    if method == "swaps":
        if any(r is None for r in measured):
            missing = [p + 1 for p, r in enumerate(measured) if r is None]
            raise ValueError(
                f"no swaps measured between positions {missing} and the next; explore with "
                "randpair(protect=0), or use method='em'"
            )
        values = np.concatenate(([1.0], np.cumprod(np.asarray(measured, dtype=np.float64))))
        return Propensities(values, "swaps", sessions, swap_ratios=measured, **_counted(counts))
    if rows is None:
        raise ValueError("regression EM needs the candidates' features (rows)")
    with _one_blas_thread():
        values, steps, converged = _regression_em(
            logs, rows, depth, features, iterations, tolerance
        )
    name = "regression EM"
    if method == "auto" and any(r is not None for r in measured):
        adjacent = values[1:] / values[:-1]
        for p, r in enumerate(measured):
            if r is not None:
                adjacent[p] = r
        values = np.concatenate(([1.0], np.cumprod(adjacent)))
        name = "regression EM, adjacent ratios from swaps where measured"
    return Propensities(values, name, sessions, steps, converged, measured, **_counted(counts))


def _counted(counts: tuple[list[int], list[int]]) -> dict[str, list[int]]:
    """:func:`~.reliability.position_counts`' as :class:`Propensities`' fields."""
    return {"sessions_by_position": counts[0], "clicks_by_position": counts[1]}


def _one_blas_thread() -> Any:
    """BLAS on one thread while EM runs (when threadpoolctl is installed): its matrices
    are small, and threads fighting over a busy machine's cores made it ten times slower."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _regression_em(
    logs: Mapping[str, Any],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]],
    depth: int,
    features: Sequence[str],
    iterations: int,
    tolerance: float,
) -> tuple[np.ndarray, int, bool]:
    n, c, pos, pair, pairs = _cells(logs, depth)
    columns = feature_columns(list(features))
    x = np.empty((len(pairs), len(columns)))
    for i, (key, d) in enumerate(pairs):
        ids, matrix = rows[key]
        if list(ids) != list(logs[key].doc_ids):
            where = {doc: j for j, doc in enumerate(ids)}
            d = where[logs[key].doc_ids[d]]
        x[i] = matrix[d, columns]
    x = _basis(x)
    shows_by_pos = np.maximum(np.bincount(pos, weights=n, minlength=depth), 1e-12)
    pair_shows = np.bincount(pair, weights=n, minlength=len(pairs))

    def em_step(theta: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t, g = theta[pos], _sigmoid(x @ beta)[pair]
        no_click = np.clip(1 - t * g, 1e-12, None)
        examined = c + (n - c) * t * (1 - g) / no_click  # E[examined] over the cell's shows
        relevant = c + (n - c) * (1 - t) * g / no_click
        new_theta = np.bincount(pos, weights=examined, minlength=depth) / shows_by_pos
        target = np.bincount(pair, weights=relevant, minlength=len(pairs)) / pair_shows
        new_beta = _logistic(x, np.clip(target, 0, 1), pair_shows, beta)
        return np.clip(new_theta, 1e-6, 1.0), new_beta

    ctr = np.bincount(pos, weights=c, minlength=depth) / shows_by_pos
    theta = np.clip(ctr / max(ctr.max(), 1e-9), 0.05, 0.95)  # start from the click rates
    beta = np.zeros(x.shape[1])
    converged = False
    steps = 0
    while steps < iterations:
        # SQUAREM (Varadhan and Roland 2008): two EM steps, a step along their
        # extrapolation, and an EM step from there; EM alone crawls here
        t1, b1 = em_step(theta, beta)
        t2, b2 = em_step(t1, b1)
        r = np.concatenate([t1 - theta, b1 - beta])
        v = np.concatenate([t2 - t1, b2 - b1]) - r
        alpha = -float(np.linalg.norm(r)) / max(float(np.linalg.norm(v)), 1e-12)
        alpha = min(alpha, -1.0)  # -1 is the plain second EM step
        t3 = np.clip(theta - 2 * alpha * r[:depth] + alpha**2 * v[:depth], 1e-6, 1.0)
        b3 = beta - 2 * alpha * r[depth:] + alpha**2 * v[depth:]
        new_theta, new_beta = em_step(t3, b3)
        if not np.all(np.isfinite(new_theta)) or not np.all(np.isfinite(new_beta)):
            new_theta, new_beta = t2, b2  # the extrapolation went astray: plain EM
        steps += 3
        change = float(np.max(np.abs(new_theta / new_theta[0] - theta / theta[0])))
        theta, beta = new_theta, new_beta
        if change < tolerance:
            converged = True
            break
    seen = np.bincount(pos, weights=n, minlength=depth) > 0
    return np.where(seen, theta / theta[0], np.nan), steps, converged
