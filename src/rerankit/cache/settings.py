"""The ``[cache]`` table of the service's settings::

[cache]
url = "redis://127.0.0.1:6379/0"   # a Redis/Valkey server shared by replicas; "" (default):
                                   # $RERANKIT_CACHE_URL, else SQLite files on this machine
                                   # (embeddings: each process's memory, unless
                                   # $RERANKIT_EMBEDDING_CACHE names a file)
namespace = "rerankit"             # the key prefix (clear deletes only keys under it)
timeout = 0.5                      # seconds per Redis call (then: computed without the cache)
required = false                   # true: the service's /ready is 503 while the server is down
embedding_ttl = 0                  # seconds an entry is kept (0: until evicted or cleared)
judgment_ttl = 0
answer_ttl = 3600
embedding_max_stored = 0           # SQLite: entries kept (0: no bound); Redis: maxmemory
judgment_max_stored = 0
answer_max_stored = 0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..options import unknown_keys
from .answer import DEFAULT_ANSWER_TTL
from .keys import KINDS
from .redis_store import DEFAULT_NAMESPACE, DEFAULT_TIMEOUT, RedisStore, key_namespace, split_url
from .store import cache_url

__all__ = ["CacheSettings"]


@dataclass(frozen=True)
class CacheSettings:
    """Where the caches live and how long entries stay (see the module's docstring); checked
    when made, without connecting to anything."""

    url: str = ""
    namespace: str = DEFAULT_NAMESPACE
    timeout: float = DEFAULT_TIMEOUT
    #: the service is not ready while the Redis server cannot be reached (default: it computes
    #: without the cache and stays ready)
    required: bool = False
    embedding_ttl: float = 0
    judgment_ttl: float = 0
    answer_ttl: float = DEFAULT_ANSWER_TTL
    embedding_max_stored: int = 0
    judgment_max_stored: int = 0
    answer_max_stored: int = 0

    def __post_init__(self) -> None:
        resolved = cache_url(self.url or None)  # checks the URL (or $RERANKIT_CACHE_URL)
        if not RedisStore.valid_namespace(self.namespace):
            raise ValueError(
                f"[cache] namespace {self.namespace!r}: use letters, digits, '_', '.' and '-'"
            )
        if isinstance(self.timeout, bool) or not (
            isinstance(self.timeout, (int, float)) and self.timeout > 0
        ):
            raise ValueError(f"[cache] timeout must be > 0 seconds, got {self.timeout!r}")
        if not isinstance(self.required, bool):
            raise ValueError(f"[cache] required must be true or false, got {self.required!r}")
        if self.required and not resolved:
            raise ValueError(
                "[cache] required = true needs a url (a Redis or Valkey server); the SQLite "
                "files on this machine are always there"
            )
        for kind in KINDS:
            ttl = getattr(self, f"{kind}_ttl")
            bound = getattr(self, f"{kind}_max_stored")
            if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl < 0:
                raise ValueError(f"[cache] {kind}_ttl must be >= 0 seconds (0: no expiry)")
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
                raise ValueError(f"[cache] {kind}_max_stored must be an integer >= 0")
            if bound and resolved:
                raise ValueError(
                    f"[cache] {kind}_max_stored bounds SQLite caches; a Redis cache is bounded "
                    "by the server's maxmemory and maxmemory-policy"
                )
        if resolved and self.namespace != DEFAULT_NAMESPACE:
            key_namespace(resolved, self.namespace, "[cache] namespace")  # (not both)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> CacheSettings:
        """Settings from the ``[cache]`` table; unknown keys are an error naming them."""
        problem = unknown_keys(table, [f.name for f in fields(cls)], "[cache]")
        if problem is not None:
            raise ValueError(problem)
        return cls(**dict(table))

    def to_mapping(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def resolved_url(self) -> str | None:
        """The Redis URL in use: ``url``, else ``$RERANKIT_CACHE_URL``, else None (SQLite)."""
        return cache_url(self.url or None)

    @property
    def resolved_namespace(self) -> str:
        """The namespace the keys go under: the url's ``?namespace=``, else ``namespace``."""
        url = self.resolved_url
        return (split_url(url)[1] if url else None) or self.namespace

    def options(self, kind: str) -> dict[str, Any]:
        """Keyword arguments for the cache of ``kind`` (``EmbeddingCache``,
        ``JudgmentCache``, ``AnswerCache``)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        ttl = getattr(self, f"{kind}_ttl")
        bound = getattr(self, f"{kind}_max_stored")
        return {
            "url": self.resolved_url or "",
            "ttl": float(ttl) if ttl else None,
            "max_stored": bound or None,
            "namespace": None if self.namespace == DEFAULT_NAMESPACE else self.namespace,
            "timeout": float(self.timeout),
        }
