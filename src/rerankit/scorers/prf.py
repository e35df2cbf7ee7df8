"""Dense pseudo-relevance feedback inside the candidate set, and the order a stage was given.

Both read the documents' order as they arrive, so they belong in a later stage of a
:class:`~rerankit.Pipeline`: the stage before ranks, then ``prf`` moves the query towards
the documents that stage put first, and ``position`` carries that stage's order into a
fusion. Their scores are relative to the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._threads import in_thread
from ..types import Document
from .embedding import EmbeddingScorer

__all__ = ["PRFScorer", "PositionScorer", "feedback_cosines"]


def feedback_cosines(
    query: np.ndarray, docs: np.ndarray, feedback: Sequence[int] | np.ndarray, alpha: float
) -> np.ndarray:
    """Each document's cosine to the query expanded by feedback: ``query`` and the rows of
    ``docs`` are unit vectors; the expansion adds ``alpha`` times the mean of the rows
    ``feedback`` names, then normalises."""
    expanded = query + alpha * docs[np.asarray(feedback, dtype=int)].mean(axis=0)
    return docs @ (expanded / (np.linalg.norm(expanded) or 1.0))


class PRFScorer:
    """The cosine of each document to an expanded query: the query's embedding plus
    ``alpha`` times the mean embedding of the first ``top`` documents in the order they
    arrive (the previous stage's best), normalised. ``embedding``: an
    :class:`~rerankit.scorers.EmbeddingScorer` (the bundled MiniLM by default; document vectors come
    from its cache when the previous stage encoded them)."""

    score_scale = "relative"

    def __init__(
        self, embedding: Any = None, *, top: int = 3, alpha: float = 0.5, name: str = "prf"
    ) -> None:
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise ValueError(f"top must be a positive integer, got {top!r}")
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {alpha!r}")
        if embedding is None:
            embedding = EmbeddingScorer()
        self.embedding, self.top, self.alpha, self.name = embedding, top, float(alpha), name

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        q = np.asarray(self.embedding.encode_queries([query])[0], dtype=np.float64)
        docs = np.asarray(self.embedding.encode_documents(list(texts)), dtype=np.float64)
        docs = docs / np.clip(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12, None)
        top = np.arange(min(self.top, len(texts)))  # the previous stage's best
        return feedback_cosines(q / (np.linalg.norm(q) or 1.0), docs, top, self.alpha)

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        return await in_thread(self.score_texts, query, [d.text for d in docs])


class PositionScorer:
    """``1 - i / n`` for the document at position ``i`` of ``n``, as they arrive: the
    previous stage's order as a score, to fuse with a later stage's signals. A reranker
    is no scorer, so this is how its order joins a fusion: the reranker as a pipeline
    stage, then a fusion of this scorer with the others (``position`` in a file)::

        Pipeline([HybridReranker(), FusionReranker([PositionScorer(), RecencyScorer("date")])])
    """

    score_scale = "relative"
    #: it reads the order it is given: a pipeline does not warn that it replaces a rule's
    reads_order = True

    def __init__(self, *, name: str = "position") -> None:
        self.name = name

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        n = len(docs)
        return 1.0 - np.arange(n, dtype=np.float64) / max(n, 1)
