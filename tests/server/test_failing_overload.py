"""A deadline missed while waiting behind other requests (for the model thread the slots
share) is overload, not a broken pipeline: those 504s do not count towards ``failing``,
so a burst of large requests does not make the pipeline refuse everything afterwards. A
request whose own model work runs past the deadline still counts. Driven on the service
itself, the model thread held by an event."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from rerankit import register_reranker
from rerankit._threads import in_model_thread
from rerankit.errors import ServiceError
from rerankit.rerankers import ScorerReranker
from rerankit.server import ServerSettings
from rerankit.server.formats.base import Call
from rerankit.server.service import Service
from rerankit.server.state import FAILING_AFTER
from rerankit.types import Document


class _OnModelThread:
    """A local-model-like scorer: its work runs on the model thread; a query starting with
    "hold" holds that thread until ``go`` is set (``entered``/``left`` tell the test)."""

    name = "held"

    def __init__(self):
        self.go, self.entered, self.left = threading.Event(), threading.Event(), threading.Event()

    def _hold(self):
        self.entered.set()
        self.go.wait(30)
        self.left.set()

    async def score(self, query, docs, **context):
        if query.startswith("both"):  # two calls of its own: the second waits for the first
            await asyncio.gather(in_model_thread(self._hold), in_model_thread(lambda: None))
        else:
            await in_model_thread(self._hold if query.startswith("hold") else lambda: None)
        return np.arange(len(docs), dtype=float)


register_reranker("test-on-model-thread", lambda: ScorerReranker(_OnModelThread()))


def _call(query):
    return Call(query=query, documents=[Document(text="a document")], model="held")


async def _service(timeout):
    service = Service(
        ServerSettings(
            pipelines={"held": "test-on-model-thread"},
            default="held",
            timeout=timeout,
            max_concurrency=FAILING_AFTER + 1,
            failing_probe_seconds=0,
        )
    )
    await service.warm_up()
    pipeline = service.pipelines["held"]
    scorer = pipeline.reranker.scorer  # (the loaded model may be one an earlier test used)
    for event in (scorer.go, scorer.entered, scorer.left):
        event.clear()
    return service, pipeline, scorer


async def _until(event):
    await asyncio.get_running_loop().run_in_executor(None, event.wait, 30)
    assert event.is_set()


def test_requests_that_miss_their_deadline_waiting_for_the_model_thread_do_not_turn_it_failing():
    async def scenario():
        service, pipeline, scorer = await _service(0.6)
        try:
            held = asyncio.ensure_future(service.run("v2", _call("hold A")))
            await _until(scorer.entered)  # A holds the model thread
            behind = [service.run("v2", _call(f"quick {i}")) for i in range(FAILING_AFTER)]
            errors = await asyncio.gather(held, *behind, return_exceptions=True)
            scorer.go.set()  # the thread is free again
            await _until(scorer.left)
            after = await service.run("v2", _call("quick after"))
            return errors, pipeline.state.failing, after
        finally:
            scorer.go.set()
            service.stop_retries()

    errors, failing, after = asyncio.run(scenario())
    assert all(isinstance(e, ServiceError) and e.status == 504 for e in errors), errors
    assert "behind other requests" not in str(errors[0])  # A's own work ran past it
    for error in errors[1:]:  # B.. waited for the thread A held
        assert "behind other requests (the service is overloaded" in str(error), str(error)
    assert failing is None  # 1 failure (A's), not FAILING_AFTER + 1
    assert len(after) == 1


def test_a_model_that_itself_takes_past_the_deadline_still_turns_it_failing():
    async def scenario():
        service, pipeline, scorer = await _service(0.3)
        try:
            for _ in range(FAILING_AFTER):  # one at a time: nothing waits behind another
                with pytest.raises(ServiceError) as error:
                    await service.run("v2", _call("hold"))
                assert error.value.status == 504 and "behind" not in str(error.value)
                scorer.go.set()
                await _until(scorer.left)
                for event in (scorer.go, scorer.entered, scorer.left):
                    event.clear()
            return pipeline.state.failing
        finally:
            scorer.go.set()
            service.stop_retries()

    assert asyncio.run(scenario()) == "no answer within the 0.3 s deadline"


def test_a_504_never_says_it_waited_longer_than_its_deadline():
    """Seen under load: `no answer within the 160 s deadline; it waited 165.2 s of it behind
    other requests` (the waits added up overlap, and stuck work runs stuck_grace past)."""

    async def scenario():
        service, pipeline, _ = await _service(160.0)
        try:
            return str(pipeline.out_of_time(165.2)), str(pipeline.out_of_time(100.0))
        finally:
            service.stop_retries()

    over, within = asyncio.run(scenario())
    assert "no answer within the 160 s deadline; it waited all of it behind other" in over
    assert "165.2" not in over
    assert "it waited 100.0 s of it behind other requests" in within


def test_a_request_waiting_only_for_its_own_model_work_is_not_told_it_waited_behind_others():
    """Seen on an idle replica: one request too large for the deadline was told "it waited
    0.3 s of it behind other requests (the service is overloaded...)", and that 504 did not
    count towards ``failing``; the wait was for the model thread busy with its own work."""

    async def scenario():
        service, pipeline, scorer = await _service(0.4)
        try:
            with pytest.raises(ServiceError) as error:
                await service.run("v2", _call("both"))
            scorer.go.set()
            await _until(scorer.left)
            return error.value, pipeline.state.streak
        finally:
            scorer.go.set()
            service.stop_retries()

    error, streak = asyncio.run(scenario())
    assert error.status == 504
    assert "behind" not in str(error), str(error)
    assert streak == 1  # its own work ran past the deadline: it counts
