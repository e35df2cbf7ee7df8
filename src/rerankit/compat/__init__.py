"""Compatible APIs: the names and signatures of existing reranking designs, each a
thin layer over rerankit's core."""

from ..ordering import DIFFICULTY_BUCKETS, apply_difficulty_ordering
from .llm_rerankers import AiRerank, ReRanker, make_rerank_schema, rerank_passages
from .reranker_service import MemoryProfile, RerankerService
from .result_reranker import (
    RerankerStrategy,
    ResultReranker,
    ScoreCombinationMethod,
    SemanticReranker,
    StructuralReranker,
    TextSimilarityReranker,
    combine_scores,
    entity_text,
    normalize_scores,
)

__all__ = [
    "DIFFICULTY_BUCKETS",
    "AiRerank",
    "MemoryProfile",
    "ReRanker",
    "RerankSchema",
    "RerankerService",
    "RerankerStrategy",
    "ResultReranker",
    "ScoreCombinationMethod",
    "SemanticReranker",
    "StructuralReranker",
    "TextSimilarityReranker",
    "apply_difficulty_ordering",
    "combine_scores",
    "entity_text",
    "normalize_scores",
    "rerank_passages",
]

_schema: type | None = None


def __getattr__(name: str) -> type:
    # RerankSchema is a pydantic model: built (and pydantic imported) on first use.
    global _schema
    if name == "RerankSchema":
        if _schema is None:
            _schema = make_rerank_schema()
        return _schema
    raise AttributeError(f"module 'rerankit.compat' has no attribute {name!r}")
