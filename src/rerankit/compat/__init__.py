"""Seed-compatible APIs: the names and signatures of the designs in ``shared/spec``, each a
thin layer over rerankit's core."""

from .result_reranker import (
    RerankerStrategy,
    ResultReranker,
    ScoreCombinationMethod,
    TextSimilarityReranker,
    combine_scores,
    entity_text,
    normalize_scores,
)

__all__ = [
    "RerankerStrategy",
    "ResultReranker",
    "ScoreCombinationMethod",
    "TextSimilarityReranker",
    "combine_scores",
    "entity_text",
    "normalize_scores",
]
