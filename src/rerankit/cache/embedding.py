"""The embedding cache: vectors by ``(model key, text)``, in a bounded in-memory LRU, backed
by a store shared with other processes (an SQLite file, or Redis) when one is named."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .backend import StoreOptions, open_store, with_defaults
from .keys import digest, text_key
from .store import cache_url, count_lookups, default_cache_dir, lookup_counts

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "EMBEDDING_CACHE_ENV",
    "EmbeddingCache",
    "embedding_cache_file",
    "embedding_cache_in_use",
    "embedding_key",
    "embedding_lookups",
    "rerankers_use_store",
    "scorer_cache",
]

#: the environment variable every EmbeddingScorer built without a cache of its own reads:
#: an SQLite file, or "" for memory only
EMBEDDING_CACHE_ENV = "RERANKIT_EMBEDDING_CACHE"


def embedding_cache_file(choice: str | Path | bool | None = None) -> str | None:
    """What ``$RERANKIT_EMBEDDING_CACHE`` should hold for a long job (evaluating, tuning),
    so that it encodes each document once across runs: ``choice`` when it is a path,
    ``""`` (memory only) when it is False; with None or True, None (leave it) when the
    variable is set or ``$RERANKIT_CACHE_URL`` names a shared server, else
    ``embeddings.sqlite`` in the rerankit cache directory (its folder is created)."""
    if choice is False:
        return ""
    if choice is not None and choice is not True:
        return str(choice)
    if os.environ.get(EMBEDDING_CACHE_ENV) is not None or cache_url():
        return None
    path = default_cache_dir() / "embeddings.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


@contextlib.contextmanager
def embedding_cache_in_use(choice: str | Path | bool | None = None) -> Iterator[None]:
    """Inside the block, embedding scorers built without a cache of their own keep
    document vectors where :func:`embedding_cache_file` says; the environment is restored
    after it."""
    value = embedding_cache_file(choice)
    if value is None:
        yield
        return
    before = os.environ.get(EMBEDDING_CACHE_ENV)
    os.environ[EMBEDDING_CACHE_ENV] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(EMBEDDING_CACHE_ENV, None)
        else:
            os.environ[EMBEDDING_CACHE_ENV] = before


@contextlib.contextmanager
def rerankers_use_store(rerankers: Iterable[Any]) -> Iterator[int]:
    """Inside the block, each embedding scorer of ``rerankers`` built with the default
    cache (``default_cache``) before :func:`embedding_cache_in_use` named a store, so
    keeping vectors in memory only (a reranker object the caller built), also reads and
    writes the store a scorer built now would; afterwards its cache is memory only again
    (that store closed), as it was given. Yields how many caches were lent the store (0
    when the defaults now name none)."""
    caches = [
        s.cache
        for r in rerankers
        for s in r.scorers()
        if getattr(s, "default_cache", False) and isinstance(s.cache, EmbeddingCache)
    ]
    opened: list[EmbeddingCache] = []
    try:
        for cache in {id(c): c for c in caches}.values():
            if cache.store is not None or cache.path is not None:
                continue  # its own store, kept
            named = os.environ.get(EMBEDDING_CACHE_ENV)
            fresh = EmbeddingCache(0, named or None, url="" if named == "" else None)
            if fresh.store is None:
                break  # memory only now too: nothing to share
            cache.store = fresh.store
            opened.append(cache)
        yield len(opened)
    finally:
        for cache in opened:
            store, cache.store = cache.store, None
            store.close()


#: the texts whose vectors were there before the count began (see :func:`embedding_lookups`);
#: the lookups themselves are counted once, by :func:`~.store.count_lookups`
_REUSED: Counter[str] = Counter()
_LOOKUPS_LOCK = threading.Lock()
#: bumped as each count of :func:`embedding_lookups` begins: a vector held in memory since
#: an earlier generation was there before the count
_GENERATION = 0


@contextlib.contextmanager
def embedding_lookups() -> Iterator[dict[str, int]]:
    """Count the document texts every :class:`EmbeddingCache` of this process looks up
    inside the block: the dict yielded is filled in as it ends, with ``hits`` (found),
    ``misses`` (not found: the scorer encodes them), ``store_hits`` (the hits read from
    the store) and ``reused`` (the texts whose vectors were there before the block: read
    from the store, which another cache, run or process wrote, or held in a cache's memory
    since before it began; each counted once).
    ``rerankit eval`` counts each pipeline's run so; one count at a time."""
    global _GENERATION
    counted: dict[str, int] = {}
    with _LOOKUPS_LOCK:
        _GENERATION += 1
        before, reused = lookup_counts()[EmbeddingCache.kind], _REUSED["texts"]
    try:
        yield counted
    finally:
        with _LOOKUPS_LOCK:
            now = lookup_counts()[EmbeddingCache.kind]
            found = {result: now[result] - before[result] for result in now}
            counted.update(
                hits=found["hit"] + found["memory"],
                misses=found["miss"],
                store_hits=found["hit"],
                reused=_REUSED["texts"] - reused,
            )


def embedding_key(model: str, text: str) -> str:
    """The store key of ``text``'s vector under ``model`` (the scorer's key of the model and
    of everything that changes its vectors): ``<model digest>:<text SHA-256>``."""
    return f"{digest(model, 32)}:{text_key(text).hex()}"


class EmbeddingCache:
    """Embeddings by ``(model, text)``; safe to share between threads.

    ``max_entries`` bounds the in-memory LRU (0 disables it). Vectors are also kept in a
    store other processes see: ``path``, an SQLite file (created if missing), or ``url``, a
    Redis/Valkey server (``redis://host:6379/0``); with neither, the
    :func:`~rerankit.cache.cache_defaults` in force, else ``$RERANKIT_CACHE_URL`` when set,
    else memory only (``url=""``: memory only whatever the environment says). ``ttl``
    (seconds) and ``max_stored`` (SQLite: entries kept) bound the store; see
    :class:`~rerankit.cache.StoreOptions` for the others. Memory misses are looked up in the
    store; vectors are stored as float32.

    ``hits`` and ``misses`` count the texts looked up that were found (in memory or in the
    store) and not found; ``store_hits``, those of the hits read from the store (so a
    repeat in one process, answered from memory, does not count there).
    """

    kind = "embedding"

    def __init__(
        self,
        max_entries: int = 100_000,
        path: str | Path | None = None,
        **options: Unpack[StoreOptions],
    ) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self.max_entries = max_entries
        self.path = Path(path) if path is not None else None
        self._memory: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self._born: dict[tuple[str, bytes], int] = {}  # the generation each was kept in
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.store_hits = 0
        self.store: Any = None
        options = with_defaults(self.kind, path, options)
        if path is not None or cache_url(options.get("url")):
            self.store = open_store(self.kind, path, **options)

    def __len__(self) -> int:
        """Vectors held in memory."""
        return len(self._memory)

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None where there is none."""
        keys = [text_key(t) for t in texts]
        out: list[np.ndarray | None] = [None] * len(keys)
        from_store = reused = 0
        with self._lock:
            missing: dict[bytes, list[int]] = {}
            for i, k in enumerate(keys):
                vec = self._memory.get((model, k))
                if vec is not None:
                    self._memory.move_to_end((model, k))
                    out[i] = vec
                    if self._born.get((model, k), 0) < _GENERATION:  # counted once a count
                        reused += 1
                        self._born[(model, k)] = _GENERATION
                else:
                    missing.setdefault(k, []).append(i)
        if missing and self.store is not None:  # outside the lock: a slow store holds no one
            prefix = digest(model, 32) + ":"
            stored = self.store.get_many([prefix + k.hex() for k in missing])
            with self._lock:
                for k, blob in zip(list(missing), stored, strict=True):
                    if blob is None or len(blob) % 4:
                        continue
                    vec = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                    for i in missing.pop(k):
                        out[i] = vec
                        from_store += 1
                    self._remember(model, k, vec)
        n_missing = sum(map(len, missing.values()))
        self._count(from_store, len(keys) - n_missing - from_store, n_missing, reused)
        return out

    def _count(self, from_store: int, in_memory: int, missing: int, reused: int) -> None:
        """Count one lookup's texts, once: found in the store, in memory, or not at all
        (:func:`~.store.count_lookups`, which :func:`embedding_lookups` reads too), and on
        this cache (``hits``, ``misses``, ``store_hits``)."""
        with self._lock:
            self.hits += from_store + in_memory
            self.misses += missing
            self.store_hits += from_store
        count_lookups(self.kind, hit=from_store, memory=in_memory, miss=missing)
        with _LOOKUPS_LOCK:
            _REUSED["texts"] += from_store + reused

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text (rows of ``vectors``)."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = np.asarray(vectors, dtype=np.float32)
        keys = [text_key(t) for t in texts]
        with self._lock:
            for k, vec in zip(keys, rows, strict=True):
                self._remember(model, k, vec.copy())
        if self.store is not None:  # a write the store cannot take is dropped (and counted)
            prefix = digest(model, 32) + ":"
            self.store.put_many(
                [
                    (prefix + k.hex(), vec.astype("<f4").tobytes())
                    for k, vec in zip(keys, rows, strict=True)
                ]
            )

    def clear(self) -> None:
        """Forget everything, in the store too (only this cache's entries)."""
        with self._lock:
            self._memory.clear()
            self._born.clear()
        if self.store is not None:
            self.store.clear()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def _remember(self, model: str, key: bytes, vec: np.ndarray) -> None:
        if self.max_entries == 0:
            return
        vec.setflags(write=False)  # callers share these arrays
        self._memory[(model, key)] = vec
        self._memory.move_to_end((model, key))
        self._born[(model, key)] = _GENERATION
        while len(self._memory) > self.max_entries:
            self._born.pop(self._memory.popitem(last=False)[0], None)


def scorer_cache(cache: Any, path: str | Path | None) -> EmbeddingCache | None:
    """An :class:`~rerankit.scorers.EmbeddingScorer`'s cache: ``cache`` (True: an in-memory
    LRU, False: none, or an :class:`EmbeddingCache` to share) backed by the SQLite file
    ``path`` (its ``embedding_cache``; with True and no path, ``$RERANKIT_EMBEDDING_CACHE``
    when set, else the server ``$RERANKIT_CACHE_URL`` names when set; the variable set
    empty: memory only)."""
    shared = None  # the store: $RERANKIT_CACHE_URL, when set, unless told otherwise
    if path is None and cache is True:
        path = os.environ.get(EMBEDDING_CACHE_ENV) or None
        if os.environ.get(EMBEDDING_CACHE_ENV) == "":  # set empty: memory only
            shared = ""
    if isinstance(cache, EmbeddingCache):
        return cache
    return EmbeddingCache(path=path, url=shared) if cache or path is not None else None
