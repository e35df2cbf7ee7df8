"""Scorers: each turns (query, documents) into one relevance score per document."""

from .base import ScoreBatch, Scorer, as_score_batch
from .field import FieldScorer
from .lexical import Analyzer, BM25Scorer, JaccardScorer, TextSimilarity

__all__ = [
    "Analyzer",
    "BM25Scorer",
    "FieldScorer",
    "JaccardScorer",
    "ScoreBatch",
    "Scorer",
    "TextSimilarity",
    "as_score_batch",
]
