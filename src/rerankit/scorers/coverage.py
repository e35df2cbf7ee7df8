"""Query-term coverage: the share of the query's distinct terms a document contains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._threads import in_thread
from ..text.analysis import Analyzer
from ..types import Document

__all__ = ["CoverageScorer"]


class CoverageScorer:
    """The fraction of the query's distinct terms (after the analyzer's stopwords and
    stemming) found in each document, in [0, 1]. Cheap and length-independent: a useful
    second lexical signal and a learning-to-rank feature."""

    score_scale = "unit"

    def __init__(self, *, analyzer: Analyzer | None = None, name: str = "coverage") -> None:
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.name = name

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        terms = set(self.analyzer.terms(query))
        if not texts or not terms:
            return np.zeros(len(texts))
        tf, _, _ = self.analyzer.analyze(texts).query_tf(sorted(terms))
        return (tf > 0).sum(axis=1) / len(terms)

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        return await in_thread(self.score_texts, query, [d.text for d in docs])
