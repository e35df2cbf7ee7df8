"""Which store a cache uses: Redis when a URL names one, else an SQLite file; and the
options a process (the service) gives every cache opened without a place of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from .keys import KINDS
from .redis_store import RedisStore
from .sqlite import SQLiteStore
from .store import cache_url, check_bounds, default_cache_dir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["StoreOptions", "cache_defaults", "current_defaults", "open_store", "with_defaults"]

#: the settings (a :class:`~rerankit.cache.CacheSettings`) whose options caches opened
#: without a path or url take here (see :func:`cache_defaults`)
_DEFAULTS: ContextVar[Any] = ContextVar("rerankit_cache_defaults", default=None)


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


@contextlib.contextmanager
def cache_defaults(settings: Any) -> Iterator[None]:
    """Inside (and in the threads and tasks started inside, which copy the context), every
    cache opened with neither a path nor a url (a scorer's default judgment or embedding
    cache) takes its options from ``settings``, a :class:`~rerankit.cache.CacheSettings`:
    its Redis server, namespace, timeout, ttl and bound, instead of ``$RERANKIT_CACHE_URL``
    alone. The service builds its pipelines inside it, so ``[cache]`` reaches them.
    Registered rerankers shared by name are built once per such settings."""
    token = _DEFAULTS.set(settings)
    try:
        yield
    finally:
        _DEFAULTS.reset(token)


def current_defaults() -> Any:
    """The settings :func:`cache_defaults` gives here, or None."""
    return _DEFAULTS.get()


def with_defaults(kind: str, path: Any, options: StoreOptions) -> StoreOptions:
    """``options`` for a cache of ``kind``: as given when it names a ``path`` or a ``url``
    (``""`` included) or no defaults are set, else the defaults' options for ``kind`` with
    the values given on top."""
    defaults = _DEFAULTS.get()
    if defaults is None or path is not None or options.get("url") is not None:
        return options
    given = {k: v for k, v in options.items() if v is not None}
    return StoreOptions(**{**defaults.options(kind), **given})  # type: ignore[typeddict-item]


def open_store(kind: str, path: str | Path | None = None, **options: Unpack[StoreOptions]) -> Any:
    """The store of ``kind``: the SQLite file ``path`` when given, else Redis when the
    ``url`` option (or, when it is None, the :func:`cache_defaults` in force, else
    ``$RERANKIT_CACHE_URL``) names a server, else the SQLite file ``<kind>s.sqlite`` in
    :func:`default_cache_dir`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    options = with_defaults(kind, path, options)
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
