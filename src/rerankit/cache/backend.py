"""Which store a cache uses: Redis when a URL names one, else an SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from .keys import KINDS
from .redis_store import RedisStore
from .sqlite import SQLiteStore
from .store import cache_url, check_bounds, default_cache_dir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["StoreOptions", "open_store"]


class StoreOptions(TypedDict, total=False):
    """Where a cache keeps its entries, and for how long: ``url``, a Redis/Valkey server
    (``redis://host:6379/0``; None: ``$RERANKIT_CACHE_URL`` when no path is given; ``""``:
    none); ``ttl``, seconds an entry is kept (None: until evicted or cleared); ``max_stored``,
    entries an SQLite cache keeps (the oldest written go first); ``namespace``, the Redis key
    prefix (default ``rerankit``); ``timeout``, seconds per Redis call (default 0.5)."""

    url: str | None
    ttl: float | None
    max_stored: int | None
    namespace: str | None
    timeout: float | None


def open_store(kind: str, path: str | Path | None = None, **options: Unpack[StoreOptions]) -> Any:
    """The store of ``kind``: the SQLite file ``path`` when given, else Redis when the
    ``url`` option (or, when it is None, ``$RERANKIT_CACHE_URL``) names a server, else the
    SQLite file ``<kind>s.sqlite`` in :func:`default_cache_dir`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    url, ttl, max_stored = options.get("url"), options.get("ttl"), options.get("max_stored")
    check_bounds(ttl, max_stored)
    if path is not None and url:
        raise ValueError("give a cache a path (SQLite) or a url (Redis), not both")
    shared = cache_url(url) if path is None else None
    if shared:
        if max_stored is not None:
            raise ValueError(
                "max_stored bounds an SQLite cache; a Redis cache is bounded by the server's "
                "maxmemory and maxmemory-policy (set ttl so volatile-lru can evict entries)"
            )
        return RedisStore(
            shared,
            kind,
            ttl=ttl,
            namespace=options.get("namespace"),
            timeout=options.get("timeout"),
        )
    if path is None:
        path = default_cache_dir() / f"{kind}s.sqlite"
    return SQLiteStore(path, kind, ttl=ttl, max_stored=max_stored)
