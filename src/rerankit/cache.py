"""Caches: embeddings (a bounded in-memory LRU, optionally backed by SQLite on disk) and LLM
judgments (SQLite, on disk by default).

Keys are ``(model key, SHA-256 of the text)``, so a document seen before, under the same
model, is not encoded again; the SQLite file keeps vectors across processes. Vectors are
stored as float32. Safe to share between threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["EmbeddingCache", "JudgmentCache", "default_cache_dir", "judgment_cache", "text_key"]

logger = logging.getLogger(__name__)

_SQL_CHUNK = 500  # keys per SELECT ... IN (...), under SQLite's variable limit


def text_key(text: str) -> bytes:
    """The cache key of a text: its SHA-256 digest."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Embeddings by ``(model, text)``.

    ``max_entries`` bounds the in-memory LRU (0 disables it). ``path``: an SQLite file that
    also keeps every vector (created if missing); memory misses are looked up there.
    """

    def __init__(self, max_entries: int = 100_000, path: str | Path | None = None) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self.max_entries = max_entries
        self.path = Path(path) if path is not None else None
        self._memory: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Several processes may share the file (batch workers, service replicas): wait
            # for a writer instead of failing, and let readers go on while one writes.
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model TEXT NOT NULL, key BLOB NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, key))"
            )
            self._db.commit()

    def __len__(self) -> int:
        return len(self._memory)

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None where there is none."""
        keys = [text_key(t) for t in texts]
        out: list[np.ndarray | None] = [None] * len(keys)
        with self._lock:
            missing: dict[bytes, list[int]] = {}
            for i, k in enumerate(keys):
                vec = self._memory.get((model, k))
                if vec is not None:
                    self._memory.move_to_end((model, k))
                    out[i] = vec
                else:
                    missing.setdefault(k, []).append(i)
            if missing and self._db is not None:
                found = self._select(model, list(missing))
                for k, vec in found.items():
                    for i in missing.pop(k):
                        out[i] = vec
                    self._remember(model, k, vec)
            n_missing = sum(map(len, missing.values()))
            self.misses += n_missing
            self.hits += len(keys) - n_missing
        return out

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text (rows of ``vectors``)."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = np.asarray(vectors, dtype=np.float32)
        keys = [text_key(t) for t in texts]
        with self._lock:
            for k, vec in zip(keys, rows, strict=True):
                self._remember(model, k, vec.copy())
            if self._db is not None:
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings (model, key, vector) VALUES (?, ?, ?)",
                        [(model, k, vec.tobytes()) for k, vec in zip(keys, rows, strict=True)],
                    )
                    self._db.commit()
                except sqlite3.OperationalError as exc:  # e.g. locked too long: vectors stay
                    self._db.rollback()  # in memory; the next run encodes them again
                    logger.warning("embedding cache %s: not written (%s)", self.path, exc)

    def clear(self) -> None:
        """Forget everything, on disk too."""
        with self._lock:
            self._memory.clear()
            if self._db is not None:
                self._db.execute("DELETE FROM embeddings")
                self._db.commit()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _remember(self, model: str, key: bytes, vec: np.ndarray) -> None:
        if self.max_entries == 0:
            return
        vec.setflags(write=False)  # callers share these arrays
        self._memory[(model, key)] = vec
        self._memory.move_to_end((model, key))
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def _select(self, model: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        assert self._db is not None
        found: dict[bytes, np.ndarray] = {}
        for lo in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[lo : lo + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *chunk],
            )
            for k, blob in rows:
                found[bytes(k)] = np.frombuffer(blob, dtype=np.float32).copy()
        return found


def default_cache_dir() -> Path:
    """``$RERANKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rerankit``, else ``~/.cache/rerankit``."""
    if os.environ.get("RERANKIT_CACHE_DIR"):
        return Path(os.environ["RERANKIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rerankit"


class JudgmentCache:
    """LLM judgments (any JSON value) by key; a hit means no provider call.

    ``path``: an SQLite file (default: ``judgments.sqlite`` in :func:`default_cache_dir`),
    or ``":memory:"`` for a cache that lives as long as the object. Build keys with
    :meth:`key`. Safe to share between threads.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = default_cache_dir() / "judgments.sqlite"
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        if self.path != ":memory:":  # shared by processes: wait for writers, read meanwhile
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        self._db.commit()
        self._lock = threading.Lock()

    @staticmethod
    def key(**parts: Any) -> str:
        """A stable key: SHA-256 of the parts as canonical JSON (ASCII-escaped, so any
        string, lone surrogates included, gives a key)."""
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=True, default=str)
        return hashlib.sha256(blob.encode("ascii")).hexdigest()

    def get(self, key: str) -> Any | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM judgments WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgments (key, value) VALUES (?, ?)",
                (key, json.dumps(value)),
            )
            self._db.commit()

    def get_many(self, keys: list[str]) -> list[Any | None]:
        """The values of ``keys`` (None where absent), in one query per 500 keys."""
        found: dict[str, Any] = {}
        with self._lock:
            for lo in range(0, len(keys), 500):
                chunk = keys[lo : lo + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, value FROM judgments WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update((k, json.loads(v)) for k, v in rows)
        return [found.get(k) for k in keys]

    def put_many(self, items: list[tuple[str, Any]]) -> None:
        """Store several judgments in one transaction."""
        if not items:
            return
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO judgments (key, value) VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in items],
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM judgments")
            self._db.commit()


def judgment_cache(cache: Any) -> JudgmentCache | None:
    """A scorer's ``cache=`` argument: True (the default SQLite file), False/None (none),
    ``"memory"``, a path, or a :class:`JudgmentCache`."""
    if isinstance(cache, JudgmentCache):
        return cache
    if cache is True:
        return JudgmentCache()
    if cache is False or cache is None:
        return None
    if cache == "memory":
        return JudgmentCache(":memory:")
    if isinstance(cache, (str, Path)):
        return JudgmentCache(cache)
    raise TypeError(
        f"cache must be True, False, 'memory', a path or a JudgmentCache, not {cache!r}"
    )
