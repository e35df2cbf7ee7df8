"""Learning to rank from relevance judgments: LightGBM lambdarank over rerankit's signals.

:func:`features` turns a query and its candidates into one row per candidate
(:data:`FEATURES`): the first-stage score (raw, normalised within the list, rank), the
bundled embedding's cosine (raw, gap to the best, rank), BM25 with the candidates' idf (raw
and normalised), BM25 with background idf (query-normalised), query-term coverage, document
length, a dense pseudo-relevance-feedback cosine (the query plus half the mean of the three
documents the calibrated hybrid ranks first), the calibrated hybrid's own logit and the
cosine of the document's best passage.
:func:`train` fits a lambdarank model on a training split's candidates with early stopping
on held-out training queries; :class:`LearnedScorer` loads the model file and scores
candidates, and :meth:`LearnedScorer.contributions` gives each feature's share of a score
(LightGBM's ``pred_contrib``). ``lightgbm`` is the ``learn`` extra.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._optional import require
from ._threads import in_thread
from .calibration import Calibration
from .documents import FIRST_STAGE_SCORE
from .eval.metrics import ndcg_at_k
from .normalize import normalize_scores
from .rerankers.hybrid import HYBRID_BM25, background_bm25
from .scorers.base import ScoreBatch
from .scorers.coverage import CoverageScorer
from .scorers.embedding import EmbeddingScorer
from .scorers.lexical import Analyzer, BM25Scorer
from .scorers.prf import feedback_cosines
from .types import Document

__all__ = ["FEATURES", "LearnedScorer", "features", "train"]

FEATURES = (
    "first_stage",
    "first_stage_norm",
    "first_stage_rank",
    "cosine",
    "cosine_gap",
    "cosine_rank",
    "bm25",
    "bm25_norm",
    "bm25_background",
    "coverage",
    "log_length",
    "prf_cosine",
    "hybrid_logit",
    "passage_cosine",
)
PRF_TOP, PRF_ALPHA = 3, 0.5
#: how the ``passage_cosine`` feature reads a document: its best passage of about 48 words,
#: each after the first starting with the document's first 20 words (fixed, like
#: :data:`HYBRID_LOGIT`, so a trained model's features never change)
PASSAGE_FEATURE: dict[str, int] = {"words": 48, "lead": 20}
#: How the ``hybrid_logit`` feature fuses the whole-document cosine and ``bm25_background``:
#: the calibrated hybrid's first (whole-document) fit, kept fixed so that a trained model's
#: features never change under it.
HYBRID_LOGIT: dict[str, Any] = {
    "weights": {"embedding": 0.5, "bm25_background": 0.5},
    "calibration": {
        "embedding": {"slope": 7.012624, "intercept": -5.935396},
        "bm25_background": {"slope": 7.285328, "intercept": -6.073978},
    },
}


#: how the ``bm25_background`` feature reads the texts (the first calibrated hybrid's
#: setting, kept fixed like :data:`HYBRID_LOGIT`)
BACKGROUND_BM25: dict[str, float] = {"avgdl": 400.0, "query_normalization": 1.0}


class _Signals:
    """The scorers the features come from (built once, models loaded lazily)."""

    def __init__(self, embedding: Any = None, language: str = "en") -> None:
        """``embedding``: an embedding scorer, a model id or folder, or None (the bundled
        all-MiniLM-L6-v2)."""

        self.analyzer = Analyzer(language=language)
        if embedding is None or isinstance(embedding, str):
            embedding = EmbeddingScorer(*(() if embedding is None else (embedding,)))
        self.embedding = embedding
        self.passages = (
            embedding.with_passages(PASSAGE_FEATURE["words"], lead=PASSAGE_FEATURE["lead"])
            if hasattr(embedding, "with_passages")
            else None
        )
        self.bm25 = BM25Scorer(analyzer=self.analyzer, **HYBRID_BM25)
        self.background = background_bm25(self.analyzer, **BACKGROUND_BM25)
        self.coverage = CoverageScorer(analyzer=self.analyzer)
        self.calibration = HYBRID_LOGIT
        by_role = HYBRID_LOGIT["calibration"]
        self.cos_calibration = Calibration.parse(by_role["embedding"])
        self.bm25_calibration = Calibration.parse(by_role["bm25_background"])


def _rank_share(x: np.ndarray) -> np.ndarray:
    """Each value's rank (1 = highest) over the list size."""
    order = np.argsort(-x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    return ranks / len(x)


def features(
    signals: _Signals,
    query: str,
    texts: Sequence[str],
    first_stage: Sequence[float] | None = None,
    *,
    names: Sequence[str] = FEATURES,
) -> np.ndarray:
    """One row of :data:`FEATURES` per text (``first_stage`` scores 0 when not given). A
    feature left out of ``names`` is not computed where that saves work (its column then
    holds the cosine: only columns in ``names`` are meant to be read)."""
    n = len(texts)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    fs = np.zeros(n) if first_stage is None else np.asarray(first_stage, dtype=np.float64)
    emb = signals.embedding
    q = emb.encode_queries([query])[0].astype(np.float64)
    docs = np.asarray(emb.encode_documents(list(texts)), dtype=np.float64)
    qn = q / (np.linalg.norm(q) or 1.0)
    dn = docs / np.clip(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12, None)
    cos = dn @ qn
    bm25 = signals.bm25.score_texts(query, texts)
    background = signals.background.score_texts(query, texts)
    weights = signals.calibration["weights"]
    logit = weights["embedding"] * signals.cos_calibration.logit(cos) + weights[
        "bm25_background"
    ] * signals.bm25_calibration.logit(background)
    top = np.argsort(-logit, kind="stable")[:PRF_TOP]  # the calibrated hybrid's best
    prf = feedback_cosines(qn, dn, top, PRF_ALPHA)
    lengths = signals.analyzer.analyze(list(texts)).lengths.astype(np.float64)
    passage = (
        signals.passages.score_texts(query, texts)
        if signals.passages is not None and "passage_cosine" in names
        else cos
    )
    return np.column_stack(
        [
            fs,
            normalize_scores(fs, "min_max"),
            _rank_share(fs) if first_stage is not None else np.full(n, 0.5),
            cos,
            cos - cos.max(),
            _rank_share(cos),
            bm25,
            normalize_scores(bm25, "min_max"),
            background,
            signals.coverage.score_texts(query, texts),
            np.log1p(lengths),
            prf,
            logit,
            passage,
        ]
    )


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


def _columns(names: Sequence[str]) -> list[int]:
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown features {unknown}; this version has {list(FEATURES)}")
    return [FEATURES.index(n) for n in names]


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
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    xs, ys, groups = [], [], []
    for q in qids:
        ids, x = rows[q]
        xs.append(x[:, columns])
        ys.append([max(0, int(qrels.get(q, {}).get(d, 0))) for d in ids])
        groups.append(len(ids))
    return np.vstack(xs), np.concatenate(ys), groups


def fit(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    *,
    trees: int,
    params: Mapping[str, Any] | None = None,
    features: Sequence[str] = FEATURES,
    seed: int = 0,
) -> Any:
    """A lambdarank booster of ``trees`` trees fitted on the ``qids`` queries of ``rows``
    (query -> candidate ids, :data:`FEATURES` matrix), using the ``features`` columns,
    with :data:`MONOTONE` constraints. ``params`` override the LightGBM parameters."""
    lgb = require("lightgbm", "learning to rank")
    qids = [q for q in qids if len(rows[q][0])]
    if not qids:
        raise ValueError("learning to rank needs training queries with candidates")
    names = list(features)
    x, y, g = _dataset(rows, qrels, qids, _columns(names))
    train_set = lgb.Dataset(x, y, group=g, feature_name=names)
    settings = _params(params, names, seed)
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
    columns = _columns(names)
    x, y, g = _dataset(rows, qrels, fit_ids, columns)
    vx, vy, vg = _dataset(rows, qrels, valid_ids, columns)
    train_set = lgb.Dataset(x, y, group=g, feature_name=names)
    valid_set = lgb.Dataset(vx, vy, group=vg, reference=train_set)
    booster = lgb.train(
        _params(params, names, seed),
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
#: an option of :func:`options`: (setting, number of trees, blend)
Option = tuple[str, int, float]


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
) -> Callable[[Sequence[str]], dict[Option, Callable[[str], float]]]:
    """The fit of :func:`rerankit.eval.crossval.cross_validate` for learning to rank: on
    training query ids, one booster per setting and seed, and per (setting, number of
    trees, blend) an evaluator of a query's nDCG@10 (the mean over the seeds), where the
    blend mixes the model's min-max normalised score with ``default`` (query id -> the
    default pipeline's scores of its candidates, in [0, 1]) as
    ``blend * model + (1 - blend) * default``. The features are ``features``, or
    :func:`feature_set` of the number of training queries."""

    def fit_on(qids: Sequence[str]) -> dict[Option, Callable[[str], float]]:
        names = list(features or feature_set(len(qids)))
        columns = _columns(names)
        boosters = {
            (label, seed): fit(
                rows, qrels, qids, trees=max(trees), params=params, features=names, seed=seed
            )
            for label, params in settings.items()
            for seed in seeds
        }
        memo: dict[tuple[str, str, int, int], np.ndarray] = {}

        def predicted(q: str, label: str, t: int, seed: int) -> np.ndarray:
            key = (q, label, t, seed)
            if key not in memo:
                x = rows[q][1][:, columns]
                memo[key] = _min_max(boosters[label, seed].predict(x, num_iteration=t))
            return memo[key]

        def evaluator(label: str, t: int, blend: float) -> Callable[[str], float]:
            def evaluate(q: str) -> float:
                ids, judged = rows[q][0], qrels.get(q, {})
                if not ids:
                    return 0.0
                values = []
                for seed in seeds:
                    fused = blend * predicted(q, label, t, seed) + (1 - blend) * default[q]
                    order = np.argsort(-fused, kind="stable")
                    values.append(ndcg_at_k([ids[i] for i in order], judged, 10))
                return float(np.mean(values))

            return evaluate

        return {(s, t, b): evaluator(s, t, b) for s in settings for t in trees for b in blends}

    return fit_on


def _min_max(x: np.ndarray) -> np.ndarray:
    return normalize_scores(np.asarray(x, dtype=np.float64), "min_max")


class LearnedScorer:
    """Scores candidates with a LightGBM model trained by ``rerankit tune --method ltr``
    (extra ``learn``; the embedding model needs ``torch``, or pass an ONNX one). The first
    stage counts only when every document has ``first_stage_score``; otherwise it is 0 for
    all, as the model saw for queries without one. Scores are relative to the request.

    ``embedding``: the embedding the features come from (a scorer, a model id or folder);
    by default the one the model was trained with, as its report (``.json`` beside the
    model file) records, else the bundled all-MiniLM-L6-v2."""

    score_scale = "relative"

    def __init__(self, model: str | Path, *, embedding: Any = None, name: str = "learned") -> None:
        self.path = Path(model)
        if not self.path.is_file():
            raise ValueError(f"model file {self.path} not found")
        self.name = name
        self._embedding = embedding
        self._booster: Any = None
        self._signals: _Signals | None = None
        self._names: tuple[str, ...] = FEATURES
        self._columns: list[int] = list(range(len(FEATURES)))

    def _ready(self) -> tuple[Any, _Signals]:
        if self._booster is None:
            lgb = require("lightgbm", "LearnedScorer")
            booster = lgb.Booster(model_file=str(self.path))
            names = tuple(booster.feature_name())
            if not set(names) <= set(FEATURES):
                raise ValueError(
                    f"{self.path}: trained on features this version does not compute: "
                    f"{sorted(set(names) - set(FEATURES))}"
                )
            self._names, self._columns = names, _columns(names)
            self._booster = booster
            self._signals = _Signals(self._embedding or trained_embedding(self.path))
        assert self._signals is not None
        return self._booster, self._signals

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features the model reads (all of :data:`FEATURES` or a subset)."""
        self._ready()
        return self._names

    def matrix(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        """The feature rows of ``docs`` for ``query`` (the model's features only)."""
        _, signals = self._ready()
        values = [d.metadata.get(FIRST_STAGE_SCORE) for d in docs]
        usable = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        )
        x = features(
            signals, query, [d.text for d in docs], values if usable else None, names=self._names
        )
        return x[:, self._columns]

    def score_texts(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        booster, _ = self._ready()
        return np.asarray(booster.predict(self.matrix(query, docs)), dtype=np.float64)

    def score_batch(self, query: str, docs: Sequence[Document]) -> ScoreBatch:
        """Scores with each feature's value and contribution (``parts``, for explain())."""
        booster, _ = self._ready()
        x = self.matrix(query, docs)
        shares = np.asarray(booster.predict(x, pred_contrib=True), dtype=np.float64)
        parts = {f: (x[:, i], shares[:, i]) for i, f in enumerate(self._names)}
        parts["bias"] = (np.ones(len(docs)), shares[:, -1])
        return ScoreBatch(values=shares.sum(axis=1), parts=parts)

    def contributions(self, query: str, docs: Sequence[Document]) -> list[dict[str, float]]:
        """Each feature's share of each document's score (plus ``bias``); they sum to it."""
        booster, _ = self._ready()
        parts = booster.predict(self.matrix(query, docs), pred_contrib=True)
        return [
            {**dict(zip(self._names, map(float, row[:-1]), strict=True)), "bias": float(row[-1])}
            for row in parts
        ]

    @property
    def embedding(self) -> Any:
        return self._ready()[1].embedding

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        return await in_thread(self.score_batch, query, list(docs))


def trained_embedding(path: str | Path) -> str | None:
    """The embedding model a model file's report names (None: the bundled one)."""
    report = Path(path).with_suffix(".json")
    if not report.is_file():
        return None
    try:
        value = json.loads(report.read_text(encoding="utf-8")).get("embedding_model")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def save(booster: Any, path: str | Path, report: Mapping[str, Any]) -> Path:
    """The model file, and its report beside it (``.json``)."""
    path = Path(path)
    booster.save_model(str(path), num_iteration=booster.best_iteration)
    path.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path
