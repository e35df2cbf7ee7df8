"""The shared cache server (``[cache] url``, Redis or Valkey) as the service watches it:
``rerankit_cache_up`` on ``/metrics``, what ``/ready`` says while it cannot be used with
``[cache] required = true``, and ``/info``'s account of it; and the caches' lookups by
result (``rerankit_cache_lookups_total``: embeddings and LLM judgments, wherever kept).

Whether it can be used is what its last call said (a read, a write, a claim: the answer
cache's, the embeddings', the judgments') or a PING the service sends when asked: on each
scrape of ``/metrics``, each ``/ready`` with ``required = true`` and each ``/info`` (one PING
for all it says). A PING is one call on a thread of its own, bounded by ``[cache] timeout``.
``/ready`` needs no key, so what it says holds no address: the server and the error are
said by ``/info`` and the log (:class:`~rerankit.cache.store.Outage`: a warning when it
goes, a line when it is back).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..cache import lookup_counts
from ..cache.redis_store import RedisStore
from ..cache.store import redacted
from .metrics import Metrics
from .settings import ServerSettings

__all__ = ["SharedCache"]


class _CacheUp:
    """``rerankit_cache_up``: read from the :class:`SharedCache` when scraped."""

    def __init__(self, shared: SharedCache) -> None:
        from prometheus_client.core import GaugeMetricFamily  # (the 'server' extra)

        self.family, self.shared = GaugeMetricFamily, shared

    def collect(self) -> Any:
        yield self.family(
            "rerankit_cache_up",
            "1 while the shared cache server ([cache] url) can be used (its last call or PING "
            "succeeded), 0 from a failure (not reachable, timed out, authentication failed) "
            "until a call succeeds; 1 without a shared server (SQLite files on this machine)",
            value=0.0 if self.shared.outage() else 1.0,
        )


class _CacheLookups:
    """``rerankit_cache_lookups_total{cache, result}``: read from
    :func:`rerankit.cache.lookup_counts` when scraped."""

    def __init__(self) -> None:
        from prometheus_client.core import CounterMetricFamily  # (the 'server' extra)

        self.family = CounterMetricFamily

    def collect(self) -> Any:
        family = self.family(
            "rerankit_cache_lookups",
            "Lookups of the embedding and judgment caches by result: hit (read from the "
            "store: Redis, or an SQLite file), memory (held in this process: embeddings), "
            "miss (computed: encoded, or an LLM call), since the process started",
            labels=["cache", "result"],
        )
        for kind, results in lookup_counts().items():
            for result, count in results.items():
                family.add_metric([kind, result], count)
        yield family


class SharedCache:
    """The service's shared cache server, or none (``store`` None: no ``[cache] url``)."""

    def __init__(self, settings: ServerSettings, metrics: Metrics) -> None:
        cache = settings.cache
        url = cache.resolved_url
        self.required, self.keys = cache.required, bool(settings.api_keys)
        self.url = redacted(url) if url else None
        self.store = RedisStore(url, "answer", timeout=cache.timeout) if url else None
        #: PINGs block (up to [cache] timeout): on threads of their own, never a pipeline's
        self._executor = ThreadPoolExecutor(2, thread_name_prefix="rerankit-cache-ping")
        metrics.registry.register(_CacheUp(self))
        metrics.registry.register(_CacheLookups())

    def outage(self) -> tuple[float, str] | None:
        """While the server cannot be used: for how many seconds, and why in a few words
        (no address); None while it can, or when there is none."""
        return None if self.store is None else self.store.outage()

    async def check(self) -> str | None:
        """Ask the server now (one PING): None when it answered (or there is none), else
        why not, in full. The answer is the server's state (:meth:`outage`)."""
        if self.store is None:
            return None
        ping = functools.partial(self.store.ping, track=True)
        return await asyncio.get_running_loop().run_in_executor(self._executor, ping)

    async def unready(
        self, *, public: bool = True, checked: tuple[str | None] | None = None
    ) -> str | None:
        """With ``required = true``, why the replica is not ready for its cache (None: it
        is, or the cache is not required): ``public``, for ``/ready``, in a few words with
        no address, else in full (``/info``). ``checked``: what a :meth:`check` the request
        already made said (in a 1-tuple), else the server is asked now (one PING)."""
        if not self.required:
            return None
        problem = checked[0] if checked is not None else await self.check()
        if problem is None or not public:
            return problem
        outage = self.outage()
        reason = outage[1] if outage else "not reachable"
        where = "/info (with an API key)" if self.keys else "/info"
        return (
            f"the shared cache cannot be used ({reason}), and [cache] required = true; "
            f"{where} and the log say which server and why"
        )

    def describe(self, problem: str | None) -> dict[str, Any]:
        """What ``/info`` says of the shared server, given what its :meth:`check` said
        (``problem``): ``url`` (no password), ``up``, and while it cannot be used,
        ``problem`` and ``out_seconds`` (all null without one)."""
        if self.store is None:
            return {"url": None, "up": None}
        outage = self.outage()
        said: dict[str, Any] = {"url": self.url, "up": outage is None}
        if outage is not None:
            said |= {"problem": problem or outage[1], "out_seconds": round(outage[0], 1)}
        return said
