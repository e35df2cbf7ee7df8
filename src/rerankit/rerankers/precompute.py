"""Encode a fixed corpus ahead of traffic: :func:`keep_documents` runs the document-side
work a reranker keeps for later (the embedding vectors of each document, whole and by
passages) over the given documents, in batches, into the cache a later rerank reads, so
every rerank of those documents is the fast case (:func:`rerankit.precompute` in Python,
``rerankit precompute`` on the command line).

A scorer keeps work per document when it has a ``keep_documents(texts)`` method
(:meth:`~rerankit.scorers.EmbeddingScorer.keep_documents`); cross-encoders, BM25 and LLM
judges keep nothing per document, and a pipeline of those alone has nothing to precompute.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._words import counted
from ..cache import EmbeddingCache, embedding_lookups, error_counts
from ..errors import InputError, said_for
from ..text import split_passages
from ..types import Document

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "NOTHING_TO_KEEP",
    "PrecomputeResult",
    "check_batch_size",
    "keep_documents",
    "keeping_scorers",
]

logger = logging.getLogger(__name__)

#: documents encoded per batch (each batch's vectors are written before the next is read)
DEFAULT_BATCH_SIZE = 256

#: what :meth:`PrecomputeResult.summary` says of a pipeline that keeps nothing per document
NOTHING_TO_KEEP = (
    "{name}: nothing to precompute: it keeps no work per document (BM25, cross-encoders and "
    "LLM judges read each query with its documents); only embedding models' vectors are kept"
)


@dataclass(frozen=True)
class PrecomputeResult:
    """What :func:`keep_documents` (:func:`rerankit.precompute`) did: ``documents`` read;
    ``encoded_whole`` and ``encoded_passages``, the texts encoded now (whole documents, and
    passages of the scorers reading by passages); ``cached``, the texts whose vectors were
    in the cache already; ``seconds``; ``where`` the vectors went (files, or Redis URLs
    without their password); ``failed_calls``, calls to the cache that failed (vectors not
    read or not kept: the log says why); ``kept``: False when the pipeline keeps nothing
    per document (then nothing was read or encoded); ``longer``: documents read on their
    first ``max_passages`` passages of ``passage_words`` words only."""

    documents: int
    encoded_whole: int = 0
    encoded_passages: int = 0
    cached: int = 0
    seconds: float = 0.0
    where: tuple[str, ...] = ()
    failed_calls: int = 0
    kept: bool = True
    #: documents with more passages than ``max_passages``, read on their first ones (as
    #: every rerank of them is, with a warning each time): said once here
    longer: int = 0
    max_passages: int | None = None
    passage_words: int | None = None

    @property
    def encoded(self) -> int:
        """Texts encoded now, whole documents and passages together."""
        return self.encoded_whole + self.encoded_passages

    def summary(self, name: str = "pipeline") -> str:
        """What was done for the pipeline ``name``, in lines, as ``rerankit precompute``
        prints them: the documents read, the texts encoded, those already in the cache, the
        time and where the vectors went; the documents read in part, and the failed cache
        calls, when there are some; or, ``kept`` False, that the pipeline keeps nothing
        (:data:`NOTHING_TO_KEEP`)."""
        if not self.kept:
            return NOTHING_TO_KEEP.format(name=name)
        lines = [
            f"{name}: {self.documents} documents read",
            f"  texts encoded: {self.encoded} ({self.encoded_whole} whole documents, "
            f"{self.encoded_passages} passages)",
            f"  already in the cache: {self.cached}",
            f"  time: {self.seconds:.1f} s",
            f"  vectors kept in: {', '.join(self.where)}",
        ]
        if self.longer:
            its, it = ("its", "it") if self.longer == 1 else ("their", "them")
            lines.append(
                f"  {counted(self.longer, 'document')} longer than {self.max_passages} "
                f"passages of {self.passage_words} words: read on {its} first "
                f"{self.max_passages}, as every rerank reads {it} (max_passages; each rerank "
                f"of {it} warns too)"
            )
        if self.failed_calls:
            lines.append(
                f"  {counted(self.failed_calls, 'call')} to the cache failed: those vectors "
                "were not kept (the warning above says why); run it again once the cache is "
                "reachable"
            )
        return "\n".join(lines)


def keeping_scorers(reranker: Any) -> list[Any]:
    """The scorers of ``reranker`` that keep work per document for later (those with a
    ``keep_documents`` method), those reading whole documents first (a short document's
    one passage is its whole text: encoded once, counted as a whole document)."""
    found = [s for s in reranker.scorers() if callable(getattr(s, "keep_documents", None))]
    return sorted(found, key=lambda s: getattr(s, "passage_words", None) is not None)


def _nowhere(scorer: Any) -> str:
    """Why ``scorer``'s vectors would be lost, and how to name a place for them."""
    place = said_for(
        "embedding_cache='FILE' (or $RERANKIT_EMBEDDING_CACHE)",
        "--embedding-cache FILE (or $RERANKIT_EMBEDDING_CACHE=FILE)",
    )
    held = "keeps no vectors" if scorer.cache is None else "keeps its vectors in memory only"
    return (
        f"scorer {scorer.name!r} {held}, which would be thrown away when this ends: name a "
        f"place that a later rerank reads: {place}, an SQLite file that rank, batch and "
        "serve read when $RERANKIT_EMBEDDING_CACHE names the same file; or a shared Redis/"
        "Valkey server, $RERANKIT_CACHE_URL=redis://HOST:6379/0 "
        + said_for(
            "(within rerankit.cache.cache_defaults(settings), a service's [cache] url)",
            "(or --settings FILE, the service's settings: its [cache] url)",
        )
    )


def _places(scorers: list[Any]) -> tuple[str, ...]:
    """Where ``scorers`` keep their vectors (each store once); an :class:`InputError` when
    one keeps them nowhere a later process reads."""
    for scorer in scorers:
        if not isinstance(getattr(scorer, "cache", None), EmbeddingCache) or (
            scorer.cache.store is None
        ):
            raise InputError(_nowhere(scorer))
    return tuple(dict.fromkeys(s.cache.store.where for s in scorers))


def check_batch_size(batch_size: Any) -> None:
    """A ValueError unless ``batch_size`` is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")


def _longer(scorer: Any, texts: Sequence[str]) -> int:
    """How many of ``texts`` have more passages than ``scorer`` reads (``max_passages``)."""
    words, most = scorer.passage_words, scorer.max_passages
    lead = getattr(scorer, "passage_lead", 0)
    return sum(len(split_passages(t, words, most + 1, lead=lead)) > most for t in texts)


def _passage_reading(scorers: list[Any]) -> dict[str, int | None]:
    """The first passage reader's ``max_passages`` and ``passage_words`` (None: none)."""
    by_passages = [s for s in scorers if getattr(s, "passage_words", None) is not None]
    if not by_passages:
        return {"max_passages": None, "passage_words": None}
    first = by_passages[0]
    return {"max_passages": first.max_passages, "passage_words": first.passage_words}


def _batches(items: Sequence[Document], size: int) -> Iterator[Sequence[Document]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def keep_documents(
    reranker: Any,
    docs: Sequence[Document],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
) -> PrecomputeResult:
    """Run the work ``reranker``'s scorers keep per document over ``docs``, ``batch_size``
    documents at a time (``progress`` is called with the number done after each batch):
    see :func:`rerankit.precompute`. An :class:`InputError` when a scorer would keep it
    in memory only; ``kept=False`` (nothing read) when none keeps anything."""
    check_batch_size(batch_size)
    scorers = keeping_scorers(reranker)
    if not scorers:
        return PrecomputeResult(documents=0, kept=False)
    where = _places(scorers)
    seen: set[str] = set()  # a text repeated is encoded once
    whole = passages = done = longer = 0
    failed = error_counts()["embedding"]
    started = time.perf_counter()
    with embedding_lookups() as counts:
        for batch in _batches(docs, batch_size):
            texts = [t for t in dict.fromkeys(d.text for d in batch) if t not in seen]
            seen.update(texts)
            for scorer in scorers:
                before = scorer.cache.misses
                scorer.keep_documents(texts)
                if getattr(scorer, "passage_words", None) is None:
                    whole += scorer.cache.misses - before
                else:
                    passages += scorer.cache.misses - before
                    longer += _longer(scorer, texts)
            done += len(batch)
            if progress is not None:
                progress(done)
    result = PrecomputeResult(
        documents=len(docs),
        encoded_whole=whole,
        encoded_passages=passages,
        cached=counts["reused"],
        seconds=time.perf_counter() - started,
        where=where,
        failed_calls=error_counts()["embedding"] - failed,
        longer=longer,
        **_passage_reading(scorers),
    )
    logger.info("precompute: %s", result)
    return result
