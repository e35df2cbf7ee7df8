"""The SQLite embedding cache shared by several processes at once (batch workers)."""

from __future__ import annotations

import multiprocessing

import numpy as np

from rerankit.cache import EmbeddingCache


def _write(path: str, worker: int) -> None:
    cache = EmbeddingCache(path=path)
    for start in range(0, 200, 20):
        texts = [f"w{worker}-t{i}" for i in range(start, start + 20)]
        cache.put_many("m", texts, np.full((20, 4), worker, dtype=np.float32))
    cache.close()


def test_processes_writing_one_cache_file_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    EmbeddingCache(path=path).close()  # created once, as a driver would
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    reader = EmbeddingCache(path=path)
    for w in range(4):
        got = reader.get_many("m", [f"w{w}-t{i}" for i in range(200)])
        assert all(v is not None and v[0] == w for v in got)
