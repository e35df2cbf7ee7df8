"""Learning to rank from a click log, with the position bias corrected, and the verdict
that keeps the pipeline that served the log unless the learned one is clearly better.

Each query's clicks become an estimate of each shown document's relevance by inverse
propensity weighting (:func:`ips_relevance`: its clicks over the examinations its
positions got, by the propensities of :mod:`.propensity`), so a document clicked at
position 8 counts for more than one clicked at position 1. Its training label is that
estimate smoothed, its clicks over its expected examinations plus :data:`SMOOTHING`: a
document shown only where few users look has few expected examinations, and one or two
clicks there (which are often noise clicks) would otherwise give it the top label; the
gains that measure a ranker keep the plain estimate. LightGBM's lambdarank then
learns, over the features ``rerankit tune --method ltr`` reads, to order the shown
documents by that estimate (graded labels with linear gains). With ``correct=False`` the
propensities are all 1: clicks as labels, the naive learner, which mostly learns to
reproduce the order that was shown.

Settings, trees and a blend with the first stage + MiniLM fusion (as ``tune``'s) are
chosen by nested cross-validation over queries (:func:`rerankit.training.crossval.
cross_validate`); each held-out query is scored by a counterfactual nDCG@10: its own
sessions' inverse-propensity-weighted relevance estimates as gains, over all its
candidates (a document the log never showed has no estimate and counts as 0, so a ranker
that brings up unseen documents is measured conservatively). What was served is scored
the same way, session by session; :func:`rerankit.training.crossval.verdict` then adopts
the learned ranker only when it beats what was served by more than the margin times the
noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...normalize import normalize_scores
from ...scorers.learned import FEATURES, feature_columns, min_max
from .. import crossval, ltr
from ..fusion_search import DEFAULT_HYBRID
from .counterfactual import MIN_PROPENSITY, counterfactual_ndcg, ips_relevance, served_ndcg
from .given import as_propensities
from .propensity import Propensities
from .result import ClickLearning
from .sessions import QueryLog
from .staged import staged_predictions

__all__ = [
    "LEVELS",
    "SESSION_SHARES",
    "SETTINGS",
    "SMOOTHING",
    "ClickLearning",
    "blend_base",
    "carries_first_stage",
    "learn_from_clicks",
    "staged_predictions",
]

#: relevance estimates become this many graded labels above 0 (linear gains)
LEVELS = 10
#: a training label is a document's clicks over its expected examinations (in sessions'
#: worth of position 1) plus this many: chosen on SciFact's training queries
#: (``benchmarks/quality/clicks_dev.py --smoothing``; docs/measured.md)
SMOOTHING = 3.0
#: the LightGBM settings compared (two of ``tune``'s: a click log has a few shown documents
#: per query, and each setting costs a model per cross-validation fit)
SETTINGS = {name: ltr.SETTINGS[name] for name in ("7 leaves", "31 leaves")}
#: the shares of each query's sessions the learning curve refits on
SESSION_SHARES = (0.1, 0.25, 0.5, 1.0)


def _aligned(log: QueryLog, row: tuple[Sequence[str], np.ndarray]) -> np.ndarray:
    """``row``'s feature matrix in the order of ``log``'s candidates."""
    ids, x = row
    if list(ids) == log.doc_ids:
        return x
    where = {d: i for i, d in enumerate(ids)}
    missing = [d for d in log.doc_ids if d not in where]
    if missing:
        raise ValueError(f"query {log.key!r}: no features for documents {missing[:3]}")
    return x[[where[d] for d in log.doc_ids]]


#: the discount of positions 1 to 10
DISCOUNT = 1 / np.log2(np.arange(2, 12))


def _ndcg(scores: np.ndarray, gains: np.ndarray, ideal: float) -> float:
    """:func:`~.counterfactual.counterfactual_ndcg` with the gains' NaN already 0 and
    their ideal DCG given (NaN when it is 0), for the many evaluations of a
    cross-validation."""
    if ideal <= 0:
        return math.nan
    top = np.argsort(-scores, kind="stable")[:10]
    return float(gains[top] @ DISCOUNT[: len(top)]) / ideal


def blend_base(x: np.ndarray, first_stage: bool = True) -> np.ndarray:
    """What a learned model is blended with, as ``tune`` does: the first stage and MiniLM
    (the ``first_stage`` and ``cosine`` columns of a feature matrix), min-max normalised,
    weighted as the default fusion (:data:`rerankit.training.fusion_search.DEFAULT_HYBRID`);
    MiniLM alone with ``first_stage=False`` (a log without first-stage scores)."""
    fs, cos = FEATURES.index("first_stage"), FEATURES.index("cosine")
    if not first_stage:
        return normalize_scores(x[:, cos], "min_max")
    weights = DEFAULT_HYBRID["weights"]
    return weights["first_stage"] * normalize_scores(x[:, fs], "min_max") + weights[
        "embedding"
    ] * normalize_scores(x[:, cos], "min_max")


def carries_first_stage(logs: Mapping[str, QueryLog]) -> bool:
    """Whether the log gave a first-stage score to every candidate of some query (the
    features read them only then, as :func:`~.sessions.log_features` computes them)."""
    return any(
        len(log.first_stage) and not np.isnan(log.first_stage).any() for log in logs.values()
    )


def _feature_names(queries: int, first_stage: bool) -> tuple[str, ...]:
    """:func:`rerankit.training.ltr.feature_set`, less the first-stage features when the
    log carried no first-stage scores (a model reading them would read 0 for every
    document, and warn on every request it serves)."""
    names = ltr.feature_set(queries)
    return names if first_stage else tuple(n for n in names if not n.startswith("first_stage"))


def _labels(
    estimate: np.ndarray, mass: np.ndarray, levels: int, smoothing: float = 0.0
) -> np.ndarray:
    """Graded labels 0..``levels`` of relevance estimates (clicks over expected
    examinations ``mass``), each shrunk towards 0 as clicks over ``mass + smoothing``."""
    smoothed = np.nan_to_num(estimate) * mass / np.maximum(mass + smoothing, 1e-12)
    return np.rint(levels * np.clip(smoothed, 0.0, 1.0)).astype(np.int64)


@dataclass
class _Prepared:
    """Per query: every candidate's features (the model and the blend are normalised over
    all of them, as a pipeline does), the candidates an evaluation ranks (``keep``), their
    scores to blend with and relevance estimates (gains), and the training part: the shown
    documents' features and labels."""

    x: dict[str, np.ndarray]
    keep: dict[str, np.ndarray]
    base: dict[str, np.ndarray]
    gains: dict[str, np.ndarray]
    ideal: dict[str, float]
    train_rows: dict[str, tuple[list[str], np.ndarray]]
    labels: dict[str, dict[str, int]]


def _prepare(
    logs: Mapping[str, QueryLog],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]],
    theta: np.ndarray,
    clip: float,
    levels: int,
    evaluate_on: str,
    evaluate: Mapping[str, QueryLog] | None = None,
    first_stage: bool = True,
    smoothing: float = 0.0,
) -> _Prepared:
    """Labels from ``logs`` (smoothed, see :func:`_labels`); gains from ``evaluate``
    (default: the same logs), over the documents it showed (``evaluate_on="shown"``) or
    over every candidate (``"all"``)."""
    out = _Prepared({}, {}, {}, {}, {}, {}, {})
    for key, log in logs.items():
        x = _aligned(log, rows[key])
        estimate, mass = ips_relevance(log, theta, clip=clip)
        shown = np.flatnonzero(mass > 0)
        ids = [log.doc_ids[i] for i in shown]
        out.train_rows[key] = (ids, x[shown])
        labels = _labels(estimate[shown], mass[shown], levels, smoothing)
        out.labels[key] = dict(zip(ids, labels.tolist(), strict=True))
        if evaluate is not None:
            estimate, mass = ips_relevance(evaluate[key], theta, clip=clip)
        keep = np.flatnonzero(mass > 0) if evaluate_on == "shown" else np.arange(len(x))
        out.x[key], out.keep[key] = x, keep
        gains = np.nan_to_num(estimate[keep], nan=0.0)
        out.base[key], out.gains[key] = blend_base(x, first_stage)[keep], gains
        out.ideal[key] = float(np.sort(gains)[::-1][:10] @ DISCOUNT[: min(10, len(gains))])
    return out


def _options(
    data: _Prepared,
    *,
    settings: Mapping[str, Mapping[str, Any]],
    trees: Sequence[int],
    blends: Sequence[float],
    seeds: Sequence[int],
    levels: int,
    features: Sequence[str] | None,
    first_stage: bool = True,
) -> Callable[[Sequence[str]], dict[Hashable, Callable[[str], float]]]:
    """The fit of :func:`~rerankit.training.crossval.cross_validate`: boosters per setting
    and seed on the training queries' labels; each option's evaluator scores a query's
    candidates and returns its counterfactual nDCG@10 (the mean over the seeds)."""
    gain = {"label_gain": list(range(levels + 1))}

    def fit_on(qids: Sequence[str]) -> dict[Hashable, Callable[[str], float]]:
        used = [q for q in qids if any(data.labels[q].values())]
        if not used:  # every query with clicks fell in the folds held out
            raise ValueError(
                f"too few clicks to learn from: none of the {len(qids)} training queries of "
                "a cross-validation fold has a click the correction keeps; log more sessions"
            )
        names = list(features or _feature_names(len(used), first_stage))
        columns = feature_columns(names)
        boosters = {
            (label, seed): ltr.fit(
                data.train_rows,
                data.labels,
                used,
                trees=max(trees),
                params={**params, **gain},
                features=names,
                seed=seed,
                cap_leaf_rows=False,  # the settings as given (see SETTINGS)
            )
            for label, params in settings.items()
            for seed in seeds
        }
        memo: dict[tuple[str, int], dict[str, dict[int, np.ndarray]]] = {}
        training = set(used)

        def predicted(q: str, label: str, t: int, seed: int) -> np.ndarray:
            key = (label, seed)
            if key not in memo or q not in memo[key]:  # the queries not trained on, at once
                rest = [r for r in data.x if r not in training]
                rest = rest if q in rest else [q]
                stacked = np.vstack([data.x[r][:, columns] for r in rest])
                staged = staged_predictions(boosters[key], stacked, trees)
                ends = np.cumsum([len(data.x[r]) for r in rest])[:-1]
                parts = {n: np.split(staged[n], ends) for n in trees}
                memo.setdefault(key, {}).update(
                    {
                        r: {n: min_max(parts[n][i])[data.keep[r]] for n in trees}
                        for i, r in enumerate(rest)
                    }
                )
            return memo[key][q][t]

        def evaluator(label: str, t: int, blend: float) -> Callable[[str], float]:
            def evaluate(q: str) -> float:
                values = [
                    _ndcg(
                        blend * predicted(q, label, t, seed) + (1 - blend) * data.base[q],
                        data.gains[q],
                        data.ideal[q],
                    )
                    for seed in seeds
                ]
                return sum(values) / len(values)

            return evaluate

        return {
            (s, t, b, None): evaluator(s, t, b) for s in settings for t in trees for b in blends
        }

    return fit_on


def learn_from_clicks(
    logs: Mapping[str, QueryLog],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]],
    *,
    propensities: Propensities | Sequence[float] | np.ndarray | str | Path | None = None,
    correct: bool = True,
    folds: int = 5,
    margin: float = crossval.ADOPT_MARGIN,
    settings: Mapping[str, Mapping[str, Any]] = SETTINGS,
    trees: Sequence[int] = ltr.TREES,
    blends: Sequence[float] = ltr.BLENDS,
    seeds: Sequence[int] = (0,),
    features: Sequence[str] | None = None,
    levels: int = LEVELS,
    smoothing: float | None = None,
    clip: float = MIN_PROPENSITY,
    depth: int = 10,
    curve: Sequence[float] | None = SESSION_SHARES,
    keep_learned: bool = False,
    evaluate_on: str = "shown",
    first_stage: bool | None = None,
) -> ClickLearning:
    """Learn a ranker from click logs (:class:`~.sessions.QueryLog` by query key) over
    ``rows``, the features of each query's candidates (``{key: (doc ids, matrix)}``, e.g.
    :func:`~.sessions.log_features`), and judge it against what was served (see the module
    doc). ``propensities``: by position, for positions 1..``depth`` (None:
    :func:`~.propensity.estimate_propensities`; a list, ``"1,0.9,..."`` or a file ``tune``
    wrote: :func:`~.given.read_propensities`);
    ``correct=False``: the naive learner (clicks as labels, not smoothed). ``smoothing``:
    the expected examinations added to each training label's denominator (None:
    :data:`SMOOTHING` when correcting, 0 for the naive learner). ``curve``: the shares of
    each query's sessions the learning curve refits on (None: no curve). The booster is
    fitted on every query when the verdict adopts it, or with ``keep_learned``.
    ``first_stage``: whether the first stage's scores count (None: when the log carried
    them, :func:`carries_first_stage`); without them the model does not read the
    first-stage features, and the blend, in learning and in the pipeline it gives, is
    with MiniLM alone."""
    if evaluate_on not in ("shown", "all"):
        raise ValueError(f"evaluate_on {evaluate_on!r}: expected 'shown' or 'all'")
    if smoothing is None:
        smoothing = SMOOTHING if correct else 0.0
    if not (isinstance(smoothing, (int, float)) and math.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(
            f"smoothing must be a number >= 0 (expected examinations), got {smoothing!r}"
        )
    missing = [k for k in logs if k not in rows]
    if missing:
        raise ValueError(f"no features for {len(missing)} logged queries (e.g. {missing[0]!r})")
    if first_stage is None:
        first_stage = carries_first_stage(logs)
    prop = as_propensities(propensities, logs, rows, depth, correct)
    data = _prepare(
        logs, rows, prop.values, clip, levels, evaluate_on, None, first_stage, smoothing
    )
    qids = [q for q in logs if not math.isnan(counterfactual_ndcg(data.base[q], data.gains[q]))]
    labelled = sum(any(data.labels[q].values()) for q in qids)
    if labelled < crossval.MIN_QUERIES:
        raise ValueError(
            f"too few clicks to learn from: {labelled} of the {len(logs)} logged queries have "
            f"a click in the first {depth} positions that the correction keeps; learning "
            f"needs at least {crossval.MIN_QUERIES}, and many sessions each"
        )
    gains = {q: ips_relevance(logs[q], prop.values, clip=clip)[0] for q in qids}
    served = {q: served_ndcg(logs[q], gains[q]) for q in qids}
    fit = _options(
        data,
        settings=settings,
        trees=trees,
        blends=blends,
        seeds=seeds,
        levels=levels,
        features=features,
        first_stage=first_stage,
    )
    cv = crossval.cross_validate(qids, fit, k=folds)
    verdict = crossval.verdict(cv, served, margin=margin)
    names = tuple(features or _feature_names(len(qids), first_stage))
    points: list[tuple[float, float]] = []
    if curve:
        points = _session_curve(
            logs,
            rows,
            prop.values,
            cv,
            curve,
            clip,
            levels,
            settings,
            names,
            evaluate_on,
            first_stage,
            smoothing,
        )
    booster = None
    if verdict.adopt or keep_learned:
        booster = _fit_chosen(data, qids, cv.best, settings, levels, names)
    return ClickLearning(
        propensities=prop,
        corrected=correct,
        cv=cv,
        verdict=verdict,
        option=cv.best,  # type: ignore[arg-type]
        booster=booster,
        features=names,
        curve=points,
        queries=len(qids),
        sessions=sum(logs[q].sessions for q in logs),
        first_stage=first_stage,
    )


def _fit_chosen(
    data: _Prepared,
    qids: Sequence[str],
    option: Hashable,
    settings: Mapping[str, Mapping[str, Any]],
    levels: int,
    names: Sequence[str],
) -> Any:
    """The booster of an option (its setting and number of trees) on the ``qids`` labels."""
    setting, trees, _, _ = option  # type: ignore[misc]
    params = {**settings[setting], "label_gain": list(range(levels + 1))}
    fit = {"trees": trees, "params": params, "features": list(names), "cap_leaf_rows": False}
    return ltr.fit(data.train_rows, data.labels, qids, **fit)


def _session_curve(
    logs: Mapping[str, QueryLog],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]],
    theta: np.ndarray,
    cv: crossval.CrossValidation,
    shares: Sequence[float],
    clip: float,
    levels: int,
    settings: Mapping[str, Mapping[str, Any]],
    names: Sequence[str],
    evaluate_on: str,
    first_stage: bool = True,
    smoothing: float = 0.0,
) -> list[tuple[float, float]]:
    """Cross-validated counterfactual nDCG@10 of the chosen option refitted on the first
    ``share`` of each training query's sessions (each held-out query scored on all of its
    own): ``(mean sessions per query used, mean nDCG@10)`` per share, once for shares
    that take the same sessions of every query (few sessions a query)."""
    blend = cv.best[2]
    k = max(cv.fold_of.values()) + 1
    out = []
    done: set[tuple[int, ...]] = set()
    for share in shares:
        sizes = tuple(max(1, math.ceil(share * log.sessions)) for log in logs.values())
        if sizes in done:  # few sessions: this share takes the same sessions as another
            continue
        done.add(sizes)
        heads = {q: log.head(n) for (q, log), n in zip(logs.items(), sizes, strict=True)}
        data = _prepare(heads, rows, theta, clip, levels, evaluate_on, logs, first_stage, smoothing)
        values = {}
        for f in range(k):
            train = [q for q, g in cv.fold_of.items() if g != f and any(data.labels[q].values())]
            booster = _fit_chosen(data, train, cv.best, settings, levels, names)
            columns = feature_columns(list(names))
            for q, g in cv.fold_of.items():
                if g == f:
                    s = min_max(booster.predict(data.x[q][:, columns]))[data.keep[q]]
                    values[q] = counterfactual_ndcg(
                        blend * s + (1 - blend) * data.base[q], data.gains[q]
                    )
        used = statistics.fmean(heads[q].sessions for q in cv.fold_of)
        out.append((used, statistics.fmean(values.values())))
    return out
