"""The learned scorer: a LightGBM lambdarank model (trained by ``rerankit tune --method
ltr``, see :mod:`rerankit.training.ltr`) over rerankit's signals.

:func:`features` turns a query and its candidates into one row per candidate
(:data:`FEATURES`): the first-stage score (raw, normalised within the list, rank), the
bundled embedding's cosine (raw, gap to the best, rank), BM25 with the candidates' idf (raw
and normalised), BM25 with background idf (query-normalised), query-term coverage, document
length, a dense pseudo-relevance-feedback cosine (the query plus half the mean of the three
documents the calibrated hybrid ranks first), the calibrated hybrid's own logit and the
cosine of the document's best passage. :class:`LearnedScorer` loads a model file and scores
candidates; :meth:`LearnedScorer.contributions` gives each feature's share of a score
(LightGBM's ``pred_contrib``). ``lightgbm`` is the ``learn`` extra.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._threads import in_thread
from ..calibration import Calibration
from ..documents import FIRST_STAGE_SCORE, PASS_FIRST_STAGE
from ..errors import no_such_file
from ..normalize import normalize_scores
from ..text.analysis import Analyzer
from ..types import Document
from .base import ScoreBatch
from .coverage import CoverageScorer
from .embedding import EmbeddingScorer
from .lexical import BM25Scorer
from .prf import feedback_cosines
from .recipe import HYBRID_BM25, background_bm25

__all__ = [
    "BACKGROUND_BM25",
    "FEATURES",
    "HYBRID_LOGIT",
    "PASSAGE_FEATURE",
    "PRF_ALPHA",
    "PRF_TOP",
    "LearnedScorer",
    "Signals",
    "feature_columns",
    "features",
    "min_max",
    "rank_share",
    "trained_embedding",
]


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


class Signals:
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


def rank_share(x: np.ndarray) -> np.ndarray:
    """Each value's rank (1 = highest) over the list size."""
    order = np.argsort(-x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    return ranks / len(x)


def features(
    signals: Signals,
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
            rank_share(fs) if first_stage is not None else np.full(n, 0.5),
            cos,
            cos - cos.max(),
            rank_share(cos),
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


def feature_columns(names: Sequence[str]) -> list[int]:
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown features {unknown}; this version has {list(FEATURES)}")
    return [FEATURES.index(n) for n in names]


def min_max(x: np.ndarray) -> np.ndarray:
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
            raise ValueError(no_such_file(self.path, "the learned ranker's model file"))
        self.name = name
        self._embedding = embedding
        #: the embedding model the features come from, when named (given, or the model's
        #: report's; None: a scorer given, or the bundled one): part of the scorer's
        #: identity in a cache key, as the model file is
        self.embedding_model: str | None = (
            str(embedding)
            if isinstance(embedding, (str, Path))
            else trained_embedding(self.path)
            if embedding is None
            else None
        )
        self._booster: Any = None
        self._signals: Signals | None = None
        self._names: tuple[str, ...] = FEATURES
        self._columns: list[int] = list(range(len(FEATURES)))

    def _ready(self) -> tuple[Any, Signals]:
        if self._booster is None:
            lgb = require("lightgbm", "LearnedScorer")
            booster = lgb.Booster(model_file=str(self.path))
            names = tuple(booster.feature_name())
            if not set(names) <= set(FEATURES):
                raise ValueError(
                    f"{self.path}: trained on features this version does not compute: "
                    f"{sorted(set(names) - set(FEATURES))}"
                )
            self._names, self._columns = names, feature_columns(names)
            self._booster = booster
            self._signals = Signals(self.embedding_model or self._embedding)
        assert self._signals is not None
        return self._booster, self._signals

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features the model reads (all of :data:`FEATURES` or a subset)."""
        self._ready()
        return self._names

    def matrix(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        """The feature rows of ``docs`` for ``query`` (the model's features only)."""
        return self._matrix(query, docs)[0]

    def _matrix(self, query: str, docs: Sequence[Document]) -> tuple[np.ndarray, int]:
        """:meth:`matrix`, and how many of ``docs`` have no usable first-stage score."""
        _, signals = self._ready()
        values = [d.metadata.get(FIRST_STAGE_SCORE) for d in docs]
        absent = sum(
            not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
            for v in values
        )
        x = features(
            signals, query, [d.text for d in docs], None if absent else values, names=self._names
        )
        return x[:, self._columns], absent

    def _first_stage_warning(self, absent: int, total: int) -> list[str]:
        """A warning when the model reads the first stage and ``absent`` of ``total``
        documents lack it."""
        if not absent or not any(f.startswith("first_stage") for f in self._names):
            return []
        which = "every document" if absent == total else f"{absent} of {total} documents"
        return [
            f"scorer {self.name!r}: the model reads the retriever's score, and {which} came "
            f"without {FIRST_STAGE_SCORE!r}, so it counts as 0 for all (pass it: "
            f"{PASS_FIRST_STAGE})"
        ]

    def score_texts(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        booster, _ = self._ready()
        return np.asarray(booster.predict(self.matrix(query, docs)), dtype=np.float64)

    def score_batch(self, query: str, docs: Sequence[Document]) -> ScoreBatch:
        """Scores with each feature's value and contribution (``parts``, for explain())."""
        booster, _ = self._ready()
        x, absent = self._matrix(query, docs)
        shares = np.asarray(booster.predict(x, pred_contrib=True), dtype=np.float64)
        parts = {f: (x[:, i], shares[:, i]) for i, f in enumerate(self._names)}
        parts["bias"] = (np.ones(len(docs)), shares[:, -1])
        warnings = self._first_stage_warning(absent, len(docs))
        return ScoreBatch(values=shares.sum(axis=1), parts=parts, warnings=warnings)

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
