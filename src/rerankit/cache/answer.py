"""The answer cache: whole rerank answers, stored as the bytes that were sent, by the
pipeline's fingerprint, the caller's (tenant's) identity and a hash of exactly what
determines the answer.

The key of an answer is ``<fingerprint>:<tenant digest>:<request digest>`` (in Redis, under
``<namespace>:answer:``). The request digest covers the query, the documents in their order
(all of each: text and every field) and every option that changes the answer, as canonical
JSON; values that are not plain data are refused rather than turned into text that might
hold an address or a time. Give it nothing volatile (request ids, deadlines, trace headers):
those would make keys that never hit.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backend import StoreOptions, open_store, with_defaults
from .keys import canonical_json, digest

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_ANSWER_TTL", "AnswerCache", "answer_key"]

#: seconds an answer is kept unless told otherwise
DEFAULT_ANSWER_TTL = 3600.0


def answer_key(
    fingerprint: str,
    *,
    tenant: str | None,
    query: str,
    documents: Sequence[Any],
    options: Mapping[str, Any],
) -> str:
    """The key of one answer. ``fingerprint``: the pipeline's (see
    :func:`~rerankit.cache.pipeline_fingerprint`); ``tenant``: who asks (an API key; stored
    only as a digest), None for an open service, so tenants never read each other's answers;
    ``documents`` as sent, in order; ``options``: every option that changes the answer
    (``top_k``, fields, ...). Raises TypeError naming any part that is not plain data."""
    if not isinstance(fingerprint, str) or not fingerprint:
        raise ValueError("fingerprint must be a non-empty string")
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    who = "-" if tenant is None else digest("tenant\x00" + tenant, 16)
    request = canonical_json(
        {"query": query, "documents": list(documents), "options": dict(options)}, "request"
    )
    return f"{fingerprint}:{who}:{digest(request)}"


class AnswerCache:
    """Rerank answers (bytes: the response as sent) by :func:`answer_key`; safe to share
    between threads and processes.

    ``url``: a Redis/Valkey server shared by replicas; ``path``: an SQLite file; with
    neither, ``$RERANKIT_CACHE_URL`` when set, else ``answers.sqlite`` in
    :func:`~rerankit.cache.default_cache_dir`. ``ttl``: seconds an answer is kept (default
    an hour); ``max_stored`` (SQLite): answers kept; see
    :class:`~rerankit.cache.StoreOptions` for the others. Counts ``hits``, ``misses``,
    ``bytes_read`` and ``bytes_written``.
    """

    kind = "answer"
    key = staticmethod(answer_key)

    def __init__(self, path: str | Path | None = None, **options: Unpack[StoreOptions]) -> None:
        options = with_defaults(self.kind, path, options)
        options.setdefault("ttl", DEFAULT_ANSWER_TTL)
        self.store: Any = open_store(self.kind, path, **options)
        self._lock = threading.Lock()
        self.hits = self.misses = self.bytes_read = self.bytes_written = 0

    def get(self, key: str) -> bytes | None:
        """The answer stored under ``key``, or None (absent, expired, another format, or
        the store could not be read)."""
        (value,) = self.store.get_many([key])
        with self._lock:
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self.bytes_read += len(value)
        return value

    def put(self, key: str, answer: bytes) -> None:
        """Keep ``answer`` (the bytes to send again) under ``key``."""
        if not isinstance(answer, (bytes, bytearray, memoryview)):
            raise TypeError(f"answer must be bytes, not {type(answer).__name__}")
        self.store.put_many([(key, bytes(answer))])
        with self._lock:
            self.bytes_written += len(answer)

    def claim(self, key: str, seconds: float) -> str | None:
        """Claim the computing of the answer under ``key`` for ``seconds``, among every
        process sharing the store (a short Redis lock, or a row in the SQLite file): a token
        to :meth:`release` with once the answer is stored, None when another process holds
        the claim (wait for its answer: :meth:`claimed`, :meth:`get`), ``""`` when the store
        could not be asked (compute)."""
        return self.store.claim(key, seconds)

    def release(self, key: str, token: str) -> None:
        """Give up a claim from :meth:`claim`."""
        self.store.release(key, token)

    def claimed(self, key: str) -> bool:
        """Whether another process is computing the answer under ``key``."""
        return self.store.claimed(key)

    def clear(self) -> int:
        """Delete every answer (only answers); returns how many."""
        return self.store.clear()

    def close(self) -> None:
        self.store.close()
