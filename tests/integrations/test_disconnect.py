"""An in-process app cancels the rerank of a client that disconnected
(``rerankit.integrations.fastapi.cancel_on_disconnect``): Starlette does not cancel the
handler, so a plain ``await reranker.arerank(...)`` keeps the process's one model thread
busy with work nobody waits for, and the next request waits behind it (the reader's
16.4 s). Times are compared as ratios of the abandoned work's own length."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batched_model import BatchedModel

import rerankit
from rerankit.errors import DeadlineError, RerankitError
from rerankit.integrations.fastapi import ClientDisconnected, cancel_on_disconnect

BATCH = 0.02  # seconds of model work per document
HEAVY = [f"document {i}" for i in range(30)]  # 30 batches: 0.6 s on the model thread


class _Request:
    """What the helper reads of a Starlette Request: the client leaves ``after`` seconds."""

    def __init__(self, after: float | None) -> None:
        self.gone_at = None if after is None else time.monotonic() + after
        self.asked = 0

    async def is_disconnected(self) -> bool:
        self.asked += 1
        return self.gone_at is not None and time.monotonic() >= self.gone_at


def test_a_disconnected_client_frees_the_model_thread_for_the_next_request():
    model = BatchedModel(BATCH)
    reranker = rerankit.load(model)

    async def scenario():
        start = time.monotonic()
        heavy = asyncio.ensure_future(
            cancel_on_disconnect(_Request(after=0.1), reranker.arerank("q", HEAVY))
        )
        await asyncio.sleep(0.15)  # the client has gone; the model thread was busy with it
        asked = time.monotonic()
        light = await reranker.arerank("q", ["one document"])
        waited = time.monotonic() - asked
        with pytest.raises(ClientDisconnected):
            await heavy
        return waited, time.monotonic() - start, light

    waited, _, light = asyncio.run(scenario())
    whole = len(HEAVY) * BATCH
    assert len(light) == 1
    assert waited < 0.35 * whole, (waited, whole)  # not behind the rest of the heavy work
    assert model.batches < len(HEAVY) / 2  # the abandoned rerank stopped early


def test_the_work_is_awaited_as_it_is_while_the_client_stays():
    reranker = rerankit.load(BatchedModel(0.001))
    request = _Request(after=None)
    result = asyncio.run(
        cancel_on_disconnect(request, reranker.arerank("q", ["a", "bb"]), poll=0.001)
    )
    assert [r.text for r in result] == ["a", "bb"] and request.asked >= 1

    class Slow:
        name = "slow"

        async def score(self, query, docs, **context):
            await asyncio.sleep(1)
            return [1.0] * len(docs)

    slow = rerankit.load(Slow())
    with pytest.raises(DeadlineError):  # the work's own error, as it is
        asyncio.run(cancel_on_disconnect(request, slow.arerank("q", ["a"], deadline=0.05)))


def test_cancelling_the_handler_cancels_the_work():
    started, cancelled = asyncio.Event(), []

    async def work():
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def scenario():
        handler = asyncio.ensure_future(cancel_on_disconnect(_Request(after=None), work()))
        await started.wait()
        handler.cancel()
        with pytest.raises(asyncio.CancelledError):
            await handler
        await asyncio.sleep(0)  # the work's cancellation runs

    asyncio.run(scenario())
    assert cancelled == [True]


def test_a_wrong_request_or_poll_is_said():
    async def nothing():
        return None

    for request, poll, said in [
        (object(), 0.05, "request must be the FastAPI/Starlette Request"),
        (_Request(None), 0, "poll must be a number of seconds above 0"),
        (_Request(None), float("inf"), "poll must be finite"),
    ]:
        work = nothing()
        with pytest.raises((TypeError, ValueError), match=said):
            asyncio.run(cancel_on_disconnect(request, work, poll=poll))
        work.close()
    assert issubclass(ClientDisconnected, RerankitError)


def test_importing_rerankit_imports_no_web_framework():
    code = (
        "import sys, rerankit, rerankit.integrations.fastapi; "
        "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_real_uvicorn_server_frees_the_model_thread_only_with_the_helper(tmp_path):
    """The reader's scenario over HTTP: a client posts a long rerank and gives up after
    0.3 s; the next request, on a new connection, waits behind the abandoned work on
    ``/plain`` and not on ``/guarded``."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn", reason="needs the 'server' extra")
    app = Path(__file__).with_name("disconnect_app.py")
    log = tmp_path / "server.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(app)], stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        url = f"http://127.0.0.1:{proc.stdout.readline().strip()}"
        heavy = {"query": "q", "documents": [f"document {i}" for i in range(60)]}
        light = {"query": "q", "documents": ["one document"]}
        for _ in range(100):  # until it answers
            try:
                httpx.post(f"{url}/guarded", json=light, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        start = time.monotonic()
        assert httpx.post(f"{url}/guarded", json=heavy, timeout=30).status_code == 200
        whole = time.monotonic() - start  # the heavy rerank's own time (60 x 0.03 s)

        def next_after_giving_up(endpoint: str) -> float:
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(f"{url}/{endpoint}", json=heavy, timeout=0.3)
            start = time.monotonic()
            assert httpx.post(f"{url}/{endpoint}", json=light, timeout=30).status_code == 200
            waited = time.monotonic() - start
            time.sleep(whole)  # whatever still runs ends before the next case
            return waited

        plain, guarded = next_after_giving_up("plain"), next_after_giving_up("guarded")
    finally:
        proc.terminate()
        proc.wait(10)
    assert plain > 0.5 * whole, (plain, whole, log.read_text())  # Starlette did not cancel it
    assert guarded < 0.25 * whole, (guarded, whole, log.read_text())
