"""The judgment cache: LLM judgments (any JSON value) by a hash of everything the provider
was sent; a hit means no provider call."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backend import StoreOptions, open_store
from .store import count_lookups

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["JudgmentCache", "judgment_cache"]


class JudgmentCache:
    """LLM judgments (any JSON value) by key; safe to share between threads and processes.

    ``path``: an SQLite file, or ``":memory:"`` for a cache that lives as long as the object;
    ``url``: a Redis/Valkey server shared by replicas (``redis://host:6379/0``). With
    neither: ``$RERANKIT_CACHE_URL`` when set, else ``judgments.sqlite`` in
    :func:`~rerankit.cache.default_cache_dir`. ``ttl`` (seconds) and ``max_stored`` (SQLite:
    entries kept) bound it; see :class:`~rerankit.cache.StoreOptions` for the others. Build
    keys with :meth:`key`.
    """

    kind = "judgment"

    def __init__(self, path: str | Path | None = None, **options: Unpack[StoreOptions]) -> None:
        self.store: Any = open_store(self.kind, path, **options)
        self.path = self.store.where

    @staticmethod
    def key(**parts: Any) -> str:
        """A stable key: SHA-256 of the parts as canonical JSON (ASCII-escaped, so any
        string, lone surrogates included, gives a key)."""
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=True, default=str)
        return hashlib.sha256(blob.encode("ascii")).hexdigest()

    def get(self, key: str) -> Any | None:
        return self.get_many([key])[0]

    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def get_many(self, keys: list[str]) -> list[Any | None]:
        """The values of ``keys`` (None where absent or unreadable)."""
        found = [_load(v) for v in self.store.get_many(keys)]
        hits = sum(v is not None for v in found)
        count_lookups(self.kind, hit=hits, miss=len(found) - hits)
        return found

    def put_many(self, items: list[tuple[str, Any]]) -> None:
        """Store several judgments at once (one transaction, or one round trip)."""
        if items:
            self.store.put_many([(k, json.dumps(v).encode("utf-8")) for k, v in items])

    def __len__(self) -> int:
        return self.store.info().entries

    def clear(self) -> None:
        """Delete every judgment (only those: other keys in a shared Redis stay)."""
        self.store.clear()

    def close(self) -> None:
        self.store.close()


def _load(payload: bytes | None) -> Any | None:
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:  # not written by this format after all: a miss
        return None


def judgment_cache(cache: Any) -> JudgmentCache | None:
    """A scorer's ``cache=`` argument: True (the default: ``$RERANKIT_CACHE_URL``, else the
    default SQLite file), False/None (none), ``"memory"``, a path, a Redis URL, or a
    :class:`JudgmentCache`."""
    if isinstance(cache, JudgmentCache):
        return cache
    if cache is True:
        return JudgmentCache()
    if cache is False or cache is None:
        return None
    if cache == "memory":
        return JudgmentCache(":memory:")
    if isinstance(cache, str) and cache.split("://", 1)[0] in ("redis", "rediss", "unix"):
        return JudgmentCache(url=cache)
    if isinstance(cache, (str, Path)):
        return JudgmentCache(cache)
    raise TypeError(
        "cache must be True, False, 'memory', a path, a Redis URL or a JudgmentCache, "
        f"not {cache!r}"
    )
