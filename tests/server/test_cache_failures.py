"""Any failure of a cache's store costs the cache only, as a Redis outage does: the request is
answered without it and the failure counted in ``rerankit_cache_errors_total``. An error
that was not SQLite's own (an OSError from the cache's folder, say) turned a rerank into a
500 before."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cache.store import error_counts
from rerankit.server import ServerSettings, create_app

BODY = {"model": "b", "query": "solar power", "documents": ["wind", "solar power", "coal"]}


class _BrokenConnection:
    """An SQLite connection whose every call fails with ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def execute(self, *args, **kwargs):
        raise self.error

    def close(self) -> None:
        pass


def _answer_errors(client) -> float:
    text = client.get("/metrics").text
    found = re.search(r'^rerankit_cache_errors_total\{cache="answer"\} (\S+)$', text, re.M)
    assert found is not None, "no rerankit_cache_errors_total series for the answer cache"
    return float(found.group(1))


@pytest.mark.parametrize(
    "error", [OSError(28, "No space left on device"), ValueError("an unexpected failure")]
)
def test_an_answer_cache_that_fails_otherwise_than_sqlite_costs_the_cache_only(
    error, tmp_path, monkeypatch, wait_ready
):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    settings = ServerSettings(pipelines={"b": "bm25"}, default="b", answer_cache=True)
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        wait_ready(client)
        before = client.post("/v1/rerank", json=BODY)
        assert before.status_code == 200 and before.headers["x-rerankit-cache"] == "miss"
        errors = _answer_errors(client)
        store = app.state.service.answers.cache.store
        store._db = _BrokenConnection(error)  # the file's folder gone bad under it
        got = client.post("/v1/rerank", json={**BODY, "query": "solar energy"})
        assert got.status_code == 200, got.text
        assert got.headers["x-rerankit-cache"] == "unavailable"
        assert [r["index"] for r in got.json()["results"]] == [1, 0, 2]
        assert got.json()["meta"]["rerankit"]["cache"] == "unavailable"
        assert _answer_errors(client) >= errors + 2  # the read and the claim, at least


def test_a_redis_client_that_fails_otherwise_than_redis_costs_the_cache_only():
    pytest.importorskip("redis", reason="needs the 'redis' extra")
    from rerankit.cache.redis_store import RedisStore

    store = RedisStore("redis://127.0.0.1:9/13", "judgment", timeout=0.2)  # never reached

    class Client:
        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise ValueError("a reply the client could not read")

            return fail

    store._server.client = Client()
    before = error_counts()["judgment"]
    assert store.get_many(["k"]) == [None]
    assert error_counts()["judgment"] == before + 1
    store._server.skip_until = 0.0  # (skipped for a moment after a failure)
    store.put_many([("k", b"v")])  # dropped, not raised
    store._server.skip_until = 0.0
    assert store.claim("k", 1.0) == ""  # not asked: the caller computes
    assert error_counts()["judgment"] == before + 3
