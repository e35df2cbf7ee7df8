"""Work cancelled under a request that was not: seen under overload, where a request waited
for a text another request was encoding, and that request was abandoned at its deadline.
The CancelledError passed every error handler (a plain-text 500, not counted in
``rerankit_errors_total``). It is a JSON 503 to retry now, the text is encoded for the
request that still waits, and a request that is itself cancelled still cancels its work.
And the count of requests refused while the service stops, which missed those that came
after the stop began."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import CancelledError

import numpy as np
import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient
from replicas import metric_in

from rerankit import register_reranker
from rerankit._threads import in_thread
from rerankit.errors import ServiceError
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import EmbeddingScorer
from rerankit.server import ServerSettings, create_app
from rerankit.server.pipeline import run_abandoning


def _abandoned_elsewhere() -> None:
    """What a thread waiting for another request's encoding got once that request was
    abandoned (the micro-batcher drops its job with this error)."""
    raise CancelledError("the request was abandoned")


class _SharesWork:
    name = "shares"

    async def score(self, query, docs, **context):
        if query != "warm up":
            await in_thread(_abandoned_elsewhere)
        return np.arange(len(docs), dtype=float)


register_reranker("test-shares-work", lambda: ScorerReranker(_SharesWork()))


def test_work_cancelled_under_a_live_request_is_a_json_503_counted_in_the_metrics():
    settings = ServerSettings(
        pipelines={"shares": "test-shares-work", "bm25": "bm25"}, default="bm25", timeout=5
    )
    ask = {"model": "shares", "query": "vaccines", "documents": ["a vaccine", "football"]}
    with TestClient(create_app(settings)) as client:
        started = time.monotonic()
        r = client.post("/v2/rerank", json=ask)
        assert time.monotonic() - started < 4  # at once, not at the deadline
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("application/json")
        assert "its work was cancelled" in r.json()["message"]
        assert "'shares'" in r.json()["message"]
        text = client.get("/metrics").text
        assert metric_in(text, "rerankit_errors_total", status="503", model="shares") == 1
        assert metric_in(text, "rerankit_errors_total", status="500") == 0
        assert client.get("/info").json()["pipelines"]["shares"]["state"] == "ready"
        assert client.post("/v2/rerank", json={**ask, "model": "bm25"}).status_code == 200


async def _sleeper() -> None:
    await asyncio.sleep(30)


def test_run_abandoning_tells_a_task_cancelled_by_another_from_its_own_cancellation():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        # the task is cancelled by someone else: a 503, not a CancelledError
        task, abandoned = loop.create_task(_sleeper()), threading.Event()
        loop.call_later(0.01, task.cancel)
        with pytest.raises(ServiceError) as info:
            await run_abandoning(task, 5, abandoned, "p")
        assert info.value.status == 503 and abandoned.is_set()

        # the caller is cancelled (its client left, a shutdown): that still cancels
        task, abandoned = loop.create_task(_sleeper()), threading.Event()
        caller = loop.create_task(run_abandoning(task, 5, abandoned, "p"))
        await asyncio.sleep(0.01)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await asyncio.sleep(0)
        assert abandoned.is_set() and task.cancelled()

        # the deadline: a timeout, the work abandoned and cancelled
        task, abandoned = loop.create_task(_sleeper()), threading.Event()
        with pytest.raises(asyncio.TimeoutError):
            await run_abandoning(task, 0.01, abandoned, "p")
        await asyncio.sleep(0)
        assert abandoned.is_set() and task.cancelled()

        # an answer
        task, abandoned = loop.create_task(asyncio.sleep(0, "answer")), threading.Event()
        assert await run_abandoning(task, 5, abandoned, "p") == "answer"
        assert not abandoned.is_set()

    asyncio.run(main())


def test_a_text_whose_encoding_request_was_abandoned_is_encoded_for_the_one_still_waiting():
    scorer = EmbeddingScorer(device="cpu")  # (its model loads only to encode: not here)
    claimed, let_go, calls = threading.Event(), threading.Event(), []

    def encode(texts, prompt):  # (the model's encoding, counted; the first is abandoned)
        calls.append(list(texts))
        if len(calls) == 1:
            claimed.set()
            let_go.wait(5)
            raise CancelledError("the request was abandoned")
        return np.ones((len(texts), 3), dtype=np.float32)

    scorer._encode = encode
    store = scorer._recent
    first: list[BaseException] = []

    def abandoned_request() -> None:
        try:
            scorer._encode_missing("k", ["vaccines"], None, store)
        except BaseException as exc:
            first.append(exc)

    thread = threading.Thread(target=abandoned_request)
    thread.start()
    assert claimed.wait(5)
    threading.Timer(0.05, let_go.set).start()  # abandoned while the next one waits for it
    rows = scorer._encode_missing("k", ["vaccines", "football"], None, store)
    thread.join(5)
    assert isinstance(first[0], CancelledError)  # the abandoned request stops
    assert sorted(rows) == ["football", "vaccines"]
    assert calls == [["vaccines"], ["football"], ["vaccines"]]


def test_the_stop_says_how_many_requests_got_503_including_those_that_came_after_it_began(
    caplog,
):
    """The drain's line counts the requests there when it began (none here); a request
    that comes later on a connection still open gets 503 too, and the line said when the
    service has stopped counts it (with ``--workers 2`` and busy clients, every 503 came
    after the drain's count of 0)."""
    caplog.set_level(logging.INFO, logger="rerankit.server")
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25")
    app = create_app(settings)
    ask = {"query": "vaccines", "documents": ["a vaccine", "football"]}
    with TestClient(app) as client:
        assert client.post("/v2/rerank", json=ask).status_code == 200
        app.state.service.begin_shutdown()
        deadline = time.monotonic() + 5
        while not app.state.admission.draining and time.monotonic() < deadline:
            time.sleep(0.01)
        answers = [client.post("/v2/rerank", json=ask) for _ in range(2)]
        assert [r.status_code for r in answers] == [503, 503]
        assert "0 queued requests get 503, 0 running may finish" in caplog.text
    assert "stopped: 2 requests answered 503 while stopping" in caplog.text
