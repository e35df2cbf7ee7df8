"""The SQLite store: one table per kind in a file on this machine, shared by its processes.

Every connection runs in WAL mode (readers go on while one process writes) with a busy
timeout (a writer waits for another instead of failing with "database is locked"), and every
write takes the write lock at its start (``BEGIN IMMEDIATE``), where the timeout applies.
Entries may expire (``ttl``) and the table may be bounded (``max_stored``: the oldest written
go first).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .._paths import CACHE_DIR_ENV
from .keys import decode, digest, encode
from .store import CACHE_URL_ENV, CacheUnavailableError, FailureLog, StoreInfo, check_bounds

__all__ = ["BUSY_TIMEOUT", "SQLiteStore", "connect"]

logger = logging.getLogger(__name__)

#: seconds a connection waits for another process's write before giving up
BUSY_TIMEOUT = 60.0
_CHUNK = 500  # keys per SELECT ... IN (...), under SQLite's variable limit
#: how a cache of each kind is turned off (said when its file cannot be opened)
_OFF = {"judgment": "cache = false on the LLM scorer", "answer": "answer_cache = false"}
#: entries of earlier releases (one table each, values unversioned): copied into the new
#: table once, when it is created, and left for those releases to read
_LEGACY = {
    "judgment": "SELECT key, value FROM judgments",
    "embedding": "SELECT model, key, vector FROM embeddings",
}


def connect(path: str | Path) -> sqlite3.Connection:
    """A connection for several threads and processes: WAL mode (files), a busy timeout,
    and autocommit, so each write opens its own ``BEGIN IMMEDIATE`` transaction."""
    db = sqlite3.connect(
        str(path), check_same_thread=False, timeout=BUSY_TIMEOUT, isolation_level=None
    )
    db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
    if str(path) != ":memory:":
        _use_wal(db, path)
        db.execute("PRAGMA synchronous = NORMAL")  # durable at checkpoints; safe in WAL
    return db


def _use_wal(db: sqlite3.Connection, path: str | Path) -> None:
    """Switch ``db`` to WAL mode. SQLite answers "database is locked" at once, without
    waiting out the busy timeout, when processes opening a new file race to switch it, so
    this retries until ``BUSY_TIMEOUT`` has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    pause = 0.002
    while True:
        try:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
    if str(mode).lower() != "wal":
        logger.warning(
            "SQLite cache %s runs in %s journal mode, not WAL (its file system may not "
            "allow WAL): readers wait while a process writes",
            path,
            mode,
        )


class SQLiteStore:
    """Entries of one ``kind`` in the table ``rerankit_<kind>`` of the SQLite file ``path``
    (``":memory:"``: for this object's life). ``ttl``: seconds an entry is kept; ``max_stored``:
    entries kept (the oldest written go first; checked every tenth of it, so it may be
    exceeded by that much meanwhile)."""

    def __init__(
        self,
        path: str | Path,
        kind: str,
        *,
        ttl: float | None = None,
        max_stored: int | None = None,
    ) -> None:
        check_bounds(ttl, max_stored)
        self.kind, self.ttl, self.max_stored = kind, ttl, max_stored
        self.path = str(path)
        self.table = f"rerankit_{kind}"
        self._lock = threading.Lock()
        self._failures = FailureLog(logger)
        self._written = 0  # entries written since the table was last kept in bounds
        self._db: sqlite3.Connection | None = None
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(self.path)
            self._create()
        except (OSError, sqlite3.Error) as exc:  # a folder or file this user cannot write
            self.close()
            raise CacheUnavailableError(
                f"{kind} cache {self.path} cannot be opened ({type(exc).__name__}: {exc}): "
                f"give it a writable place (for the default files, set {CACHE_DIR_ENV} to a "
                f"writable folder; or a shared server: {CACHE_URL_ENV}, the service's [cache] "
                f"url), or turn it off ({_OFF.get(kind, 'name no file for it')})"
            ) from exc

    def _create(self) -> None:
        """The table and its index, made where missing (with a copy of older entries)."""
        with self._lock, self._transaction() as db:
            created = not db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self.table,)
            ).fetchone()
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ("
                " key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL)"
            )
            db.execute(
                f"CREATE INDEX IF NOT EXISTS {self.table}_expires ON {self.table} (expires)"
                " WHERE expires IS NOT NULL"
            )
            if created:
                self._copy_legacy(db)

    @property
    def where(self) -> str:
        return self.path

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        if db is None:
            raise CacheUnavailableError(f"{self.kind} cache {self.path} is closed")
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _copy_legacy(self, db: sqlite3.Connection) -> None:
        legacy = f"{self.kind}s"
        if (
            self.kind not in _LEGACY
            or not db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (legacy,)
            ).fetchone()
        ):
            return
        rows = db.execute(_LEGACY[self.kind])
        insert = f"INSERT OR IGNORE INTO {self.table} (key, value) VALUES (?, ?)"
        if self.kind == "judgment":
            db.executemany(insert, ((k, encode(v.encode("utf-8"))) for k, v in rows))
        else:
            db.executemany(
                insert,
                ((f"{digest(m, 32)}:{bytes(k).hex()}", encode(bytes(v))) for m, k, v in rows),
            )
        logger.info("%s: copied the entries of table %s into %s", self.path, legacy, self.table)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        found: dict[str, bytes] = {}
        now = time.time()
        try:
            with self._lock:
                db = self._db
                if db is None:
                    return [None] * len(keys)
                for lo in range(0, len(keys), _CHUNK):
                    chunk = list(keys[lo : lo + _CHUNK])
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(
                        f"SELECT key, value FROM {self.table} WHERE key IN ({marks})"
                        " AND (expires IS NULL OR expires > ?)",
                        [*chunk, now],
                    )
                    found.update((k, bytes(v)) for k, v in rows)
        except Exception as exc:  # any failure (sqlite's, the folder's) costs the cache only
            self._failures.failed(self.kind, self.path, "a read", exc)
            return [None] * len(keys)
        return [decode(found.get(k)) for k in keys]

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        expires = time.time() + self.ttl if self.ttl is not None else None
        rows = [(k, encode(v), expires) for k, v in items]
        try:
            with self._lock:
                if self._db is None:
                    return
                with self._transaction() as db:
                    db.executemany(
                        f"INSERT OR REPLACE INTO {self.table} (key, value, expires)"
                        " VALUES (?, ?, ?)",
                        rows,
                    )
                self._written += len(rows)
                step = max(1, self.max_stored // 10) if self.max_stored else 1000
                if self._written >= step:
                    self._written = 0
                    self._keep_in_bounds()
        except Exception as exc:  # locked past the timeout, disk full: the next run
            self._failures.failed(self.kind, self.path, "a write", exc)  # computes again

    def _keep_in_bounds(self) -> None:
        """Drop expired entries, then the oldest written beyond ``max_stored``."""
        with self._transaction() as db:
            db.execute(
                f"DELETE FROM {self.table} WHERE expires IS NOT NULL AND expires <= ?",
                (time.time(),),
            )
            if self.max_stored is None:
                return
            row = db.execute(
                f"SELECT rowid FROM {self.table} ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (self.max_stored,),
            ).fetchone()
            if row is not None:
                db.execute(f"DELETE FROM {self.table} WHERE rowid <= ?", (row[0],))

    def claim(self, key: str, seconds: float) -> str | None:
        """Claim ``key`` for ``seconds`` among the processes sharing this file: a token to
        :meth:`release` it with, None when another holds it, ``""`` when the file could not
        be written (the caller goes on as if it held it)."""
        token, now = uuid.uuid4().hex, time.time()
        claims = f"{self.table}_claims"
        try:
            with self._lock, self._transaction() as db:
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {claims} ("
                    " key TEXT PRIMARY KEY, token TEXT NOT NULL, expires REAL NOT NULL)"
                )
                db.execute(f"DELETE FROM {claims} WHERE expires <= ?", (now,))
                won = db.execute(
                    f"INSERT OR IGNORE INTO {claims} VALUES (?, ?, ?)", (key, token, now + seconds)
                ).rowcount
        except Exception as exc:  # (CacheUnavailableError: closed)
            self._failures.failed(self.kind, self.path, "a claim", exc)
            return ""
        return token if won == 1 else None

    def release(self, key: str, token: str) -> None:
        """Give up a claim made with :meth:`claim` (only if it is still ``token``'s)."""
        if not token:
            return
        try:
            with self._lock, self._transaction() as db:
                db.execute(
                    f"DELETE FROM {self.table}_claims WHERE key = ? AND token = ?", (key, token)
                )
        except Exception as exc:  # (CacheUnavailableError: closed)
            self._failures.failed(self.kind, self.path, "a release", exc)

    def claimed(self, key: str) -> bool:
        """Whether a process holds a claim on ``key`` (False when the file cannot say)."""
        try:
            with self._lock:
                if self._db is None:
                    return False
                row = self._db.execute(
                    f"SELECT 1 FROM {self.table}_claims WHERE key = ? AND expires > ?",
                    (key, time.time()),
                ).fetchone()
        except Exception:  # no claim was ever made here (no table yet), or unreadable
            return False
        return row is not None

    def ping(self) -> str | None:
        """None while the file is open (it is on this machine), else why not."""
        return None if self._db is not None else f"{self.path} is closed"

    def clear(self) -> int:
        with self._lock:
            try:
                with self._transaction() as db:
                    n = db.execute(f"DELETE FROM {self.table}").rowcount
                    legacy = f"{self.kind}s"
                    if (
                        self.kind in _LEGACY
                        and db.execute(
                            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (legacy,),
                        ).fetchone()
                    ):
                        db.execute(f"DELETE FROM {legacy}")
            except sqlite3.Error as exc:
                raise CacheUnavailableError(f"{self.kind} cache {self.path}: {exc}") from exc
        return max(n, 0)

    def info(self) -> StoreInfo:
        with self._lock:
            if self._db is None:
                raise CacheUnavailableError(f"{self.kind} cache {self.path} is closed")
            try:
                entries = self._db.execute(
                    f"SELECT COUNT(*) FROM {self.table} WHERE expires IS NULL OR expires > ?",
                    (time.time(),),
                ).fetchone()[0]
            except sqlite3.Error as exc:
                raise CacheUnavailableError(f"{self.kind} cache {self.path}: {exc}") from exc
        size = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal"):
                file = Path(self.path + suffix)
                size += file.stat().st_size if file.exists() else 0
        return StoreInfo(self.kind, self.path, int(entries), size)

    def __len__(self) -> int:
        return self.info().entries

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
