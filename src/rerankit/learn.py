"""Learning to rank from relevance judgments: LightGBM lambdarank over rerankit's signals.

:func:`features` turns a query and its candidates into one row per candidate
(:data:`FEATURES`): the first-stage score (raw, normalised within the list, rank), the
bundled embedding's cosine (raw, gap to the best, rank), BM25 with the candidates' idf (raw
and normalised), BM25 with background idf (query-normalised), query-term coverage, document
length, a dense pseudo-relevance-feedback cosine (the query plus half the mean of the three
documents the calibrated hybrid ranks first) and the calibrated hybrid's own logit.
:func:`train` fits a lambdarank model on a training split's candidates with early stopping
on held-out training queries; :class:`LearnedScorer` loads the model file and scores
candidates, and :meth:`LearnedScorer.contributions` gives each feature's share of a score
(LightGBM's ``pred_contrib``). ``lightgbm`` is the ``learn`` extra.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._optional import require
from ._threads import in_thread
from .calibration import Calibration
from .documents import FIRST_STAGE_SCORE
from .normalize import normalize_scores
from .scorers.base import ScoreBatch
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
)
PRF_TOP, PRF_ALPHA = 3, 0.5
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


class _Signals:
    """The scorers the features come from (built once, models loaded lazily)."""

    def __init__(self, embedding: Any = None, language: str = "en") -> None:
        """``embedding``: an embedding scorer, a model id or folder, or None (the bundled
        all-MiniLM-L6-v2)."""
        from .rerankers.hybrid import HYBRID_BM25, background_bm25
        from .scorers.coverage import CoverageScorer
        from .scorers.embedding import EmbeddingScorer
        from .scorers.lexical import Analyzer, BM25Scorer

        self.analyzer = Analyzer(language=language)
        if embedding is None or isinstance(embedding, str):
            embedding = EmbeddingScorer(*(() if embedding is None else (embedding,)))
        self.embedding = embedding
        self.bm25 = BM25Scorer(analyzer=self.analyzer, **HYBRID_BM25)
        self.background = background_bm25(self.analyzer)
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
) -> np.ndarray:
    """One row of :data:`FEATURES` per text (``first_stage`` scores 0 when not given)."""
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
        ]
    )


def train(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    valid: set[str],
    seed: int = 0,
    rounds: int = 1000,
    params: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """A lambdarank booster fitted on ``rows`` (query -> candidate ids, feature matrix) but
    the ``valid`` queries, stopped early on those (nDCG@10). Returns the booster and a report
    (best iteration, validation nDCG@10, feature importance by gain). ``params`` override
    the LightGBM parameters (see :data:`GRID` for the ones :func:`choose` tries)."""
    lgb = require("lightgbm", "learning to rank")

    def dataset(qids: list[str]) -> tuple[np.ndarray, np.ndarray, list[int]]:
        xs, ys, groups = [], [], []
        for q in qids:
            ids, x = rows[q]
            xs.append(x)
            ys.append([max(0, int(qrels.get(q, {}).get(d, 0))) for d in ids])
            groups.append(len(ids))
        return np.vstack(xs), np.concatenate(ys), groups

    fit_ids = [q for q in rows if q not in valid and len(rows[q][0])]
    valid_ids = [q for q in rows if q in valid and len(rows[q][0])]
    if not fit_ids or not valid_ids:
        raise ValueError("learning to rank needs training queries and held-out queries")
    x, y, g = dataset(fit_ids)
    vx, vy, vg = dataset(valid_ids)
    params = {
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
        "seed": seed,
        "deterministic": True,
        "num_threads": 0,
        "verbose": -1,
        **dict(params or {}),
    }
    train_set = lgb.Dataset(x, y, group=g, feature_name=list(FEATURES))
    valid_set = lgb.Dataset(vx, vy, group=vg, reference=train_set)
    booster = lgb.train(
        params,
        train_set,
        num_boost_round=rounds,
        valid_sets=[valid_set],
        callbacks=[lgb.early_stopping(100, first_metric_only=True, verbose=False)],
    )
    gain = booster.feature_importance("gain")
    total = float(gain.sum()) or 1.0
    report = {
        "best_iteration": int(booster.best_iteration),
        "valid_ndcg@10": float(booster.best_score["valid_0"]["ndcg@10"]),
        "importance": {f: float(v) / total for f, v in zip(FEATURES, gain, strict=True)},
        "queries": {"fit": len(fit_ids), "held_out": len(valid_ids)},
    }
    return booster, report


#: the LightGBM settings :func:`choose` compares on the held-out training queries
GRID = (
    {"num_leaves": 15, "min_data_in_leaf": 50, "learning_rate": 0.05},
    {"num_leaves": 7, "min_data_in_leaf": 50, "learning_rate": 0.05},
    {"num_leaves": 31, "min_data_in_leaf": 50, "learning_rate": 0.05},
    {"num_leaves": 15, "min_data_in_leaf": 100, "learning_rate": 0.02},
    {"num_leaves": 31, "min_data_in_leaf": 20, "learning_rate": 0.02},
)


def choose(
    rows: Mapping[str, tuple[list[str], np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    valid: set[str],
    seeds: Sequence[int] = (0, 1, 2),
) -> tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]:
    """The :data:`GRID` entry with the best mean held-out nDCG@10 over ``seeds`` (training
    data only), and every entry's mean."""
    table = []
    for params in GRID:
        scores = [
            train(rows, qrels, valid=valid, seed=s, params=params)[1]["valid_ndcg@10"]
            for s in seeds
        ]
        table.append((dict(params), float(np.mean(scores))))
    best = max(table, key=lambda t: t[1])[0]
    return best, table


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

    def _ready(self) -> tuple[Any, _Signals]:
        if self._booster is None:
            lgb = require("lightgbm", "LearnedScorer")
            booster = lgb.Booster(model_file=str(self.path))
            if tuple(booster.feature_name()) != FEATURES:
                raise ValueError(f"{self.path}: trained on other features than this version's")
            self._booster = booster
            self._signals = _Signals(self._embedding or trained_embedding(self.path))
        assert self._signals is not None
        return self._booster, self._signals

    def matrix(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        """The feature rows of ``docs`` for ``query``."""
        _, signals = self._ready()
        values = [d.metadata.get(FIRST_STAGE_SCORE) for d in docs]
        usable = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        )
        return features(signals, query, [d.text for d in docs], values if usable else None)

    def score_texts(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        booster, _ = self._ready()
        return np.asarray(booster.predict(self.matrix(query, docs)), dtype=np.float64)

    def score_batch(self, query: str, docs: Sequence[Document]) -> ScoreBatch:
        """Scores with each feature's value and contribution (``parts``, for explain())."""
        booster, _ = self._ready()
        x = self.matrix(query, docs)
        shares = np.asarray(booster.predict(x, pred_contrib=True), dtype=np.float64)
        parts = {f: (x[:, i], shares[:, i]) for i, f in enumerate(FEATURES)}
        parts["bias"] = (np.ones(len(docs)), shares[:, -1])
        return ScoreBatch(values=shares.sum(axis=1), parts=parts)

    def contributions(self, query: str, docs: Sequence[Document]) -> list[dict[str, float]]:
        """Each feature's share of each document's score (plus ``bias``); they sum to it."""
        booster, _ = self._ready()
        parts = booster.predict(self.matrix(query, docs), pred_contrib=True)
        return [
            {**dict(zip(FEATURES, map(float, row[:-1]), strict=True)), "bias": float(row[-1])}
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
