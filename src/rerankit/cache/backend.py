"""Which store a cache uses: Redis when a URL names one, else an SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .keys import KINDS
from .redis_store import RedisStore
from .sqlite import SQLiteStore
from .store import cache_url, check_bounds, default_cache_dir

__all__ = ["open_store"]


def open_store(
    kind: str,
    path: str | Path | None,
    url: str | None,
    *,
    ttl: float | None,
    max_stored: int | None,
    namespace: str | None = None,
    timeout: float | None = None,
) -> Any:
    """The store of ``kind`` the caches use: Redis when ``url`` (or, when ``path`` and ``url``
    are both None, ``$RERANKIT_CACHE_URL``) names one, else the SQLite file ``path`` (None:
    ``<kind>s.sqlite`` in :func:`default_cache_dir`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    check_bounds(ttl, max_stored)
    shared = cache_url(url) if (url is not None or path is None) else None
    if shared:
        if max_stored is not None:
            raise ValueError(
                "max_stored bounds an SQLite cache; a Redis cache is bounded by the server's "
                "maxmemory and maxmemory-policy (set ttl so volatile-lru can evict entries)"
            )
        return RedisStore(shared, kind, ttl=ttl, namespace=namespace, timeout=timeout)
    if path is None:
        path = default_cache_dir() / f"{kind}s.sqlite"
    return SQLiteStore(path, kind, ttl=ttl, max_stored=max_stored)
