"""The default offline reranker: a lexical signal and a bi-encoder, fused."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from .. import fusion
from ..documents import FIRST_STAGE_SCORE
from ..errors import ScorerError
from ..normalize import normalize_scores
from ..scorers.base import Scorer
from ..scorers.embedding import DEFAULT_EMBEDDING_MODEL, EmbeddingScorer
from ..scorers.field import FieldScorer
from ..scorers.lexical import BM25Scorer
from ..scorers.recipe import (
    HYBRID_BM25,
    HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT,
    HYBRID_CALIBRATION,
    HYBRID_FIRST_STAGE_WEIGHT,
    HYBRID_TEXT_WEIGHTS,
    READING_DEFAULTS,
    ROLES,
    SCORE_MODES,
    background_bm25,
    check_text_weights,
    proximity_reader,
    reweighted,
)
from ..text.analysis import Analyzer
from ..types import SUM, Document
from .base import Scored, ScoringReranker, run_scorer
from .fused import ALL_FAILED, FusionReranker
from .hybrid_weights import check_weight_options, weight_shares
from .language_note import language_note
from .unread_score import unread_score_note

logger = logging.getLogger(__name__)

__all__ = ["HYBRID_METHOD", "REWEIGHTED_NOTE", "HybridReranker", "relative_hybrid"]

#: how the default ``hybrid`` combines its signals (its recipe: :mod:`rerankit.scorers.recipe`)
HYBRID_METHOD = fusion.ScoreCombinationMethod.WEIGHTED_AVERAGE
#: what ``rerankit check`` adds to the scale of a hybrid given other weights
REWEIGHTED_NOTE = (
    " (weights {weights}: the output calibration was fitted for other weights, so scores in "
    "[0, 1] but no fitted probability; rerankit tune --calibrate fits both to judgments)"
)


class HybridReranker(ScoringReranker):
    """The default offline reranker: lexical signals and a bi-encoder, fused.

    When every document carries a first-stage (retriever) score (``first_stage_score``: name
    your own field with ``first_stage_field=`` when reranking), the hybrid can fuse it too,
    and then its scores are relative to the request: with calibrated scores,
    ``first_stage_weight`` of the min-max normalised first stage and the rest of the min-max
    normalised logit of the texts-only fusion below, which keeps every text signal. Its
    default is 0: on the development pool (BM25 first stages) no weight above 0 kept every
    collection within 0.5 of the texts alone, so by default the texts alone rank and the
    scores stay probabilities; give a weight (0.05 to 0.2) to fuse a retriever that reads
    something the texts do not. With ``scores="relative"``, the first stage takes the place
    of the lexical signals (``first_stage_weight`` default 0.3, the rest the embedding).

    Given texts only, ``scores="calibrated"`` (the default) fuses the embedding's cosine
    of each document's best passage (``passage``: about 48 words, each starting with the
    document's opening words, at most ``max_passages``: 16, or ``HybridReranker(
    EmbeddingScorer(max_passages=64))``; see :class:`~rerankit.scorers.EmbeddingScorer`),
    its cosine of the whole document (``embedding``),
    BM25 whose idf comes from a general word-frequency table of ``language``
    (``bm25_background``: the candidates of a lexical search all contain the query's words,
    so their own statistics miss which words matter) and how often the query's adjacent
    words stand next to each other in the document (``proximity``, read like that BM25),
    each through a fixed calibration
    (:data:`HYBRID_CALIBRATION`, or ``calibration=`` naming the signals it fuses in its
    ``weights``; ``avgdl``, ``query_normalization`` and ``passage_lead`` left out take the
    built-in values; a mapping without ``passage`` reads passages as ``embedding`` when it
    has ``passage_words``, whole documents otherwise): the score estimates P(relevant) and
    depends only on the query and the document, so it means the same in every request
    (``result.score_scale == "probability"``). ``scores="relative"`` adds BM25 with the
    candidates' own idf (``bm25``, which reads which words are rare among these candidates)
    and fuses min-max normalised scores with the whole-document cosine: scores comparable
    only within the request. The calibration fits the bundled all-MiniLM-L6-v2; with
    another embedding model and no ``calibration``, the hybrid falls back to ``relative``
    (fit one with ``rerankit tune --calibrate``). The strategies' names in each result's
    scores and explanation say which mode ran. Text clearly in another language than
    ``language``, or read by the bundled English-only model when it or ``language`` is not
    English, gets a warning naming the language and the fix (:func:`.language_note`).
    ``model`` names the embedding model (a hub id, a model folder, or a folder written by
    ``rerankit export``; an export of the bundled model keeps the calibration).
    ``backend`` says where it runs: ``"auto"`` (the default) runs the bundled model on ONNX
    Runtime in float32 when ``onnxruntime`` is installed (exported once into the cache on
    first use; the same scores as torch within 1e-4, without importing torch), torch
    otherwise; ``"torch"`` and ``"onnx"`` name one; ``quantize="int8"`` runs its int8
    weights on ONNX Runtime (see :class:`~rerankit.scorers.EmbeddingScorer`).

    Which keyword shapes which mode: the calibrated default's weights are its
    ``calibration``'s (:data:`HYBRID_CALIBRATION`: 0.3, 0.15, 0.475 and 0.075 for the
    ``passage``, ``embedding``, ``bm25_background`` and ``proximity`` logits, the numbers
    the documentation quotes); ``weights`` (signal name -> weight) changes some: each named
    signal gets the share of the fused logit it names and those left out share the rest in
    the default's proportions (``{"bm25_background": 0.7}``: 0.171, 0.086, 0.7, 0.043);
    the output calibration was fitted for the calibration's own weights, so with others the
    scores are ``unit`` (in [0, 1], depending on the pair alone, but no fitted probability;
    ``rerankit tune --calibrate`` refits one); a signal weighing 0 is not run (its model
    never loads). It sums logits, so ``combination_method``
    must stay ``"weighted_average"``; ``text_weights`` given to it is an error. ``text_weights``
    (default ``(0.2, 0.2)``) weigh ``scores="relative"``'s BM25 with the candidates' idf
    and BM25 with background idf, the embedding taking the rest (0.6), combined by
    ``combination_method`` (``"rrf"``, ``"comb_sum"``, ...: :mod:`rerankit.fusion`) over
    scores normalised by ``normalization_method`` (``"min_max"``, ``"z_score"``, ...).
    ``normalization_method`` also normalises the first stage and the texts' fused logit
    before a calibrated hybrid mixes them by ``first_stage_weight``.
    ``use_first_stage=False`` never reads first-stage scores.
    """

    def __init__(
        self,
        embedding: Scorer | None = None,
        *,
        use_first_stage: bool = True,
        first_stage_weight: float | None = None,
        text_weights: Sequence[float] | None = None,
        weights: Mapping[str, float] | None = None,
        language: str = "en",
        combination_method: fusion.ScoreCombinationMethod | str = HYBRID_METHOD,
        normalization_method: str = "min_max",
        scores: str = "calibrated",
        calibration: Mapping[str, Any] | None = None,
        backend: str = "auto",
        quantize: str | None = None,
        model: str | None = None,
        name: str = "hybrid",
    ) -> None:

        if first_stage_weight is not None and not 0.0 <= first_stage_weight <= 1.0:
            raise ValueError(f"first_stage_weight must be in [0, 1], got {first_stage_weight}")
        pair = HYBRID_TEXT_WEIGHTS if text_weights is None else check_text_weights(text_weights)
        if scores not in SCORE_MODES:
            raise ValueError(f"scores must be one of {', '.join(SCORE_MODES)}, got {scores!r}")
        if embedding is not None and not isinstance(embedding, Scorer):
            raise TypeError(
                f"embedding must be a Scorer (in a declared pipeline: a table such as "
                f'{{ type = "embedding", model = ... }}), got {type(embedding).__name__}'
            )
        if embedding is not None and (
            backend != "auto" or quantize is not None or model is not None
        ):
            raise ValueError(
                "model, backend and quantize choose the default embedding; set them on yours"
            )
        self.embedding = (
            embedding
            if embedding is not None
            else EmbeddingScorer(
                model if model is not None else DEFAULT_EMBEDDING_MODEL,
                backend=backend,
                quantize=quantize,
            )
        )
        self.use_first_stage = use_first_stage
        #: whether the caller chose the weight (a 0 chosen says nothing of unfused scores)
        self.weight_chosen = first_stage_weight is not None
        self.language = language
        self.name = name
        self.combination_method = fusion.ScoreCombinationMethod.parse(combination_method)
        self.normalization_method = normalization_method
        analyzer = Analyzer(language=language)  # one word table for both BM25s
        bundled = isinstance(self.embedding, EmbeddingScorer) and self.embedding.is_bundled
        model = getattr(self.embedding, "model_id", None) or self.embedding.name
        if scores == "calibrated" and calibration is None and not bundled:
            check_weight_options("calibrated", text_weights, weights, model)
            logger.warning(
                "hybrid: the built-in calibration fits the bundled all-MiniLM-L6-v2, not %r; "
                "scores are relative (pass calibration=, fitted by rerankit tune --calibrate)",
                model,
            )
            scores = "relative"
        if scores == "calibrated" and self.combination_method is not HYBRID_METHOD:
            raise ValueError(
                f"combination_method={self.combination_method.value!r} combines the relative "
                "hybrid's scores (scores='relative'); the calibrated hybrid sums its signals' "
                "logits (weighted_average)"
            )
        check_weight_options(scores, text_weights, weights)
        self.scores = scores
        #: whether the signal weights differ from those the output calibration was fitted for
        self.reweighted: dict[str, float] = {}
        self.first_stage = FieldScorer(FIRST_STAGE_SCORE, name="first_stage")
        if scores == "calibrated":
            self.first_stage_weight = (
                HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT
                if first_stage_weight is None
                else first_stage_weight
            )
            self.texts_only = self._calibrated(analyzer, calibration or HYBRID_CALIBRATION, weights)
            return
        self.first_stage_weight = (
            HYBRID_FIRST_STAGE_WEIGHT if first_stage_weight is None else first_stage_weight
        )
        self.texts_only = self._fusion(
            {
                BM25Scorer(analyzer=analyzer, **HYBRID_BM25): pair[0],
                BM25Scorer(
                    analyzer=analyzer, idf="background", name="bm25_background", **HYBRID_BM25
                ): pair[1],
            }
        )
        self.with_first_stage = self._fusion({self.first_stage: self.first_stage_weight})

    def _fusion(self, lexical: dict[Scorer, float]) -> FusionReranker:
        weights = {s.name: w for s, w in lexical.items()}
        weights[self.embedding.name] = 1.0 - sum(weights.values())
        return FusionReranker(  # (a signal weighing 0 is not run, nor its model loaded)
            [*lexical, self.embedding],
            self.combination_method,
            weights,
            normalization_method=self.normalization_method,
            name=self.name,
        )

    def _calibrated(
        self, analyzer: Any, spec: Mapping[str, Any], weights: Mapping[str, float] | None
    ) -> FusionReranker:
        """The pair-wise texts-only fusion from a spec shaped like HYBRID_CALIBRATION, with
        ``weights`` in place of some of its weights (:func:`reweighted`)."""
        unknown = sorted(set(spec) - set(HYBRID_CALIBRATION))
        if unknown:
            raise ValueError(f"calibration: unknown keys {unknown}; use {list(HYBRID_CALIBRATION)}")
        if spec is not HYBRID_CALIBRATION:
            needed = ["weights", "calibration", "output_calibration"]
            if "passage" in (spec.get("weights") or {}):
                needed.append("passage_words")
            missing = [k for k in needed if k not in spec]
            if missing:
                raise ValueError(
                    f"calibration: missing {missing} (a fit by rerankit tune --calibrate has "
                    "them all; to change only the default's weights, give weights = { ... } "
                    "and no calibration)"
                )
            spec = {**READING_DEFAULTS, **spec}
        roles = list(spec["weights"])
        if not roles or not set(roles) <= set(ROLES):
            raise ValueError(f"calibration: weights name the signals {list(ROLES)}, got {roles}")
        fitted = spec["weights"]  # the weights its output calibration was fitted for
        if spec["output_calibration"] == HYBRID_CALIBRATION["output_calibration"]:
            fitted = HYBRID_CALIBRATION["weights"]
        if weights is not None:
            spec = {**spec, "weights": reweighted(spec["weights"], weights)}
        shares = weight_shares(spec["weights"])  # the weights it runs with, if not the fitted
        self.reweighted = shares if shares != weight_shares(fitted) else {}
        words, lead = spec.get("passage_words"), spec["passage_lead"]
        readers: dict[str, Scorer] = {
            "bm25_background": background_bm25(
                analyzer, avgdl=spec["avgdl"], query_normalization=spec["query_normalization"]
            )
        }
        if "proximity" in roles:
            readers["proximity"] = proximity_reader(
                analyzer, avgdl=spec["avgdl"], query_normalization=spec["query_normalization"]
            )
        if "passage" in roles:
            if words is None:
                raise ValueError("calibration: the passage signal needs passage_words")
            readers["embedding"] = self.embedding
            readers["passage"] = self._passage_reader(words, lead, name="passage")
        else:  # a mapping with passage_words and no passage role read passages as embedding
            readers["embedding"] = self._passage_reader(words, lead)
        rename = {r: readers[r].name for r in readers}  # keys name the roles, not the scorers
        # a signal weighing 0 adds nothing to the logit: not run (nor its model loaded)
        run = [r for r in ROLES if r in roles and spec["weights"][r] > 0]
        calibration = {k: c for k, c in spec["calibration"].items() if k in run or k not in roles}
        return FusionReranker(
            [readers[r] for r in run],
            self.combination_method,
            {rename[k]: spec["weights"][k] for k in run},
            normalization_method="calibrated",
            calibration={rename.get(k, k): c for k, c in calibration.items()},
            output_calibration=spec["output_calibration"],
            name=self.name,
        )

    def _passage_reader(self, words: int | None, lead: int, name: str | None = None) -> Scorer:
        """The embedding scorer reading each document by its best passage of about
        ``words`` words, each after the first starting with the document's first ``lead``
        words (None: the whole document, as given)."""

        if words is None:
            return self.embedding
        if not isinstance(self.embedding, EmbeddingScorer):
            raise ValueError(
                "calibration: passage_words needs an EmbeddingScorer, got "
                f"{type(self.embedding).__name__} (leave passage_words out to read whole "
                "documents)"
            )
        reader = self.embedding.with_passages(words, self.embedding.max_passages, lead=lead)
        if name is not None:
            reader.name = name
        return reader

    def scorers(self) -> Iterator[Scorer]:
        yield from self.texts_only.scorers()

    @property
    def english_model(self) -> bool:
        """Whether it runs the bundled all-MiniLM-L6-v2, which reads English only."""
        return any(isinstance(s, EmbeddingScorer) and s.is_bundled for s in self.scorers())

    def language_setting_note(self) -> str | None:
        """What its reranks warn of whatever their text (``rerankit check`` says it): its
        lexical signals' language beside the English-only model, in :func:`.language_note`'s
        words for a query whose language cannot be told; None when English or multilingual."""
        if self.language == "en" or not self.english_model:
            return None
        return language_note("", language=self.language, english_model=True)

    @property
    def fuses_first_stage(self) -> bool:
        """Whether a first-stage score on every document changes the ranking (and makes the
        scores relative): with ``scores="relative"``, or a ``first_stage_weight`` above 0."""
        return self.use_first_stage and (self.scores != "calibrated" or self.first_stage_weight > 0)

    @property
    def score_scale(self) -> str:
        """The texts-only mode's scale (``probability`` when calibrated, ``unit`` when its
        weights are not those its output calibration was fitted for); a call whose
        documents carry first-stage scores is ``relative`` (see ``result.score_scale``)."""
        return "unit" if self.reweighted else self.texts_only.score_scale

    def _first_stage_mode(self, docs: Sequence[Document]) -> tuple[bool, str | None]:
        """Whether to fuse the documents' first-stage scores: when the hybrid fuses them at
        all (:attr:`fuses_first_stage`) and every document has one. A warning says what
        ranked instead when only some have one, and when the calibrated default (no
        ``first_stage_weight`` given) leaves the scores it was given unfused."""
        have = sum(
            isinstance(v := d.metadata.get(FIRST_STAGE_SCORE), Real) and not isinstance(v, bool)
            for d in docs
        )
        which = f"{have} of {len(docs)} documents carry" if have < len(docs) else ""
        which = which or "every document carries"
        if not have:  # 0.1.0's score field, left unread, is said
            return False, unread_score_note(docs) if self.use_first_stage else None
        if not self.fuses_first_stage:  # the texts rank, scores or not
            if not self.use_first_stage or self.weight_chosen:
                return False, None
            return False, (
                f"{which} a first-stage (retriever) score, which this hybrid does not fuse: "
                f"it ranks by the texts alone ({_said(self.score_scale)}); to fuse "
                "the retriever's score too (scores then relative to the call), set the "
                "hybrid's first_stage_weight (e.g. 0.1)"
            )
        if have == len(docs):
            return True, None
        if self.scores == "calibrated":
            instead = "its calibrated signals, as with no first stage: scores stay "
            instead += _said(self.score_scale)
        else:
            instead = "its relative texts-only fusion, with BM25 over the candidates in the "
            instead += "first stage's place"
        return False, (
            f"{which} a first-stage score: the hybrid fuses one only when every document "
            f"has it, so these rank by the texts alone ({instead}); give every document "
            "one to fuse them"
        )

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:

        fuses, note = self._first_stage_mode(docs)
        if fuses and self.scores == "calibrated":
            scored = await self._beside_first_stage(query, docs, **context)
        else:
            fusion_ = self.with_first_stage if fuses else self.texts_only
            scored = await fusion_._score(query, docs, **context)
            scored.scale = self.score_scale if fusion_ is self.texts_only else "relative"
        if note:
            scored.warnings.append(note)
        texts = (d.text for d in docs)  # read only when the query's language is unclear
        language = language_note(
            query, language=self.language, english_model=self.english_model, documents=texts
        )
        if language:
            scored.warnings.append(language)
        return scored

    async def _beside_first_stage(
        self, query: str, docs: Sequence[Document], **context: Any
    ) -> Scored:
        """The calibrated texts-only fusion with the first stage beside it: ``w`` of the
        first stage and ``1 - w`` of the texts' fused logit, each normalised over the
        request. Each text signal's contribution is its share of that normalised logit, so
        the contributions still add up to the score; if every text signal fails, the first
        stage alone orders the documents."""
        scored = await self.texts_only._score(query, docs, **context)
        try:
            batch = await run_scorer(self.first_stage, query, docs, context)
        except ScorerError as exc:  # no finite first-stage score: the texts alone decide
            scored.failed(self.first_stage, exc)
            return scored
        first = scored.take(self.first_stage.name, batch)
        method = self.normalization_method
        weight = 1.0 if scored.failed_all else self.first_stage_weight
        if scored.failed_all:  # the first stage still orders them
            scored.failed_all = False
            scored.warnings.remove(ALL_FAILED)
        texts = scored.explanation
        if texts:
            parts = np.vstack([e["contribution"] for e in texts.values()])
            logit = parts.sum(axis=0)
            span = float(logit.max() - logit.min())
            if method == "min_max" and span > 0:  # each signal's share of the min-max logit
                shares = (parts - parts[:, [int(np.argmin(logit))]]) / span
            else:  # an even share of the normalised logit
                shares = np.tile(normalize_scores(logit, method) / len(texts), (len(texts), 1))
            for e, share in zip(texts.values(), shares, strict=True):
                e["weight"] *= 1.0 - weight
                e["contribution"] = (1.0 - weight) * share
        normalized = normalize_scores(first, method)
        texts[self.first_stage.name] = {
            "raw": scored.per_strategy[self.first_stage.name],
            "normalized": normalized,
            "weight": weight,
            "contribution": weight * normalized,
        }
        scored.final = np.sum([e["contribution"] for e in texts.values()], axis=0)
        scored.scale = "relative"
        scored.link = SUM  # shares of a normalised logit, not logits
        return scored


def _said(scale: str) -> str:
    """A scale as a warning names the scores: ``probabilities``, ``unit`` scores, ..."""
    return "probabilities" if scale == "probability" else f"{scale} scores"


def relative_hybrid(embedding: Scorer | None = None, **options: Any) -> HybridReranker:
    """The hybrid with min-max fusion and BM25 over the candidates' own idf when given
    texts only: scores relative to the request (see :class:`HybridReranker`)."""
    options.setdefault("name", "hybrid-relative")
    return HybridReranker(embedding, scores="relative", **options)
