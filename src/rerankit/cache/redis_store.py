"""The Redis/Valkey store (extra ``redis``): entries shared by every process and replica that
names the same server.

Keys are ``<namespace>:<kind>:<key>`` (namespace ``rerankit`` unless told), so rerankit's
entries sit beside anything else in the database and :meth:`RedisStore.clear` deletes only
them (SCAN for the prefix, then UNLINK; never FLUSHDB). Each value carries the cache format
(:mod:`rerankit.cache.keys`); ``ttl`` becomes each key's expiry, and the memory bound is the
server's ``maxmemory`` with its ``maxmemory-policy``.

Every call is bounded by ``timeout`` seconds (to connect and to read) and is not retried: a
server that is down, slow or full gives misses and dropped writes, counted (and logged: one
warning when the server goes, one line when it answers again, with how long it was out; a
full one, at most a warning a minute), and for ``RETRY_AFTER`` seconds after a failure calls
skip the server
altogether (counted apart from the failures: :func:`~rerankit.cache.store.skipped_counts`), so
a dead server costs nothing but the cache. The connection pool reconnects by
itself once the server answers again.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .._optional import require
from .keys import decode, encode
from .store import (
    CacheUnavailableError,
    FailureLog,
    Outage,
    StoreInfo,
    check_bounds,
    check_url,
    redacted,
)

__all__ = [
    "AUTH_FAILED",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "RETRY_AFTER",
    "RedisStore",
    "authentication_failed",
    "key_namespace",
    "split_url",
]

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "rerankit"
#: seconds one Redis call may take to connect, and to answer
DEFAULT_TIMEOUT = 0.5
#: seconds calls skip a server after it failed (then the next call tries it again)
RETRY_AFTER = 1.0
_CHUNK = 500  # keys per MGET or pipeline
_SAMPLE = 200  # keys whose MEMORY USAGE estimates the size of a kind
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: deletes a claim only if it is still the caller's (it may have expired and been taken)
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


def key_namespace(url: str, namespace: str | None, given_as: str = "namespace") -> str:
    """The namespace keys go under: the ``namespace`` query parameter of ``url``, or
    ``namespace`` (the option ``given_as`` names it), else :data:`DEFAULT_NAMESPACE`. Both
    given is a ValueError, whatever their values: one would silently lose."""
    from_url = split_url(url)[1]
    if from_url is not None and namespace is not None:
        raise ValueError(
            f"give the namespace in the url (?namespace={from_url}) or in {given_as} "
            f"({namespace}), not both"
        )
    return from_url or namespace or DEFAULT_NAMESPACE


def split_url(url: str) -> tuple[str, str | None]:
    """``url`` without rerankit's own ``namespace`` query parameter, and that parameter.
    The url's text is kept but for the parameter: rebuilt by ``urllib``, ``unix:///path``
    would lose its ``//``, which redis-py requires."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    namespace = next((v for k, v in query if k == "namespace"), None)
    if namespace is None:
        return url, None
    rest = urlencode([(k, v) for k, v in query if k != "namespace"])
    base = url.split("?", 1)[0]  # scheme, user, host and path as written
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return base + (f"?{rest}" if rest else "") + fragment, namespace


class _Server:
    """One client (and its connection pool) per URL and timeout in a process, shared by the
    stores that name it, with the time until which calls skip it, the count of their
    failures and its outages (:class:`~rerankit.cache.store.Outage`: said once for all of
    them)."""

    def __init__(self, url: str, timeout: float) -> None:
        redis = require("redis", "a Redis or Valkey cache")
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.errors = (redis.RedisError, OSError)
        self.url = url
        self._refused = redis.AuthenticationError  # (NOAUTH, WRONGPASS, HELLO before AUTH)
        self.client = redis.Redis.from_url(
            url,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            health_check_interval=0,
        )
        said = self.client.connection_pool.connection_kwargs
        #: seconds to connect and to be answered, as used (:attr:`RedisStore.timeouts`)
        self.timeouts = (said.get("socket_connect_timeout"), said.get("socket_timeout"))
        self._timeouts = (redis.TimeoutError, TimeoutError)
        self.skip_until = 0.0
        #: the failures of every store on this server (counted; a full server's warned of
        #: once a minute in all), and its outages (a warning when it goes, a line when back)
        self.failures = FailureLog(logger)
        self.outage = Outage(logger, redacted(url))

    def said(self, exc: BaseException) -> str:
        """``exc``, a call's failure, as said to the operator: a refused authentication as
        what to mend in the url (:func:`authentication_failed`), else its type and text."""
        if isinstance(exc, self._refused):
            return authentication_failed(self.url, exc)
        text = f"{type(exc).__name__}: {exc}"
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return f"{text} ({_OWN_CA})"
        if "_ssl.c" in text and "ssl_certfile=" not in self.url:  # refused in the handshake
            return f"{text} ({_CLIENT_CERTIFICATE})"
        return text

    def reason(self, exc: BaseException) -> str:
        """Why ``exc`` means the server cannot be used, in a few words and no address."""
        if isinstance(exc, self._refused):
            return AUTH_FAILED
        if not isinstance(exc, self.errors):  # the client's own, not the connection's
            return f"failed ({type(exc).__name__})"
        kind = "timed out" if isinstance(exc, self._timeouts) else "not reachable"
        return f"{kind} ({type(exc).__name__})"

    def down(self) -> None:
        """After a failure: skip the server for a while, and drop the idle connections (a
        restarted server left them broken; new ones are made on the next call)."""
        self.skip_until = time.monotonic() + RETRY_AFTER
        with contextlib.suppress(Exception):  # best effort: the pool makes new ones anyway
            self.client.connection_pool.disconnect(inuse_connections=False)


#: what a TLS failure needs: a CA of one's own, or a client certificate
_OWN_CA = (
    "a server certificate signed by a CA of your own: add ?ssl_ca_certs=/path/to/ca.crt to "
    "the url (an absolute path)"
)
_CLIENT_CERTIFICATE = (
    "if the server wants a client certificate (tls-auth-clients): add "
    "&ssl_certfile=/path/to/client.crt&ssl_keyfile=/path/to/client.key to the url"
)
#: how a failure starts when the server answered and refused the url's user or password
AUTH_FAILED = "authentication failed"


def authentication_failed(url: str, exc: BaseException) -> str:
    """What to do when the server at ``url`` refused to authenticate (``exc``, its answer):
    give a password where the url has none, else check the one it has."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return (
            f"{AUTH_FAILED}: the server needs a password and the url gives none: put it in "
            "the url, redis://:PASSWORD@HOST:PORT/DB (redis://USER:PASSWORD@HOST:PORT/DB for "
            'an ACL user; in a settings file, url = "redis://:${REDIS_PASSWORD}@HOST:PORT/DB" '
            "reads it from a variable)"
        )
    return (
        f"{AUTH_FAILED}: the server refused the user and password in the url ({exc}): check "
        "them (in the url, write @ : / % inside a password as %40 %3A %2F %25)"
    )


_SERVERS: dict[tuple[str, float], _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _server(url: str, timeout: float) -> _Server:
    with _SERVERS_LOCK:
        found = _SERVERS.get((url, timeout))
        if found is None:
            found = _SERVERS[(url, timeout)] = _Server(url, timeout)
        return found


class RedisStore:
    """Entries of one ``kind`` under ``<namespace>:<kind>:`` on the server at ``url``
    (``redis://HOST:PORT/DB``; the namespace is a ``namespace`` query parameter of the url or
    ``namespace``, not both: :func:`key_namespace`). ``ttl``: seconds each entry is kept;
    ``timeout``: seconds per call."""

    def __init__(
        self,
        url: str,
        kind: str,
        *,
        ttl: float | None = None,
        namespace: str | None = None,
        timeout: float | None = None,
    ) -> None:
        check_bounds(ttl, None)
        plain = split_url(check_url(url))[0]
        namespace = key_namespace(url, namespace)
        if not self.valid_namespace(namespace):
            raise ValueError(
                f"namespace {namespace!r}: use letters, digits, '_', '.' and '-' only "
                "(it is a key prefix that clear() matches)"
            )
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.kind, self.ttl, self.namespace, self.timeout = kind, ttl, namespace, timeout
        self.url = url
        self.prefix = f"{namespace}:{kind}:"
        #: claims (see :meth:`claim`) live beside the entries, not among them
        self.claims = f"{namespace}:lock:{kind}:"
        self._server = _server(plain, timeout)
        self._failures = self._server.failures

    @property
    def timeouts(self) -> tuple[float | None, float | None]:
        """The seconds a call waits to connect, and to be answered, as the client uses
        them: the url's ``?socket_connect_timeout=`` and ``?socket_timeout=`` win over
        ``timeout`` (None: no limit)."""
        return self._server.timeouts

    @staticmethod
    def valid_namespace(namespace: str) -> bool:
        """Whether ``namespace`` can prefix keys: letters, digits, '_', '.' and '-' (no
        glob character, so ``clear`` matches exactly its keys; no ':')."""
        return isinstance(namespace, str) and bool(_NAMESPACE.match(namespace))

    @property
    def where(self) -> str:
        return f"{redacted(self.url)} ({self.prefix}*)"

    def _usable(self) -> bool:
        if time.monotonic() < self._server.skip_until:  # failed a moment ago: not again yet
            down = ConnectionError("skipped: the server failed less than a moment ago")
            self._failures.failed(self.kind, self.where, "a call", down, tried=False, log=False)
            self._server.outage.skipped()
            return False
        return True

    def _failed(self, what: str, exc: BaseException) -> None:
        said, full = self._server.said(exc), _is_full(exc)
        # a full server still answers (warned of once a minute): no need to skip it
        self._failures.failed(self.kind, self.where, what, exc, said=said, log=full)
        if not full:
            self._server.down()
            self._server.outage.failed(what, said, self._server.reason(exc))

    def _answered(self) -> None:
        self._server.outage.answered()

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys or not self._usable():
            return [None] * len(keys)
        values: list[Any] = []
        try:
            for lo in range(0, len(keys), _CHUNK):
                chunk = [self.prefix + k for k in keys[lo : lo + _CHUNK]]
                values += self._server.client.mget(chunk)
        except Exception as exc:  # any failure costs the cache only (see .store)
            self._failed("a read", exc)
            return [None] * len(keys)
        self._answered()
        return [decode(v) for v in values]

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if not items or not self._usable():
            return
        expire = int(self.ttl * 1000) if self.ttl is not None else None
        try:
            for lo in range(0, len(items), _CHUNK):
                pipe = self._server.client.pipeline(transaction=False)
                for key, value in items[lo : lo + _CHUNK]:
                    pipe.set(self.prefix + key, encode(value), px=expire)
                pipe.execute()
        except Exception as exc:  # any failure costs the cache only (see .store)
            self._failed("a write", exc)
            return
        self._answered()

    def claim(self, key: str, seconds: float) -> str | None:
        """Claim ``key`` for ``seconds`` (``SET NX PX``: one caller of all that share the
        server gets it): a token to :meth:`release` it with, None when another holds it, or
        ``""`` when the server could not be asked (the caller goes on as if it held it)."""
        if not self._usable():
            return ""
        token = uuid.uuid4().hex
        try:
            won = self._server.client.set(
                self.claims + key, token, nx=True, px=max(1, int(seconds * 1000))
            )
        except Exception as exc:  # any failure costs the cache only (see .store)
            self._failed("a claim", exc)
            return ""
        self._answered()
        return token if won else None

    def release(self, key: str, token: str) -> None:
        """Give up a claim made with :meth:`claim` (only if it is still ``token``'s)."""
        if not token or not self._usable():
            return
        try:
            self._server.client.eval(_RELEASE, 1, self.claims + key, token)
        except Exception as exc:  # any failure costs the cache only (see .store)
            self._failed("a release", exc)
            return
        self._answered()

    def claimed(self, key: str) -> bool:
        """Whether someone holds a claim on ``key`` (False when the server cannot say)."""
        if not self._usable():
            return False
        try:
            held = bool(self._server.client.exists(self.claims + key))
        except Exception as exc:  # any failure costs the cache only (see .store)
            self._failed("a read", exc)
            return False
        self._answered()
        return held

    def ping(self, *, track: bool = False) -> str | None:
        """None when the server answers now, else why not (not counted as a cache error),
        naming the server alone: a PING asks it, not this store's kind or namespace.
        ``track``: the outcome is the server's state (a service's probe: its outage lines,
        :meth:`outage`); without it, only asked (``rerankit check``, the start line)."""
        try:
            self._server.client.ping()
        except self._server.errors as exc:
            said = self._server.said(exc)
            if track:
                self._server.outage.failed("a PING", said, self._server.reason(exc), call=False)
            return f"{redacted(self._server.url)}: {said}"
        if track:
            self._answered()
        return None

    def outage(self) -> tuple[float, str] | None:
        """While the server cannot be used (its last call or tracked PING failed): for how
        many seconds, and why in a few words without its address; None while it answers."""
        outage = self._server.outage
        since, reason = outage.since, outage.reason
        if since is None:
            return None
        return time.monotonic() - since, reason or "not reachable"

    def _keys(self) -> Any:
        pattern = self.prefix + "*"  # the namespace holds no glob characters
        return self._server.client.scan_iter(match=pattern, count=1000)

    def clear(self) -> int:
        deleted = 0
        try:
            batch: list[bytes] = []
            for key in self._keys():
                batch.append(key)
                if len(batch) >= _CHUNK:
                    deleted += self._server.client.unlink(*batch)
                    batch = []
            if batch:
                deleted += self._server.client.unlink(*batch)
        except self._server.errors as exc:
            said = self._server.said(exc)
            raise CacheUnavailableError(f"{self.kind} cache {self.where}: {said}") from exc
        return int(deleted)

    def info(self) -> StoreInfo:
        client = self._server.client
        try:
            entries, sample = 0, []
            for key in self._keys():
                entries += 1
                if len(sample) < _SAMPLE:
                    sample.append(key)
            sizes, lasting = [], 0
            if sample:
                pipe = client.pipeline(transaction=False)
                for key in sample:
                    pipe.memory_usage(key, samples=0)
                    pipe.pttl(key)
                answers = pipe.execute()
                sizes = [s for s in answers[0::2] if s is not None]
                lasting = sum(1 for t in answers[1::2] if t == -1)  # no expiry
            memory = {**client.info("memory"), **client.info("stats")}
        except self._server.errors as exc:
            said = self._server.said(exc)
            raise CacheUnavailableError(f"{self.kind} cache {self.where}: {said}") from exc
        size = int(entries * sum(sizes) / len(sizes)) if sizes else 0
        policy = str(memory.get("maxmemory_policy", "?"))
        notes = []
        if lasting and policy.startswith("volatile"):
            notes.append(
                f"{lasting} of {len(sample)} sampled keys have no TTL, which {policy} never "
                f"evicts: give this cache a ttl ({self.kind}_ttl in the service's [cache], "
                "ttl= in Python), or use allkeys-lru on a Redis for rerankit alone"
            )
        return StoreInfo(self.kind, self.where, entries, size, notes, _server_notes(memory))

    def __len__(self) -> int:
        return self.info().entries

    def close(self) -> None:
        """Nothing to do: the connection pool is shared by the stores of this process."""


def _is_full(exc: BaseException) -> bool:
    return "OOM" in str(exc) or "maxmemory" in str(exc)


def _server_notes(memory: dict[str, Any]) -> list[str]:
    """Redis's memory settings (``INFO memory``), what they mean for rerankit's entries,
    and its lookups (``INFO stats``)."""
    used = memory.get("used_memory_human", "?")
    limit = int(memory.get("maxmemory", 0) or 0)
    policy = str(memory.get("maxmemory_policy", "?"))
    notes = [
        f"server memory {used} of "
        f"{memory.get('maxmemory_human', limit) if limit else 'no maxmemory'}, policy {policy}"
    ]
    if not limit:
        notes.append("no memory bound: set maxmemory (and maxmemory-policy) on the server")
    if policy == "noeviction":
        notes.append("noeviction: once full, writes fail (rerankit then computes uncached)")
    if "keyspace_hits" in memory:
        notes.append(
            f"server lookups since it started: {memory['keyspace_hits']} hits, "
            f"{memory.get('keyspace_misses', 0)} misses (every key and client; by replica and "
            "cache: rerankit_cache_lookups_total and rerankit_answer_cache_total on each "
            "replica's /metrics)"
        )
    return notes
