"""Calibrated scores: raw scores mapped to estimates of P(relevant), per (query, document).

A :class:`Calibration` is a fixed logistic map ``P = sigmoid(slope * raw + intercept)``
fitted on judged (query, document) pairs (:func:`fit_logistic`). A fusion with
``normalization = "calibrated"`` maps each strategy's raw score to its logit
``slope * raw + intercept``, takes the weighted sum of the logits and maps it through an
output calibration, so the fused score depends only on the query, the document and the
pipeline, never on the other documents in the request. :func:`expected_calibration_error`
and :func:`reliability_bins` say how well the probabilities match observed relevance;
:func:`reliability_svg` draws the reliability diagram ``rerankit eval --out`` writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from numbers import Real
from typing import Any

import numpy as np

__all__ = [
    "Calibration",
    "expected_calibration_error",
    "fit_calibration",
    "fit_logistic",
    "reliability_bins",
    "reliability_svg",
    "sigmoid",
]


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    """The logistic function, numerically stable for large ``|x|``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


@dataclass(frozen=True)
class Calibration:
    """``P(relevant) = sigmoid(slope * raw + intercept)``: a fixed map of one raw score."""

    slope: float = 1.0
    intercept: float = 0.0

    def __post_init__(self) -> None:
        for name in ("slope", "intercept"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v):
                raise ValueError(f"calibration {name} must be a finite number, got {v!r}")

    @classmethod
    def parse(
        cls, value: Calibration | Mapping[str, Any], where: str = "calibration"
    ) -> Calibration:
        """A Calibration from itself or ``{slope = ..., intercept = ...}``."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected {{slope, intercept}}, got {value!r}")
        unknown = sorted(set(value) - {"slope", "intercept"})
        if unknown:
            raise ValueError(f"{where}: unknown keys {unknown}; use slope and intercept")
        try:
            return cls(**dict(value))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def logit(self, raw: np.ndarray | Sequence[float]) -> np.ndarray:
        """``slope * raw + intercept``."""
        return self.slope * np.asarray(raw, dtype=np.float64) + self.intercept

    def probability(self, raw: np.ndarray | Sequence[float]) -> np.ndarray:
        """``sigmoid(slope * raw + intercept)``."""
        return sigmoid(self.logit(raw))

    def as_dict(self) -> dict[str, float]:
        return {"slope": round(self.slope, 6), "intercept": round(self.intercept, 6)}


def fit_logistic(
    features: np.ndarray | Sequence[Sequence[float]],
    labels: np.ndarray | Sequence[float],
    *,
    l2: float = 1e-4,
    max_iter: int = 100,
    sample_weight: np.ndarray | Sequence[float] | None = None,
) -> tuple[np.ndarray, float]:
    """Logistic regression of binary ``labels`` on ``features`` (``(n,)`` or ``(n, k)``) by
    Newton's method with a small ridge penalty on the coefficients: ``(coefficients,
    intercept)``. ``sample_weight`` (one positive number per row, e.g. to give several
    collections an equal say) weights each row's log-loss."""
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    y = np.asarray(labels, dtype=np.float64)
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"{x.shape[0]} feature rows and {y.shape[0]} labels; need equal, > 0")
    if not np.isfinite(x).all():
        raise ValueError("features must be finite")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 or 1")
    if y.min() == y.max():
        raise ValueError("labels must include both relevant (1) and non-relevant (0) pairs")
    if sample_weight is None:
        weight = np.ones_like(y)
    else:
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != y.shape or not np.isfinite(weight).all() or (weight <= 0).any():
            raise ValueError("sample_weight: one positive, finite number per label")
        weight = weight * (len(y) / weight.sum())  # the penalty keeps its meaning
    design = np.hstack([x, np.ones((x.shape[0], 1))])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2 * x.shape[0])
    penalty[-1] = 0.0  # no penalty on the intercept
    for _ in range(max_iter):
        p = sigmoid(design @ beta)
        grad = design.T @ (weight * (p - y)) + penalty * beta
        hess = (design * (weight * p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(beta)), grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def fit_calibration(
    raw: np.ndarray | Sequence[float],
    labels: np.ndarray | Sequence[float],
    *,
    sample_weight: np.ndarray | Sequence[float] | None = None,
) -> Calibration:
    """The :class:`Calibration` of one raw score, fitted on judged pairs (``sample_weight``:
    see :func:`fit_logistic`)."""
    coef, intercept = fit_logistic(raw, labels, sample_weight=sample_weight)
    return Calibration(float(coef[0]), intercept)


def reliability_bins(
    probabilities: np.ndarray | Sequence[float],
    labels: np.ndarray | Sequence[float],
    bins: int = 10,
) -> list[dict[str, float]]:
    """Equal-width bins of predicted probability: each non-empty bin's range, count, mean
    prediction and observed share of relevant pairs."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if p.shape != y.shape:
        raise ValueError("probabilities and labels must have the same length")
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    out = []
    for b in range(bins):
        mask = which == b
        if mask.any():
            out.append(
                {
                    "low": float(edges[b]),
                    "high": float(edges[b + 1]),
                    "count": int(mask.sum()),
                    "predicted": float(p[mask].mean()),
                    "observed": float(y[mask].mean()),
                }
            )
    return out


def expected_calibration_error(
    probabilities: np.ndarray | Sequence[float],
    labels: np.ndarray | Sequence[float],
    bins: int = 10,
) -> float:
    """Expected calibration error: the count-weighted mean gap between predicted and
    observed relevance over :func:`reliability_bins`."""
    table = reliability_bins(probabilities, labels, bins)
    total = sum(b["count"] for b in table)
    if not total:
        return 0.0
    return sum(b["count"] * abs(b["predicted"] - b["observed"]) for b in table) / total


def reliability_svg(curves: Mapping[str, Sequence[Mapping[str, float]]], title: str = "") -> str:
    """A reliability diagram (predicted vs observed relevance per bin, one line per curve,
    the diagonal for perfect calibration) as a standalone SVG document."""
    size, pad = 360, 48
    colors = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")

    def xy(p: float, q: float) -> str:
        return f"{pad + p * size:.1f},{pad + (1 - q) * size:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 2 * pad + 180}" '
        f'height="{size + 2 * pad}" font-family="sans-serif" font-size="12">',
        f'<rect x="{pad}" y="{pad}" width="{size}" height="{size}" fill="none" stroke="#999"/>',
        f'<line x1="{pad}" y1="{pad + size}" x2="{pad + size}" y2="{pad}" '
        'stroke="#bbb" stroke-dasharray="4 4"/>',
        f'<text x="{pad + size / 2}" y="{size + 2 * pad - 12}" text-anchor="middle">'
        "predicted P(relevant)</text>",
        f'<text x="14" y="{pad + size / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {pad + size / 2})">observed share relevant</text>',
    ]
    if title:
        parts.append(f'<text x="{pad}" y="24" font-weight="bold">{escape(title)}</text>')
    for t in (0.0, 0.5, 1.0):
        parts.append(
            f'<text x="{pad + t * size}" y="{pad + size + 16}" text-anchor="middle">{t:g}</text>'
        )
        parts.append(
            f'<text x="{pad - 6}" y="{pad + (1 - t) * size + 4}" text-anchor="end">{t:g}</text>'
        )
    for k, (name, table) in enumerate(curves.items()):
        color = colors[k % len(colors)]
        points = " ".join(xy(b["predicted"], b["observed"]) for b in table)
        if points:
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>'
            )
        for b in table:
            cx, cy = xy(b["predicted"], b["observed"]).split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>')
        y = pad + 14 + 18 * k
        parts.append(
            f'<rect x="{pad + size + 16}" y="{y - 9}" width="10" height="10" fill="{color}"/>'
        )
        parts.append(f'<text x="{pad + size + 30}" y="{y}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
