"""Compatible multi-strategy entity reranking, thin over :class:`FusionReranker`.

Entities may be of any type. Strategies receive the entities themselves; the built-in
:class:`TextSimilarityReranker` reads each entity's text with :func:`entity_text` (or the
``text_getter`` you pass).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..documents import to_documents
from ..fusion import ScoreCombinationMethod, combine_scores
from ..fusion import normalize_scores as _normalize
from ..rerankers import FusionReranker
from ..scorers.embedding import EmbeddingScorer
from ..scorers.graph import GraphScorer
from ..scorers.lexical import TextSimilarity
from ..types import Document

__all__ = [
    "RerankerStrategy",
    "ResultReranker",
    "ScoreCombinationMethod",
    "SemanticReranker",
    "StructuralReranker",
    "TextSimilarityReranker",
    "combine_scores",
    "entity_text",
    "normalize_scores",
]


def normalize_scores(scores: Sequence[float], method: str = "min_max") -> list[float]:
    """Scores mapped into [0, 1] as a list (see :func:`rerankit.fusion.normalize_scores`)."""
    return _normalize(scores, method).tolist()


_TEXT_KEYS = ("name", "title", "text", "content", "description")


def _fields_of(source: Any) -> list[str]:
    get = source.get if isinstance(source, Mapping) else lambda k: getattr(source, k, None)
    return [v for k in _TEXT_KEYS if isinstance(v := get(k), str) and v]


def entity_text(entity: Any) -> str:
    """The text of an entity: a ``str`` itself; a ``Document``'s ``text``; otherwise the
    ``name``, ``title``, ``text``, ``content`` and ``description`` found as mapping keys or
    attributes, then inside a ``properties`` mapping, joined by newlines.

    Raises ``TypeError`` when none is found (pass ``text_getter=`` to say where the text is).
    """
    if isinstance(entity, str):
        return entity
    if isinstance(entity, Document):
        return entity.text
    parts = _fields_of(entity)
    props = (
        entity.get("properties")
        if isinstance(entity, Mapping)
        else getattr(entity, "properties", None)
    )
    if isinstance(props, Mapping):
        parts += [p for p in _fields_of(props) if p not in parts]
    if not parts:
        raise TypeError(
            f"cannot find text in {type(entity).__name__} entity (looked for "
            f"{', '.join(_TEXT_KEYS)} and properties); pass text_getter="
        )
    return "\n".join(parts)


class RerankerStrategy(ABC):
    """One way of scoring entities; subclass it and implement ``name`` and ``score``."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The strategy's name (the key used in weights)."""

    @abstractmethod
    async def score(self, query: str, entities: list[Any], **kwargs: Any) -> list[float]:
        """One score per entity, same order; [0, 1] is best for combination."""


class TextSimilarityReranker(RerankerStrategy):
    """BM25 and Jaccard blended (defaults 0.7 / 0.3), scores in [0, 1]; name ``"text"``."""

    def __init__(
        self,
        bm25_weight: float = 0.7,
        jaccard_weight: float = 0.3,
        *,
        text_getter: Callable[[Any], str] | None = None,
        **options: Any,
    ) -> None:
        self._scorer = TextSimilarity(
            bm25_weight=bm25_weight, jaccard_weight=jaccard_weight, **options
        )
        self._text = text_getter or entity_text

    @property
    def name(self) -> str:
        return "text"

    async def score(self, query: str, entities: list[Any], **kwargs: Any) -> list[float]:
        return self._scorer.score_texts(query, [self._text(e) for e in entities]).tolist()


def _embedding_of(entity: Any, field: str) -> Any:
    value = entity.get(field) if isinstance(entity, Mapping) else getattr(entity, field, None)
    return value if value is not None and len(value) else None


class SemanticReranker(RerankerStrategy):
    """Embedding similarity, name ``"semantic"``: ``(cosine + 1) / 2`` in [0, 1].

    The query vector is the ``query_embedding`` keyword of ``rerank`` when given, else the
    query is encoded. Each entity's vector is its ``embedding`` attribute or key (see
    ``embedding_field``) when it has one, else its text is encoded (and cached). The
    encoder is an :class:`~rerankit.scorers.EmbeddingScorer` (default: the bundled
    all-MiniLM-L6-v2; extra ``torch``), loaded on first need.
    """

    def __init__(
        self,
        scorer: Any = None,
        *,
        embedding_field: str = "embedding",
        text_getter: Callable[[Any], str] | None = None,
    ) -> None:
        if scorer is None:
            scorer = EmbeddingScorer()
        self.scorer = scorer
        self.embedding_field = embedding_field
        self._text = text_getter or entity_text

    @property
    def name(self) -> str:
        return "semantic"

    async def score(self, query: str, entities: list[Any], **kwargs: Any) -> list[float]:
        given = [_embedding_of(e, self.embedding_field) for e in entities]
        docs = to_documents(
            [Document("") if g is not None else e for e, g in zip(entities, given, strict=True)],
            text_getter=self._text,
        )
        context = {"document_embeddings": given}
        if kwargs.get("query_embedding") is not None:
            context["query_embedding"] = kwargs["query_embedding"]
        batch = await self.scorer.score(query, docs, **context)
        values = np.asarray(getattr(batch, "values", batch), dtype=np.float64)
        return ((values + 1.0) / 2.0).tolist()


class StructuralReranker(RerankerStrategy):
    """Graph importance, name ``"structural"``: each entity's node score divided by the best
    candidate's, in [0, 1] (0 for entities not in the graph).

    ``graph_store``: a networkx graph or any object with ``nodes()`` and ``edges()`` (see
    :class:`~rerankit.scorers.graph.GraphStore`). ``mode``: ``"pagerank"`` (default),
    ``"degree"`` or ``"personalized"``. An entity's node id is its ``id`` attribute or key,
    or what ``node_id`` returns. Needs the ``graph`` extra (networkx).
    """

    def __init__(
        self,
        graph_store: Any,
        *,
        mode: str = "pagerank",
        node_id: Callable[[Any], Any] | None = None,
        text_getter: Callable[[Any], str] | None = None,
    ) -> None:

        self.scorer = GraphScorer(graph_store, mode=mode)
        self._node = node_id or _entity_id
        self._lenient_text = _lenient(text_getter or entity_text)  # graph scores need no text

    @property
    def name(self) -> str:
        return "structural"

    async def score(self, query: str, entities: list[Any], **kwargs: Any) -> list[float]:
        docs = [
            replace(d, id=self._node(e))
            for d, e in zip(
                to_documents(entities, text_getter=self._lenient_text), entities, strict=True
            )
        ]
        batch = await self.scorer.score(query, docs)
        values = np.asarray(batch.values, dtype=np.float64)
        top = values.max(initial=0.0)
        return (values / top if top > 0 else values).tolist()


def _lenient(getter: Callable[[Any], str]) -> Callable[[Any], str]:
    """``getter``, reading an entity without text as ``""``."""

    def read(entity: Any) -> str:
        try:
            return getter(entity)
        except TypeError:
            return ""

    return read


def _entity_id(entity: Any) -> Any:
    if isinstance(entity, Mapping):
        return entity.get("id")
    return getattr(entity, "id", None)


class _StrategyScorer:
    """Presents a RerankerStrategy (which scores entities) as a core scorer."""

    def __init__(self, strategy: RerankerStrategy) -> None:
        self.strategy = strategy
        self.name = strategy.name

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        values = await self.strategy.score(query, [d.source for d in docs], **context)
        return np.asarray(values, dtype=np.float64)


class ResultReranker:
    """Combines strategies (weighted average, RRF, max, min, ...) after normalisation.

    ``await rerank(query, entities, top_k=None, **kwargs)`` returns ``(entity, score)``
    tuples, best first; ``kwargs`` (e.g. ``query_embedding``) reach every strategy. A
    failing strategy is logged and left out; use
    :class:`rerankit.rerankers.FusionReranker` directly to see warnings and degradation in
    the result. Holds no per-call state.
    """

    def __init__(
        self,
        strategies: list[RerankerStrategy],
        combination_method: ScoreCombinationMethod = ScoreCombinationMethod.WEIGHTED_AVERAGE,
        weights: dict[str, float] | None = None,
        normalize_scores: bool = True,
        normalization_method: str = "min_max",
        *,
        text_getter: Callable[[Any], str] | None = None,
    ) -> None:
        self.strategies = list(strategies)
        # strategies read the entity itself; its text is only informational here
        self._lenient_text = _lenient(text_getter or entity_text)
        self._fusion = FusionReranker(
            [_StrategyScorer(s) for s in self.strategies],
            combination_method,
            weights,
            normalize_scores,
            normalization_method,
        )

    async def rerank(
        self, query: str, entities: list[Any], top_k: int | None = None, **kwargs: Any
    ) -> list[tuple[Any, float]]:
        entities = list(entities)
        docs = to_documents(entities, text_getter=self._lenient_text)
        result = await self._fusion.arerank(query, docs, top_k=top_k, context=kwargs)
        return [(entities[r.index], r.score) for r in result]
