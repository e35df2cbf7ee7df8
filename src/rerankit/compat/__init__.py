"""Seed-compatible APIs: the names and signatures of the designs in ``shared/spec``, each a
thin layer over rerankit's core."""

from .reranker_service import MemoryProfile, RerankerService
from .result_reranker import (
    RerankerStrategy,
    ResultReranker,
    ScoreCombinationMethod,
    SemanticReranker,
    TextSimilarityReranker,
    combine_scores,
    entity_text,
    normalize_scores,
)

__all__ = [
    "MemoryProfile",
    "RerankerService",
    "RerankerStrategy",
    "ResultReranker",
    "ScoreCombinationMethod",
    "SemanticReranker",
    "TextSimilarityReranker",
    "combine_scores",
    "entity_text",
    "normalize_scores",
]
