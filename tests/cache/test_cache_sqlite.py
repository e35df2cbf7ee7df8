"""SQLite caches: WAL and a busy timeout on every connection, several writer processes at
once without "database is locked", entries of another format read as misses, old files'
entries kept, expiry and the size bound honoured."""

from __future__ import annotations

import logging
import multiprocessing
import queue as queue_module
import sqlite3
import threading
import time

import numpy as np
import pytest

from rerankit.cache import AnswerCache, EmbeddingCache, JudgmentCache, error_counts
from rerankit.cache.sqlite import SQLiteStore, connect

N_PROCESSES, N_WRITES = 4, 150


def _writer(path_judgments: str, path_vectors: str, worker: int, queue) -> None:
    """One process writing judgments one by one (a transaction each: the most lock traffic)
    and vectors in batches, reading back as it goes."""
    problems: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record):
            problems.append(record.getMessage())

    logging.getLogger("rerankit").addHandler(Catch(level=logging.WARNING))
    judgments = JudgmentCache(path_judgments)
    vectors = EmbeddingCache(max_entries=0, path=path_vectors)
    for i in range(N_WRITES):
        judgments.put(f"w{worker}-{i}", {"worker": worker, "i": i})
        if judgments.get(f"w{worker}-{i // 2}") is None:
            problems.append(f"w{worker}-{i // 2} not read back")
        if i % 10 == 0:
            texts = [f"w{worker}-t{j}" for j in range(i, i + 10)]
            vectors.put_many("m", texts, np.full((10, 4), worker, dtype=np.float32))
    queue.put((worker, problems, error_counts()))


def test_writer_processes_share_one_file_without_database_is_locked(tmp_path):
    paths = str(tmp_path / "judgments.sqlite"), str(tmp_path / "vectors.sqlite")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(*paths, w, queue)) for w in range(N_PROCESSES)]
    for p in procs:  # no file made beforehand: the processes race to create the tables too
        p.start()
    reports = []
    deadline = time.monotonic() + 300
    while len(reports) < N_PROCESSES:  # a worker that dies fails the test now, not at 300 s
        try:
            reports.append(queue.get(timeout=0.5))
        except queue_module.Empty:
            died = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not died, f"a writer process failed (exit codes {died}); see its stderr"
            assert time.monotonic() < deadline, "the writer processes did not finish in 300 s"
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * N_PROCESSES
    for worker, problems, errors in reports:
        assert problems == [], f"worker {worker}: {problems[:3]}"
        assert sum(errors.values()) == 0, f"worker {worker}: {errors}"
    judgments = JudgmentCache(paths[0])
    assert len(judgments) == N_PROCESSES * N_WRITES
    for w in range(N_PROCESSES):
        got = judgments.get_many([f"w{w}-{i}" for i in range(N_WRITES)])
        assert got == [{"worker": w, "i": i} for i in range(N_WRITES)]
        vecs = EmbeddingCache(max_entries=0, path=paths[1]).get_many(
            "m", [f"w{w}-t{j}" for j in range(N_WRITES)]
        )
        assert all(v is not None and v[0] == w for v in vecs)
    with sqlite3.connect(paths[0]) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_connections_racing_to_open_a_new_file_all_get_wal_and_none_is_locked(tmp_path):
    """SQLite answers "database is locked" at once, not after the busy timeout, to a
    connection switching a new file to WAL while another does: before connect retried, about
    one round in ten of these failed."""
    failures: list[str] = []
    for round_ in range(60):
        path = tmp_path / f"race{round_}.sqlite"
        start = threading.Barrier(8)

        def open_and_write(path=path, start=start, round_=round_) -> None:
            start.wait()
            try:
                db = connect(path)
                assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT)")
                db.execute("COMMIT")
                db.close()
            except Exception as exc:  # every failure is reported below
                failures.append(f"round {round_}: {exc!r}")

        threads = [threading.Thread(target=open_and_write) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


@pytest.mark.parametrize("cache", [JudgmentCache, AnswerCache, EmbeddingCache])
def test_every_cache_connection_is_wal_with_a_busy_timeout(tmp_path, cache):
    made = cache(path=tmp_path / "c.sqlite")
    db = made.store._db
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000


def test_a_writer_holding_the_lock_past_the_timeout_costs_the_write_not_the_caller(
    tmp_path, monkeypatch, caplog
):
    import rerankit.cache.sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "j.sqlite"
    cache = JudgmentCache(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
    before = error_counts()["judgment"]
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        cache.put("a", 1)
        cache.put("b", 2)
    assert error_counts()["judgment"] == before + 2
    assert len([r for r in caplog.records if "computing without the cache" in r.message]) == 1
    holder.execute("ROLLBACK")
    cache.put("a", 1)
    assert cache.get("a") == 1


def test_an_entry_of_another_format_is_a_miss_and_is_replaced(tmp_path):
    path = tmp_path / "j.sqlite"
    cache = JudgmentCache(path)
    with sqlite3.connect(path) as db:  # as a later rerankit (format 2) would write them
        db.execute("INSERT INTO rerankit_judgment (key, value) VALUES ('k', ?)", (b"rk\x02[1]",))
        db.execute("INSERT INTO rerankit_judgment (key, value) VALUES ('raw', ?)", (b"[1]",))
    assert cache.get_many(["k", "raw"]) == [None, None]
    cache.put("k", [2])
    assert cache.get("k") == [2]


def test_the_entries_of_an_older_file_are_kept(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the tables of rerankit 0.1's caches
        db.execute("CREATE TABLE judgments (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO judgments VALUES ('k1', '{\"score\": 7}')")
        db.execute(
            "CREATE TABLE embeddings (model TEXT NOT NULL, key BLOB NOT NULL, "
            "vector BLOB NOT NULL, PRIMARY KEY (model, key))"
        )
        from rerankit.cache import text_key

        vec = np.arange(4, dtype=np.float32)
        db.execute("INSERT INTO embeddings VALUES ('m', ?, ?)", (text_key("doc"), vec.tobytes()))
    assert JudgmentCache(path).get("k1") == {"score": 7}
    (got,) = EmbeddingCache(max_entries=0, path=path).get_many("m", ["doc"])
    assert got is not None and got.tolist() == [0, 1, 2, 3]
    with sqlite3.connect(path) as db:  # left in place for an older rerankit sharing the file
        assert db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 1


def test_expiry_and_the_size_bound(tmp_path):
    store = SQLiteStore(tmp_path / "a.sqlite", "answer", ttl=1.0)
    store.put_many([("old", b"x")])
    assert store.get_many(["old"]) == [b"x"]
    time.sleep(1.3)
    assert store.get_many(["old"]) == [None] and store.info().entries == 0
    bounded = SQLiteStore(tmp_path / "b.sqlite", "answer", max_stored=50)
    for i in range(300):
        bounded.put_many([(f"k{i}", b"v")])
        assert bounded.info().entries <= 55  # the bound, and a tenth of it between trims
    newest = bounded.get_many([f"k{i}" for i in range(290, 300)])
    assert newest == [b"v"] * 10 and bounded.get_many(["k0"]) == [None]  # oldest went first


def test_clear_deletes_only_its_own_kind(tmp_path):
    path = tmp_path / "shared.sqlite"
    judgments, answers = JudgmentCache(path), AnswerCache(path)
    judgments.put("k", 1)
    answers.put("k", b"answer")
    judgments.clear()
    assert judgments.get("k") is None and answers.get("k") == b"answer"


def test_embedding_lookups_are_counted_once_and_every_count_agrees(tmp_path):
    """A run's count (``embedding_lookups``), the service's ``rerankit_cache_lookups_total``
    (``lookup_counts``) and a cache's own ``hits``/``misses``/``store_hits`` are one count
    of the same lookups, read three ways."""
    from rerankit.cache import embedding_lookups, lookup_counts

    path = tmp_path / "e.sqlite"
    vec = np.ones((2, 3), dtype=np.float32)
    EmbeddingCache(path=path).put_many("m", ["a", "b"], vec)  # in the store, not in memory
    cache = EmbeddingCache(path=path)
    before = lookup_counts()["embedding"]
    with embedding_lookups() as run:
        cache.get_many("m", ["a", "x"])  # a from the store, x missing
        cache.get_many("m", ["a", "b", "y", "y"])  # a from memory, b from the store, y twice
    after = lookup_counts()["embedding"]
    served = {k: after[k] - before[k] for k in after}
    assert served == {"hit": 2, "memory": 1, "miss": 3}
    assert run == {"hits": 3, "misses": 3, "store_hits": 2, "reused": 2}
    assert (cache.hits, cache.misses, cache.store_hits) == (3, 3, 2)
    assert run["hits"] == served["hit"] + served["memory"] and run["misses"] == served["miss"]
    assert run["store_hits"] == served["hit"]
