"""The one small protocol every cache is kept behind, where caches live by default, and the
count of cache calls that failed.

A :class:`Store` holds one kind of entry (``embedding``, ``judgment`` or ``answer``) as bytes
under string keys: an SQLite file (:class:`~rerankit.cache.sqlite.SQLiteStore`, the default,
shared by the processes of one machine) or Redis/Valkey
(:class:`~rerankit.cache.redis_store.RedisStore`, shared by replicas). Reads and writes never
raise for the store's sake: a store that cannot answer gives a miss or drops the write, and
counts it in :func:`error_counts`; a call that skips a Redis server in the second after one
of its failures (not tried) is counted in :func:`skipped_counts` instead.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

from .._paths import default_cache_dir
from .._words import counted
from ..errors import RerankitError
from .keys import KINDS

__all__ = [
    "CACHE_URL_ENV",
    "LOOKUP_RESULTS",
    "CacheUnavailableError",
    "FailureLog",
    "Outage",
    "Store",
    "StoreInfo",
    "cache_url",
    "check_bounds",
    "check_url",
    "count_error",
    "count_lookups",
    "default_cache_dir",
    "error_counts",
    "lookup_counts",
    "redacted",
    "skipped_counts",
]

#: The environment variable naming a shared cache (``redis://host:6379/0``) for the
#: library, the CLI and Ray workers.
CACHE_URL_ENV = "RERANKIT_CACHE_URL"
_SCHEMES = ("redis", "rediss", "unix")


class CacheUnavailableError(RerankitError):
    """A cache could not be reached for an operation that must not pass silently
    (``info``, ``clear``), or its SQLite file could not be opened (made) at all; reads and
    writes never raise it."""


@dataclass
class StoreInfo:
    """What a store holds: ``entries``, ``bytes`` (on disk, or in Redis's memory, estimated
    from a sample), ``where`` it is, ``notes`` on its entries (e.g. that they never expire
    while Redis evicts only those that do) and ``server`` notes (Redis's memory settings)."""

    kind: str
    where: str
    entries: int
    bytes: int
    notes: list[str] = field(default_factory=list)
    server: list[str] = field(default_factory=list)


@runtime_checkable
class Store(Protocol):
    """Entries of one kind, bytes under string keys."""

    kind: str
    #: seconds an entry is kept after it is written (None: until cleared or evicted)
    ttl: float | None

    @property
    def where(self) -> str:
        """The file or URL (without password) the entries live in."""
        ...

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The stored value of each key, None where there is none (or none could be read)."""
        ...

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Store values (kept ``ttl`` seconds); a write that fails is dropped and counted."""
        ...

    def clear(self) -> int:
        """Delete every entry of this kind, and only those; returns how many went. Raises
        :class:`CacheUnavailableError` when the store cannot be reached."""
        ...

    def info(self) -> StoreInfo:
        """Entries and size (raises :class:`CacheUnavailableError` like :meth:`clear`)."""
        ...

    def claim(self, key: str, seconds: float) -> str | None:
        """Claim ``key`` for ``seconds``, for one of the processes sharing the store (the
        one that computes what goes under it): a token, None when another holds the claim,
        ``""`` when the store could not be asked (counted; go on as if holding it)."""
        ...

    def release(self, key: str, token: str) -> None:
        """Give up a claim (only if it is still ``token``'s; it expires anyway)."""
        ...

    def claimed(self, key: str) -> bool:
        """Whether someone holds a claim on ``key`` (False when the store cannot say)."""
        ...

    def ping(self) -> str | None:
        """None when the store can be reached now, else why not."""
        ...

    def close(self) -> None: ...


_ERRORS: Counter[str] = Counter()
_SKIPPED: Counter[str] = Counter()
_LOOKUPS: Counter[tuple[str, str]] = Counter()
_ERRORS_LOCK = threading.Lock()
#: what a lookup of each cache can find: ``hit`` (in the store: Redis, or an SQLite file),
#: ``memory`` (in this process's memory: embeddings only), ``miss`` (nowhere: computed)
LOOKUP_RESULTS = {"embedding": ("hit", "memory", "miss"), "judgment": ("hit", "miss")}


def count_lookups(kind: str, **results: int) -> None:
    """Count lookups of cache ``kind`` by result (:data:`LOOKUP_RESULTS`): ``hit=3, miss=1``."""
    with _ERRORS_LOCK:
        for result, n in results.items():
            _LOOKUPS[(kind, result)] += n


def lookup_counts() -> dict[str, dict[str, int]]:
    """Lookups of the embedding and judgment caches, by result, since the process started:
    what a service exports as ``rerankit_cache_lookups_total{cache=..., result=...}``
    (answers are counted apart: ``rerankit_answer_cache_total``). An embedding's ``hit`` is
    a vector read from the store (Redis: another replica's, or this one's before it was
    dropped from memory), ``memory`` one this process held; a judgment's ``hit`` is an LLM
    call saved."""
    with _ERRORS_LOCK:
        return {
            kind: {result: _LOOKUPS.get((kind, result), 0) for result in results}
            for kind, results in LOOKUP_RESULTS.items()
        }


def count_error(kind: str, n: int = 1) -> None:
    """Count ``n`` cache calls of ``kind`` answered without the cache because it failed."""
    with _ERRORS_LOCK:
        _ERRORS[kind] += n


def error_counts() -> dict[str, int]:
    """Cache calls, by kind, that tried the store and failed (unreachable, slow, full,
    locked) since the process started, so went without the cache: what a service exports as
    ``rerankit_cache_errors_total{cache=...}``. Calls that did not try it, in the second a
    Redis server is skipped after a failure, are :func:`skipped_counts`."""
    with _ERRORS_LOCK:
        return {kind: _ERRORS.get(kind, 0) for kind in KINDS}


def skipped_counts() -> dict[str, int]:
    """Cache calls, by kind, that went without the cache without trying it: a Redis server
    is skipped for ``RETRY_AFTER`` seconds after a failure. What a service exports as
    ``rerankit_cache_skipped_total{cache=...}``."""
    with _ERRORS_LOCK:
        return {kind: _SKIPPED.get(kind, 0) for kind in KINDS}


class FailureLog:
    """Counts a store's failed calls (:func:`count_error`) and logs them as a warning at
    most once per ``interval`` seconds, saying how many failed since the last warning."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0) -> None:
        self.logger, self.interval = logger, interval
        self._lock = threading.Lock()
        self._last = -math.inf
        self._unlogged = 0

    def failed(
        self,
        kind: str,
        where: str,
        what: str,
        exc: BaseException,
        *,
        tried: bool = True,
        said: str | None = None,
        log: bool = True,
    ) -> None:
        """A call of ``kind`` that went without the store: it failed (``tried``), or it
        skipped a server that failed a moment ago (counted apart: :func:`skipped_counts`).
        ``said``: the failure as the warning says it (default: its type and text); ``log``
        False: counted only (an :class:`Outage` says it)."""
        if tried:
            count_error(kind)
        else:
            with _ERRORS_LOCK:
                _SKIPPED[kind] += 1
        if not log:
            return
        now = time.monotonic()
        with self._lock:
            self._unlogged += 1
            if now - self._last < self.interval:
                return
            self._last, n, self._unlogged = now, self._unlogged, 0
        self.logger.warning(
            "%s cache %s: %s failed (%s); computing without the cache (%s "
            "since the last warning, at most one warning a minute)",
            kind,
            where,
            what,
            said or f"{type(exc).__name__}: {exc}",
            counted(n, "call"),
        )


class Outage:
    """A shared server's outages, as its log says them: one WARNING when it goes (its first
    failure, at most one such warning a minute, so a server that flaps is not a line a
    second) and, for an outage so announced, one INFO when it answers again, with how long
    it was out and how many cache calls went without it. ``where``: the server (no
    password). Safe to share between threads."""

    def __init__(self, logger: logging.Logger, where: str, interval: float = 60.0) -> None:
        self.logger, self.where, self.interval = logger, where, interval
        self._lock = threading.Lock()
        #: when (``time.monotonic()``) the current outage began; None while it answers
        self.since: float | None = None
        #: why it cannot be used now, in a few words and no address (for a public probe)
        self.reason: str | None = None
        self._announced = False
        self._last_announced = -math.inf
        self._calls = 0

    def failed(self, what: str, said: str, reason: str, *, call: bool = True) -> None:
        """``what`` (``a read``, ``a PING``) failed, ``said`` so (for the log) and ``reason``
        so (for a probe); ``call``: a cache call that went without the server."""
        now = time.monotonic()
        with self._lock:
            self._calls += call
            self.reason = reason
            if self.since is not None:
                return
            self.since = now
            self._announced = now - self._last_announced >= self.interval
            if not self._announced:
                return
            self._last_announced = now
        self.logger.warning(
            "shared cache %s: %s failed (%s); computing without the cache until the server "
            "answers again (a line will say when)",
            self.where,
            what,
            said,
        )

    def skipped(self) -> None:
        """A cache call went without the server, skipped after a failure."""
        with self._lock:
            self._calls += self.since is not None

    def answered(self) -> None:
        """A call to the server succeeded: an outage, if one was going on, is over."""
        if self.since is None:  # (the common case: no lock)
            return
        with self._lock:
            if self.since is None:
                return
            out, calls, announced = time.monotonic() - self.since, self._calls, self._announced
            self.since, self.reason, self._calls = None, None, 0
        if announced:
            self.logger.info(
                "shared cache %s: the server answers again, after %.1f s out; %s "
                "went without it meanwhile",
                self.where,
                out,
                counted(calls, "cache call"),
            )


def check_url(url: str, where: str = "cache url") -> str:
    """``url`` if it names a Redis/Valkey server (``redis://``, ``rediss://`` with TLS, or
    ``unix://`` a socket); a ValueError saying what is wrong otherwise, never its password
    (:func:`_quoted`)."""
    parts = urlsplit(url)
    shown, hint = _quoted(url)
    if parts.scheme not in _SCHEMES:
        raise ValueError(
            f"{where}: {shown!r} is not a Redis or Valkey URL; use "
            "redis://HOST:PORT/DB (or rediss:// for TLS, unix:///path/to/socket)"
        )
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError(f"{where}: {shown!r} names no host{hint}")
    if parts.scheme == "unix" and not parts.path:
        raise ValueError(f"{where}: {shown!r} names no socket path")
    if parts.scheme != "unix" and parts.path.strip("/"):
        db = parts.path.strip("/")
        if not db.isdigit():
            raise ValueError(f"{where}: the database in {shown!r} must be a number{hint}")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ValueError(f"{where}: {shown!r} has a port that is not a number{hint}") from None
    problem = _option_problem(parts.scheme, parts.query)
    if problem is not None:
        raise ValueError(f"{where}: {shown!r}: {problem}")
    return url


@functools.cache
def _options(scheme: str) -> frozenset[str] | None:
    """The ``?name=value`` options the Redis client takes in a url of ``scheme`` (its
    connection pool's and connection's keywords), or None without the client."""
    try:
        from redis import connection
    except ImportError:  # said where a cache is made (the 'redis' extra)
        return None
    kinds = {"redis": "Connection", "rediss": "SSLConnection", "unix": "UnixDomainSocketConnection"}
    names: set[str] = set()
    for cls in (connection.ConnectionPool, *getattr(connection, kinds[scheme]).__mro__):
        init = cls.__dict__.get("__init__")
        if init is not None:
            parameters = inspect.signature(init).parameters.values()
            names |= {
                p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
    return frozenset(names - {"self"})


def _option_problem(scheme: str, query: str) -> str | None:
    """Why an option of a url's query is one the Redis client would refuse at its first
    connection (every cache call failing then, not the start), or None. ``namespace`` is
    rerankit's own."""
    given = [k for k, _ in parse_qsl(query, keep_blank_values=True) if k != "namespace"]
    known = _options(scheme) if given else None
    for name in given if known is not None else ():
        if name in known:
            continue
        tls_only = (_options("rediss") or set()) - (_options("redis") or set())
        if scheme != "rediss" and name in tls_only:
            return f"{name!r} is an option of rediss:// (TLS) urls: write rediss:// for TLS"
        close = difflib.get_close_matches(name, sorted(known), n=1)
        meant = f" (did you mean {close[0]!r}?)" if close else ""
        return (
            f"{name!r} is not an option of a {scheme}:// url{meant}; options are the Redis "
            "client's (socket_timeout, ssl_ca_certs with rediss://, ...) and namespace"
        )
    return None


#: what a password needs to stay inside the url's user part
_ESCAPES = (
    "; inside a password write / ? # @ % as %2F %3F %23 %40 %25 (in the url, and in the "
    "value of a variable it names)"
)


def _quoted(url: str) -> tuple[str, str]:
    """``url`` as an error may quote it, and what to do: where an ``@`` comes after the part
    the url was read as its user and host (a ``/``, ``?`` or ``#`` in the password ended it
    early), the password is not where :func:`redacted` looks for it, so everything before
    the last ``@`` is hidden, and the error says how to write such a password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest and "@" not in urlsplit(url).netloc:
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}", _ESCAPES
    return redacted(url), ""


def redacted(url: str) -> str:
    """``url`` without its password (for messages and ``where``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return parts._replace(netloc=user + netloc).geturl()


def cache_url(url: str | None = None) -> str | None:
    """The shared cache's URL: ``url`` when given ("" for none), else ``$RERANKIT_CACHE_URL``
    (checked), else None (SQLite on this machine)."""
    if url is None:
        url = os.environ.get(CACHE_URL_ENV, "").strip()
        where = f"${CACHE_URL_ENV}"
    else:
        where = "cache url"
    return check_url(url, where) if url else None


def check_bounds(ttl: float | None, max_stored: int | None) -> None:
    """A ValueError for a ttl or max_stored that is not positive."""
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be > 0 seconds (None: keep entries), got {ttl!r}")
    if max_stored is not None and max_stored < 1:
        raise ValueError(f"max_stored must be >= 1 (None: no bound), got {max_stored!r}")
