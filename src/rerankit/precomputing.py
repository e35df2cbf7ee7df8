"""Encode a fixed corpus ahead of traffic: :func:`precompute` runs the document-side work a
pipeline keeps for later (the embedding vectors of each document, whole and by passages)
over the given documents, in batches, into the cache a later rerank reads, so every
rerank of those documents is the fast case (``rerankit precompute`` on the command line).

A scorer keeps work per document when it has a ``keep_documents(texts)`` method
(:meth:`~rerankit.scorers.EmbeddingScorer.keep_documents`); cross-encoders, BM25 and LLM
judges keep nothing per document, and a pipeline of those alone has nothing to precompute.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .api import default_reranker, load
from .cache import EmbeddingCache, embedding_cache_in_use, embedding_lookups, error_counts
from .documents import InputFields
from .errors import InputError, said_for

__all__ = ["DEFAULT_BATCH_SIZE", "PrecomputeResult", "keeping_scorers", "precompute"]

logger = logging.getLogger(__name__)

#: documents encoded per batch (each batch's vectors are written before the next is read)
DEFAULT_BATCH_SIZE = 256


@dataclass(frozen=True)
class PrecomputeResult:
    """What :func:`precompute` did: ``documents`` read; ``encoded_whole`` and
    ``encoded_passages``, the texts encoded now (whole documents, and passages of the
    scorers reading by passages); ``cached``, the texts whose vectors were in the cache
    already; ``seconds``; ``where`` the vectors went (files, or Redis URLs without their
    password); ``failed_calls``, calls to the cache that failed (vectors not read or not
    kept: the log says why); ``kept``: False when the pipeline keeps nothing per document
    (then nothing was read or encoded)."""

    documents: int
    encoded_whole: int = 0
    encoded_passages: int = 0
    cached: int = 0
    seconds: float = 0.0
    where: tuple[str, ...] = ()
    failed_calls: int = 0
    kept: bool = True

    @property
    def encoded(self) -> int:
        """Texts encoded now, whole documents and passages together."""
        return self.encoded_whole + self.encoded_passages


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


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@contextlib.contextmanager
def _cache_named(embedding_cache: str | Path | None, reranker: Any) -> Iterator[None]:
    """Embedding scorers built inside keep vectors in ``embedding_cache`` (None: as the
    environment says); a reranker already built keeps its own."""
    if embedding_cache is None:
        yield
        return
    if not isinstance(reranker, (str, Path)) and reranker is not None:
        raise InputError(
            "embedding_cache names where the scorers of a reranker built here keep vectors; "
            f"the {type(reranker).__name__} given was built with its own cache: give its "
            "name or pipeline file instead, or build its EmbeddingScorer with "
            "cache_path=FILE"
        )
    if str(embedding_cache) == "":
        raise InputError("embedding_cache is empty: name an SQLite file")
    with embedding_cache_in_use(str(embedding_cache)):
        yield


def precompute(
    documents: Iterable[Any],
    reranker: Any = None,
    *,
    embedding_cache: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    fields: InputFields | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> PrecomputeResult:
    """Encode ``documents`` as ``reranker`` (anything :func:`rerankit.load` takes, or a
    reranker; default: the default pipeline) reads them, into the cache its later reranks
    read, ``batch_size`` documents at a time; a rerank of those documents then encodes
    none of them (its query only).

    ``documents`` are read as :meth:`~rerankit.Reranker.rerank` reads them (strings,
    dicts, Documents, ...; ``fields`` or its options as keywords: ``text_field="body"``,
    ``title_field=...``). The vectors go to the cache the reranker's embedding scorers
    keep: ``embedding_cache`` (an SQLite file, for a reranker built here from a name or
    file), else ``$RERANKIT_EMBEDDING_CACHE``, else the Redis/Valkey server
    ``$RERANKIT_CACHE_URL`` names (or, within :func:`rerankit.cache.cache_defaults`, the
    service's ``[cache]`` url). Keeping them in memory only is refused (an
    :class:`~rerankit.InputError` saying how to name a place): they would be thrown away.
    ``progress`` is called with the number of documents done after each batch.

    A reranker with nothing to keep per document (``bm25``, a cross-encoder, an LLM judge)
    returns ``kept=False`` without reading the documents. Counts come from the embedding
    caches' lookups (:func:`rerankit.cache.embedding_lookups`), so run one at a time.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    fields = (fields or InputFields()).with_options(**options)
    if reranker is None:
        reranker, note = default_reranker()
        if note:
            logger.warning("%s", note)
    with _cache_named(embedding_cache, reranker):
        built = load(reranker)
    scorers = keeping_scorers(built)
    if not scorers:
        return PrecomputeResult(documents=0, kept=False)
    where = _places(scorers)
    docs = fields.read(documents)
    seen: set[str] = set()  # a text repeated is encoded once
    whole = passages = done = 0
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
    )
    logger.info("precompute: %s", result)
    return result
