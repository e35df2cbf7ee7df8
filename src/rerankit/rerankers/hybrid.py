"""The default offline reranker: a lexical signal and a bi-encoder, fused."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from numbers import Real
from typing import Any

from .. import fusion
from ..scorers.base import Scorer
from ..types import Document
from .base import Scored, ScoringReranker
from .fused import FusionReranker

__all__ = [
    "FIRST_STAGE_FIELDS",
    "HYBRID_BM25_WEIGHT",
    "HYBRID_FIRST_STAGE_WEIGHT",
    "HYBRID_METHOD",
    "HybridReranker",
    "hybrid_reranker",
    "texts_only_hybrid",
]

#: How the default ``hybrid`` pipeline fuses its two signals: a weighted sum of min-max
#: normalised scores. With the first stage's score: 0.3 first stage / 0.7 embedding; without
#: it, BM25 over the candidates: 0.4 BM25 / 0.6 embedding. Both chosen by ``rerankit tune``
#: style searches on development queries only (SciFact train, NFCorpus dev); see the README.
HYBRID_METHOD = fusion.ScoreCombinationMethod.WEIGHTED_AVERAGE
HYBRID_FIRST_STAGE_WEIGHT = 0.3
HYBRID_BM25_WEIGHT = 0.4
#: where the hybrid looks for a first-stage score (the first field every document has)
FIRST_STAGE_FIELDS = ("first_stage_score", "retriever_score", "score")


class HybridReranker(ScoringReranker):
    """The default offline reranker: a lexical signal and a bi-encoder fused.

    The lexical signal is the first stage's own score when every document carries one (the
    first of ``first_stage_fields`` that all documents have), else BM25 over the candidates.
    The embedding model is the bundled all-MiniLM-L6-v2 unless given (extra ``torch``).
    Strategies appear as ``first_stage`` or ``bm25``, and ``embedding``.
    """

    def __init__(
        self,
        embedding: Scorer | None = None,
        *,
        first_stage_fields: Sequence[str] = FIRST_STAGE_FIELDS,
        first_stage_weight: float = HYBRID_FIRST_STAGE_WEIGHT,
        bm25_weight: float = HYBRID_BM25_WEIGHT,
        combination_method: fusion.ScoreCombinationMethod | str = HYBRID_METHOD,
        normalization_method: str = "min_max",
        name: str = "hybrid",
    ) -> None:
        from ..scorers.embedding import EmbeddingScorer
        from ..scorers.lexical import BM25Scorer

        for label, w in (("first_stage_weight", first_stage_weight), ("bm25_weight", bm25_weight)):
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {w}")
        self.embedding = embedding if embedding is not None else EmbeddingScorer()
        self.first_stage_fields = tuple(first_stage_fields)
        self.first_stage_weight, self.bm25_weight = first_stage_weight, bm25_weight
        self.combination_method = fusion.ScoreCombinationMethod.parse(combination_method)
        self.normalization_method = normalization_method
        self.name = name
        self.with_bm25 = self._fusion(BM25Scorer(), bm25_weight)
        self._with_field: dict[str, FusionReranker] = {}

    def _fusion(self, lexical: Scorer, weight: float) -> FusionReranker:
        return FusionReranker(
            [lexical, self.embedding],
            self.combination_method,
            {lexical.name: weight, self.embedding.name: 1.0 - weight},
            normalization_method=self.normalization_method,
            name=self.name,
        )

    def scorers(self) -> Iterator[Scorer]:
        yield from self.with_bm25.scorers()

    def first_stage_field(self, docs: Sequence[Document]) -> tuple[str | None, str | None]:
        """The field to use, and a warning when some documents (not all) have one."""
        partial = None
        for f in self.first_stage_fields:
            have = sum(
                isinstance(d.metadata.get(f), Real) and not isinstance(d.metadata.get(f), bool)
                for d in docs
            )
            if have == len(docs):
                return f, None
            if have and partial is None:
                partial = (
                    f"{have} of {len(docs)} documents have a {f!r} score; BM25 over the "
                    "candidates is used instead"
                )
        return None, partial

    async def _score(self, query: str, docs: Sequence[Document], **context: Any) -> Scored:
        from ..scorers.field import FieldScorer

        f, note = self.first_stage_field(docs)
        if f is None:
            scored = await self.with_bm25._score(query, docs, **context)
        else:
            if f not in self._with_field:
                lexical = FieldScorer(f, name="first_stage")
                self._with_field[f] = self._fusion(lexical, self.first_stage_weight)
            scored = await self._with_field[f]._score(query, docs, **context)
        if note:
            scored.warnings.append(note)
        return scored


def hybrid_reranker(embedding: Scorer | None = None, **options: Any) -> HybridReranker:
    """The default ``hybrid`` reranker (see :class:`HybridReranker`)."""
    return HybridReranker(embedding, **options)


def texts_only_hybrid(**options: Any) -> HybridReranker:
    """The hybrid as users without a first-stage score get it: BM25 over the candidates."""
    options.setdefault("name", "hybrid-bm25")
    return HybridReranker(first_stage_fields=(), **options)
