"""Caches: document embeddings (a bounded in-memory LRU, optionally backed by a store),
LLM judgments (a store, SQLite on disk by default) and whole rerank answers.

Every store is behind one small protocol (:class:`Store`): an SQLite file (the default,
shared by the processes of one machine) or a Redis/Valkey server (extra ``redis``; shared by
replicas), chosen by ``url=`` or ``$RERANKIT_CACHE_URL=redis://host:6379/0``. Keys:

- embedding: ``<namespace>:embedding:<model digest>:<text SHA-256>``
- judgment: ``<namespace>:judgment:<SHA-256 of everything the provider is sent>``
- answer: ``<namespace>:answer:<pipeline fingerprint>:<tenant digest>:<request digest>``

(in SQLite, the part after the kind, in the table ``rerankit_<kind>``). Values carry
:data:`CACHE_FORMAT`, so an entry written under another format is a miss, never misread.
A store that fails (unreachable, slow, full, locked) gives misses and drops writes: the
caller computes without it; :func:`error_counts` counts the calls that failed,
:func:`skipped_counts` those that skipped a Redis server in the second after a failure, and
:func:`lookup_counts` the embedding and judgment lookups by result (hit, memory, miss). Inside
:func:`cache_defaults`, caches opened without a place of their own take the given
:class:`CacheSettings` (the service's ``[cache]`` table).
"""

from .answer import DEFAULT_ANSWER_TTL, AnswerCache, answer_key
from .backend import StoreOptions, cache_defaults, current_defaults, open_store
from .embedding import (
    EMBEDDING_CACHE_ENV,
    EmbeddingCache,
    embedding_cache_file,
    embedding_cache_in_use,
    embedding_key,
    embedding_lookups,
    rerankers_use_store,
    scorer_cache,
)
from .fingerprint import (
    content_key,
    model_files_digest,
    pipeline_fingerprint,
    resolved_spec,
    scorer_identity,
)
from .judgment import JudgmentCache, judgment_cache
from .keys import CACHE_FORMAT, KINDS, canonical_json, text_key
from .manage import CACHE_NAMES, CacheInfo, ClearedCache, cache_info, clear_cache
from .settings import CacheSettings
from .store import (
    CACHE_URL_ENV,
    CacheUnavailableError,
    Store,
    StoreInfo,
    cache_url,
    default_cache_dir,
    error_counts,
    lookup_counts,
    skipped_counts,
)

__all__ = [
    "CACHE_FORMAT",
    "CACHE_NAMES",
    "CACHE_URL_ENV",
    "DEFAULT_ANSWER_TTL",
    "EMBEDDING_CACHE_ENV",
    "KINDS",
    "AnswerCache",
    "CacheInfo",
    "CacheSettings",
    "CacheUnavailableError",
    "ClearedCache",
    "EmbeddingCache",
    "JudgmentCache",
    "Store",
    "StoreInfo",
    "StoreOptions",
    "answer_key",
    "cache_defaults",
    "cache_info",
    "cache_url",
    "canonical_json",
    "clear_cache",
    "content_key",
    "current_defaults",
    "default_cache_dir",
    "embedding_cache_file",
    "embedding_cache_in_use",
    "embedding_key",
    "embedding_lookups",
    "error_counts",
    "judgment_cache",
    "lookup_counts",
    "model_files_digest",
    "open_store",
    "pipeline_fingerprint",
    "rerankers_use_store",
    "resolved_spec",
    "scorer_cache",
    "scorer_identity",
    "skipped_counts",
    "text_key",
]
