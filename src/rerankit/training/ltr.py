"""Learning to rank from relevance judgments: :func:`train` fits a LightGBM lambdarank
model on a training split's candidates (the features of :mod:`rerankit.scorers.learned`),
with monotone constraints, small-leaf settings and, under :data:`FEW_QUERIES` training
queries, only :data:`CORE_FEATURES`; :func:`options` is the fit that cross-validation
(:mod:`rerankit.training.crossval`) compares with the default. ``lightgbm`` is the
``learn`` extra.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from ..eval.metrics import ndcg_at_k
from ..scorers.learned import FEATURES, feature_columns, min_max
from .ltr_limits import supported

__all__ = [
    "BLENDS",
    "CORE_FEATURES",
    "DENOISE_TOP",
    "FEW_QUERIES",
    "MONOTONE",
    "SETTINGS",
    "TREES",
    "Option",
    "denoise",
    "feature_set",
    "fit",
    "fit_option",
    "importance",
    "judged_candidates",
    "options",
    "save",
    "train",
]


#: the direction each feature can only push a score in (LightGBM's monotone constraints:
#: +1 more is better, -1 less is better, 0 free), so a small training set cannot learn
#: that a higher BM25 score or cosine makes a document less relevant
MONOTONE = {
    "first_stage": 1,
    "first_stage_norm": 1,
    "first_stage_rank": -1,
    "cosine": 1,
    "cosine_gap": 1,
    "cosine_rank": -1,
    "bm25": 1,
    "bm25_norm": 1,
    "bm25_background": 1,
    "coverage": 1,
    "log_length": 0,
    "prf_cosine": 1,
    "hybrid_logit": 1,
    "passage_cosine": 1,
}


#: LightGBM objectives that score each candidate alone (a grade scaled to [0, 1] is its
#: target), not the order of a query's candidates
POINTWISE = ("cross_entropy", "xentropy")


#: the features a model trained on few queries uses (see :func:`feature_set`)
CORE_FEATURES = (
    "first_stage_norm",
    "cosine",
    "bm25_norm",
    "bm25_background",
    "coverage",
    "hybrid_logit",
    "passage_cosine",
)


#: under this many training queries a model uses :data:`CORE_FEATURES` only
FEW_QUERIES = 100


def feature_set(queries: int) -> tuple[str, ...]:
    """The features a model trained on ``queries`` queries uses: all of :data:`FEATURES`,
    or :data:`CORE_FEATURES` under :data:`FEW_QUERIES` queries."""
    return FEATURES if queries >= FEW_QUERIES else CORE_FEATURES


def _params(params: Mapping[str, Any] | None, names: Sequence[str], seed: int) -> dict[str, Any]:
    return {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "learning_rate": 0.05,
        "num_leaves": 15,
        "min_data_in_leaf": 50,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "lambdarank_truncation_level": 20,
        "monotone_constraints": [MONOTONE[n] for n in names],
        "monotone_constraints_method": "advanced",
        "seed": seed,
        "deterministic": True,
        "num_threads": 1,
        "verbose": -1,
        **dict(params or {}),
    }


def _dataset(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    columns: Sequence[int],
    judged_only: bool = False,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    xs, ys, groups = [], [], []
    for q in qids:
        ids, x = rows[q]
        judged = qrels.get(q, {})
        if judged_only:
            keep = [i for i, d in enumerate(ids) if d in judged]
            if not keep:
                continue
            ids, x = [ids[i] for i in keep], x[keep]
        xs.append(x[:, columns])
        ys.append([max(0, int(judged.get(d, 0))) for d in ids])
        groups.append(len(ids))
    if not xs:
        raise ValueError("learning to rank needs training queries with judged candidates")
    return np.vstack(xs), np.concatenate(ys), groups


def judged_candidates(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    default: Mapping[str, np.ndarray],
) -> tuple[dict[str, tuple[list[str], np.ndarray]], dict[str, np.ndarray]]:
    """``rows`` (query -> candidate ids, feature matrix) and ``default`` (query -> the
    default's scores of those candidates) cut to the candidates ``qrels`` names, in their
    order; a query with none is left out. For labels that judged only each query's top few
    (``rerankit label``), learning *and* cross-validation use these (nDCG over the judged
    candidates only, the "condensed list" of IR evaluation with incomplete judgments):
    ranking every candidate would reward a ranker for keeping the first stage's top few on
    top, where all the labels are, false positives included, and the comparison with the
    default would favour whatever leans on the first stage."""
    out_rows, out_default = {}, {}
    for q, (ids, x) in rows.items():
        judged = qrels.get(q, {})
        keep = [i for i, d in enumerate(ids) if d in judged]
        if keep:
            out_rows[q] = ([ids[i] for i in keep], x[keep])
            out_default[q] = np.asarray(default[q])[keep]
    return out_rows, out_default


def fit(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    *,
    trees: int,
    params: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
    seed: int = 0,
    judged_only: bool = False,
    cap_leaf_rows: bool = True,
) -> Any:
    """A lambdarank booster of ``trees`` trees fitted on the ``qids`` queries of ``rows``
    (query -> candidate ids, :data:`FEATURES` matrix), using the ``features`` columns,
    with :data:`MONOTONE` constraints. ``params`` override the LightGBM parameters.
    ``judged_only`` trains on the candidates ``qrels`` names (0 included) and leaves the
    unjudged out, instead of taking them as non-relevant: right for labels that judged
    only each query's top few (``rerankit label``), where a relevant document further
    down would otherwise be taught as a negative. ``cap_leaf_rows``: lower the setting's
    ``min_data_in_leaf`` to what the rows allow (:func:`.ltr_limits.supported`), so that a
    small training set still splits; learning from clicks keeps its settings as given."""
    lgb = require("lightgbm", "learning to rank")
    qids = [q for q in qids if len(rows[q][0])]
    if not qids:
        raise ValueError("learning to rank needs training queries with candidates")
    names = list(features)
    x, y, g = _dataset(rows, qrels, qids, feature_columns(names), judged_only)
    settings = _params(params, names, seed)
    if cap_leaf_rows:
        settings = supported(settings, x.shape[0])  # leaves it can grow
    if settings["objective"] in POINTWISE:  # grades as probabilities of relevance
        y = y / max(1, int(y.max()))
        settings["metric"] = settings["objective"]  # nDCG wants whole grades
    train_set = lgb.Dataset(x, y, group=g, feature_name=names)
    if x.shape[0] >= 20_000 and not (params and "num_threads" in params):
        settings["num_threads"] = 0  # every core; small sets train faster on one
    return lgb.train(settings, train_set, num_boost_round=trees)


def train(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    valid: set[str],
    seed: int = 0,
    rounds: int = 1000,
    params: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
) -> tuple[Any, dict[str, Any]]:
    """A lambdarank booster fitted on ``rows`` (query -> candidate ids, feature matrix) but
    the ``valid`` queries, stopped early on those (nDCG@10). Returns the booster and a report
    (best iteration, validation nDCG@10, feature importance by gain). ``params`` override
    the LightGBM parameters. (``rerankit tune`` chooses the settings and the number of
    trees by cross-validation instead: :func:`options`.)"""
    lgb = require("lightgbm", "learning to rank")
    fit_ids = [q for q in rows if q not in valid and len(rows[q][0])]
    valid_ids = [q for q in rows if q in valid and len(rows[q][0])]
    if not fit_ids or not valid_ids:
        raise ValueError("learning to rank needs training queries and held-out queries")
    names = list(features)
    columns = feature_columns(names)
    x, y, g = _dataset(rows, qrels, fit_ids, columns)
    vx, vy, vg = _dataset(rows, qrels, valid_ids, columns)
    train_set = lgb.Dataset(x, y, group=g, feature_name=names)
    valid_set = lgb.Dataset(vx, vy, group=vg, reference=train_set)
    booster = lgb.train(
        supported(_params(params, names, seed), x.shape[0]),
        train_set,
        num_boost_round=rounds,
        valid_sets=[valid_set],
        callbacks=[lgb.early_stopping(100, first_metric_only=True, verbose=False)],
    )
    report = {
        "best_iteration": int(booster.best_iteration),
        "valid_ndcg@10": float(booster.best_score["valid_0"]["ndcg@10"]),
        "importance": importance(booster),
        "queries": {"fit": len(fit_ids), "held_out": len(valid_ids)},
    }
    return booster, report


def importance(booster: Any) -> dict[str, float]:
    """Each feature's share of the model's total gain."""
    gain = booster.feature_importance("gain")
    total = float(gain.sum()) or 1.0
    return {f: float(v) / total for f, v in zip(booster.feature_name(), gain, strict=True)}


#: the LightGBM settings ``rerankit tune --method ltr`` compares by cross-validation, from
#: heavily regularised (few leaves, much data per leaf) to the large-data setting
SETTINGS: dict[str, dict[str, Any]] = {
    "3 leaves": {"num_leaves": 3, "min_data_in_leaf": 100},
    "7 leaves": {"num_leaves": 7, "min_data_in_leaf": 50},
    "15 leaves": {"num_leaves": 15, "min_data_in_leaf": 50},
    "31 leaves": {"num_leaves": 31, "min_data_in_leaf": 20, "learning_rate": 0.02},
}


#: numbers of trees compared (each setting is trained once, to the largest)
TREES = (25, 50, 100, 200, 400)


#: shares of the learned model's min-max normalised score in a blend with the default
#: (1.0: the learned model alone)
BLENDS = (0.25, 0.5, 0.75, 1.0)


#: an option of :func:`options`: (setting, number of trees, blend, denoise: ``None`` or
#: the ``top`` of :func:`denoise` applied to the training labels)
Option = tuple[str, int, float, int | None]


#: :func:`denoise`'s default: a judged-relevant candidate that an out-of-fold model ranks
#: below the 5th of its query's judged candidates is taken as the judge's mistake
DENOISE_TOP = 5


def denoise(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    *,
    top: int = DENOISE_TOP,
    folds: int = 2,
    features: Sequence[str] | None = None,
    seed: int = 0,
) -> dict[str, dict[str, int]]:
    """The labels of the ``qids`` queries with the relevant labels an out-of-fold model
    contradicts left out: ``qids`` split in ``folds`` by a hash of the id, a small model (7
    leaves, 100 trees) fitted on the other folds' labels ranks each query's judged
    candidates, and a candidate judged relevant that it ranks below the ``top``-th is
    dropped (neither relevant nor not: unjudged). Non-relevant labels are kept.

    For labels from an LLM judge (``rerankit label``): a judge's false positives are
    documents that nothing else about them marks as relevant, so a model fitted on the rest
    of the labels ranks them low, while the judge's true positives mostly rank high. This
    is the consistency filtering of synthetic training data (Promptagator keeps a generated
    pair only when a retriever trained on the rest finds it). It costs a little where the
    judge was right about a document the model ranks low, so ``tune`` cross-validates with
    and without it."""
    names = list(features or feature_set(len(qids)))
    columns = feature_columns(names)
    present = [q for q in qids if q in rows and any(d in qrels.get(q, {}) for d in rows[q][0])]
    out = {q: dict(qrels.get(q, {})) for q in qids}
    if len(present) < 2 * folds:
        return out
    fold_of = {q: hashlib.sha256(f"denoise:{q}".encode()).digest()[0] % folds for q in present}
    for f in range(folds):
        others = [q for q in present if fold_of[q] != f]
        if not others:
            continue
        booster = fit(
            rows,
            qrels,
            others,
            trees=100,
            params=SETTINGS["7 leaves"],
            features=names,
            seed=seed,
            judged_only=True,
        )
        for q in present:
            if fold_of[q] != f:
                continue
            ids, x = rows[q]
            judged = qrels[q]
            keep = [i for i, d in enumerate(ids) if d in judged]
            scores = booster.predict(x[keep][:, columns])
            order = np.argsort(-scores, kind="stable")
            for position, i in enumerate(order):
                d = ids[keep[i]]
                if position >= top and judged[d] > 0:
                    del out[q][d]
    return out


def options(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    default: Mapping[str, np.ndarray],
    settings: Mapping[str, Mapping[str, Any]] = SETTINGS,
    trees: Sequence[int] = TREES,
    blends: Sequence[float] = BLENDS,
    seeds: Sequence[int] = (0,),
    features: Sequence[str] | None = None,
    denoise_tops: Sequence[int | None] = (None,),
) -> Callable[[Sequence[str]], dict[Option, Callable[[str], float]]]:
    """The fit of :func:`rerankit.training.crossval.cross_validate` for learning to rank: on
    training query ids, one booster per setting and seed, and per (setting, number of
    trees, blend) an evaluator of a query's nDCG@10 (the mean over the seeds), where the
    blend mixes the model's min-max normalised score with ``default`` (query id -> the
    default pipeline's scores of its candidates, in [0, 1]) as
    ``blend * model + (1 - blend) * default``. The features are ``features``, or
    :func:`feature_set` of the number of training queries. For labels of each query's top
    few, pass :func:`judged_candidates`' rows and scores, so that fitting and evaluation
    both see the judged candidates only. ``denoise_tops`` adds, for each ``top`` but
    ``None``, the same options fitted on :func:`denoise`'s labels of the training queries
    (evaluated, like every option, on the labels as given)."""

    def fit_on(qids: Sequence[str]) -> dict[Option, Callable[[str], float]]:
        names = list(features or feature_set(len(qids)))
        columns = feature_columns(names)
        labels = {
            top: qrels
            if top is None
            else {**qrels, **denoise(rows, qrels, qids, top=top, features=names)}
            for top in denoise_tops
        }
        boosters = {
            (label, seed, top): fit(
                rows,
                labels[top],
                qids,
                trees=max(trees),
                params=params,
                features=names,
                seed=seed,
            )
            for label, params in settings.items()
            for seed in seeds
            for top in denoise_tops
        }
        memo: dict[tuple[str, str, int, int, int | None], np.ndarray] = {}

        def predicted(q: str, label: str, t: int, seed: int, top: int | None) -> np.ndarray:
            key = (q, label, t, seed, top)
            if key not in memo:
                x = rows[q][1][:, columns]
                memo[key] = min_max(boosters[label, seed, top].predict(x, num_iteration=t))
            return memo[key]

        def evaluator(option: Option) -> Callable[[str], float]:
            label, t, blend, top = option

            def evaluate(q: str) -> float:
                ids, judged = rows[q][0], qrels.get(q, {})
                if not ids:
                    return 0.0
                values = []
                for seed in seeds:
                    fused = blend * predicted(q, label, t, seed, top) + (1 - blend) * default[q]
                    order = np.argsort(-fused, kind="stable")
                    values.append(ndcg_at_k([ids[i] for i in order], judged, 10))
                return float(np.mean(values))

            return evaluate

        return {
            (s, t, b, top): evaluator((s, t, b, top))
            for s in settings
            for t in trees
            for b in blends
            for top in denoise_tops
        }

    return fit_on


def fit_option(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    option: Option,
    *,
    features: Sequence[str] | None = None,
    seed: int = 0,
    settings: Mapping[str, Mapping[str, Any]] = SETTINGS,
) -> Any:
    """The booster of an :func:`options` option (its setting, from ``settings`` as there,
    and number of trees; the blend is applied when ranking), fitted on the ``qids``
    queries, on :func:`denoise`'s labels when the option says so."""
    setting, trees, _, top = option
    names = list(features or feature_set(len(qids)))
    if top is not None:
        qrels = {**qrels, **denoise(rows, qrels, qids, top=top, features=names)}
    params = settings[setting]
    return fit(rows, qrels, qids, trees=trees, params=params, features=names, seed=seed)


def save(booster: Any, path: str | Path, report: Mapping[str, Any]) -> Path:
    """The model file, and its report beside it (``.json``); a missing folder is made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(path), num_iteration=booster.best_iteration)
    path.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path
