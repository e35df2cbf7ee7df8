"""Shedding under a sudden stall: a request running longer than the pipeline's recent
time per request makes the estimate of the queue ahead that long, so requests arriving
while it stalls are refused at once (503, counted in ``rerankit_shed_total``) rather than
queued to wait out their deadline. Driven on the service itself, the stall held by an
event: only the stalled request's age is timed, and only ever errs towards shedding."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from rerankit import register_reranker
from rerankit.errors import ServiceError
from rerankit.rerankers import ScorerReranker
from rerankit.server import ServerSettings
from rerankit.server.formats.base import Call
from rerankit.server.service import Service
from rerankit.server.shedding import shed, too_big, too_late
from rerankit.types import Document


class _Stalling:
    """Answers at once, but for a query starting with "stall": it waits for ``go``."""

    name = "stalling"

    def __init__(self):
        self.go = None

    async def score(self, query, docs, **context):
        if query.startswith("stall"):
            await self.go.wait()
        return np.arange(len(docs), dtype=float)


register_reranker("test-stalling", lambda: ScorerReranker(_Stalling()))


def _call(query):
    return Call(query=query, documents=[Document(text="a document")], model="stall")


async def _until(condition):
    for _ in range(1000):  # (10 s at most)
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


def test_requests_arriving_during_a_stall_are_shed_by_the_running_one_s_age():
    timeout = 2.0

    async def scenario():
        service = Service(
            ServerSettings(
                pipelines={"stall": "test-stalling"},
                default="stall",
                timeout=timeout,
                max_concurrency=1,
                max_queue=10,
            )
        )
        await service.warm_up()
        pipeline = service.pipelines["stall"]
        scorer = pipeline.reranker.scorer
        scorer.go = asyncio.Event()
        for _ in range(3):  # a fast history: a few ms per request
            await service.run("v2", _call("quick"))
        assert 0 < pipeline.service_time < 0.2
        stalled = asyncio.ensure_future(service.run("v2", _call("stall A")))
        await _until(lambda: not service.admission.can_start("stall"))  # A holds the slot
        queued = asyncio.ensure_future(service.run("v2", _call("quick B")))
        await _until(lambda: service.admission.waiting_by["stall"] == 1)  # B waits behind A
        await asyncio.sleep(0.55 * timeout)  # A has run longer than half the deadline
        arrived = time.monotonic()
        try:  # two requests of > 1 s each ahead of C: more than its deadline
            await service.run("v2", _call("quick C"))
            error = None
        except ServiceError as exc:
            error = exc
        finally:
            took = time.monotonic() - arrived
            scorer.go.set()  # the provider answers again: A and B end
            await asyncio.gather(stalled, queued, return_exceptions=True)
            service.stop_retries()
        return error, took, service.metrics.shed.labels("stall")._value.get()

    error, took, shed = asyncio.run(scenario())
    assert error is not None, "C was queued and ran"
    assert error.status == 503 and took < 0.5 * timeout, (str(error), took)  # at once
    assert str(error).startswith("pipeline 'stall': not queued: it needs about ")
    assert f"s left of its {timeout:g} s deadline" in str(error)
    assert shed == 1


class _Full:
    """An admission whose slots are all taken, with ``waiting`` queued per pipeline."""

    def __init__(self, waiting):
        self.waiting_by, self.share = {"p": waiting}, 1

    def can_start(self, name):
        return False


def _pipeline(service_time, running_for, per_document=None):
    now = time.monotonic()
    return SimpleNamespace(
        name="p",
        service_time=service_time,
        per_document=per_document,
        running_since={object(): now - running_for},
    )


def test_a_pipeline_with_no_answered_request_sheds_nothing_as_the_page_says():
    """Seen 2 s into a run, before any request was answered: the running request's age
    alone shed one (`about 4.0 s of queue ahead and 0.0 s of work`)."""
    deadline = time.monotonic() + 2.0
    assert shed(_pipeline(0.0, 1.0), _Full(8), 50, deadline, 4.0) is None
    refused = shed(_pipeline(0.5, 1.0, 0.01), _Full(8), 50, deadline, 4.0)
    assert refused is not None and "(9.0 s of queue ahead and 0.5 s of work)" in str(refused)


def test_a_request_whose_turn_came_too_late_never_reads_0_0_against_0_0():
    now = time.monotonic()
    passed = str(too_late("live", 0.01, now - 0.2, 4.0, now=now))
    assert "its 4 s deadline had passed when its turn came" in passed
    small = str(too_late("live", 0.04, now + 0.02, 4.0, now=now))
    assert "it needs about 40 ms of work, more than the 20 ms left" in small, small
    for message in (passed, small):
        assert "0.0 s" not in message


def test_a_shed_request_is_told_what_it_needs_against_what_is_left_in_digits_that_differ():
    """Seen in a flood: `about 2.0 s of queue ahead and 6.0 s of work would not finish in
    the 8.0 s left`, which reads as if it fits (2.0 + 6.0 = 8.0)."""
    now = time.monotonic()
    # 2 ahead, each 1.0 s over one slot; 6.03 s of work: 8.03 s needed, 7.96 s left
    refused = str(shed(_pipeline(1.0, 0.0, 0.0603), _Full(1), 100, now + 7.96, 8.0, now=now))
    assert "not queued: it needs about 8.03 s (2.0 s of queue ahead and 6.0 s of work), " in (
        refused
    ), refused
    assert "more than the 7.96 s left of its 8 s deadline" in refused, refused
    late = str(too_late("slow", 6.04, now + 5.96, 8.0, now=now))
    assert "not run: it needs about 6.04 s of work, more than the 5.96 s left" in late, late
    far = str(too_late("slow", 6.0, now + 2.0, 8.0, now=now))  # one decimal when it suffices
    assert "it needs about 6.0 s of work, more than the 2.0 s left of its 8 s deadline" in far


def test_retry_after_of_a_shed_request_is_at_most_its_deadline_and_a_minute():
    """Seen under load: Retry-After 116-176 s on a 160 s deadline (the queue ahead, from the
    oldest running request's age); Cohere's SDK waits 60 s at most."""
    now = time.monotonic()
    long_queue = _pipeline(15.0, 115.0, 0.1)
    refused = shed(long_queue, _Full(5), 300, now + 160.0, 160.0, now=now)
    assert "(690.0 s of queue ahead" in str(refused)
    assert refused.headers["Retry-After"] == "60"
    short = shed(long_queue, _Full(5), 30, now + 4.0, 4.0, now=now)  # (300: a 413)
    assert short.headers["Retry-After"] == "4"  # no longer than the deadline
    small = shed(_pipeline(0.5, 0.0, 0.01), _Full(2), 10, now + 1.0, 4.0, now=now)
    assert small.headers["Retry-After"] == "2"  # the queue's own estimate, when shorter


class _PerDocument:
    """Takes 10 ms per document, as a model does."""

    name = "per-document"

    async def score(self, query, docs, **context):
        await asyncio.sleep(0.01 * len(docs))
        return np.arange(len(docs), dtype=float)


register_reranker("test-per-document", lambda: ScorerReranker(_PerDocument()))


def test_a_request_too_big_for_the_timeout_on_an_idle_service_is_a_413_not_a_retry(caplog):
    """The security reader's 1000 documents of 700 words on an idle service got 503 "the
    service is busy: retry" with Retry-After: 1, which clients retried, always refused."""

    async def scenario():
        service = Service(
            ServerSettings(pipelines={"p": "test-per-document"}, default="p", timeout=1.0)
        )
        await service.warm_up()
        five = [Document(text=f"d{i}") for i in range(5)]
        for _ in range(3):  # a history: about 10 ms per document
            await service.run("v2", Call(query="q", documents=five, model="p"))
        many = [Document(text=f"d{i}") for i in range(300)]  # about 3 s of work
        started = time.monotonic()
        try:
            await service.run("v2", Call(query="q", documents=many, model="p"))
            error = None
        except ServiceError as exc:
            error = exc
        service.stop_retries()
        return error, time.monotonic() - started

    with caplog.at_level("WARNING", logger="rerankit.server"):
        error, took = asyncio.run(scenario())
    assert error is not None and error.status == 413, str(error)
    assert "Retry-After" not in (error.headers or {}) and took < 0.5
    assert "this request alone needs about" in str(error)
    assert "more than the 1 s deadline: send at most about" in str(error)
    assert any("refused with 413" in r.getMessage() for r in caplog.records)


def test_the_413_advice_fits_with_a_margin_and_its_numbers_multiply():
    """A reader got "73.2 s of work (300 texts at about 0.2 s each) ... send at most about
    102 documents", sent 100 and got a 504 at the 25 s deadline: the advice filled the
    whole timeout at an average rate, and 300 x 0.2 s is not 73.2 s."""
    said = str(too_big("hybrid", 0.244, 300, 25))
    assert "about 73.2 s of work (300 texts at about 0.244 s each, recently)" in said, said
    assert "send at most about 81 documents (what 80% of the deadline holds" in said, said
    assert 81 * 0.244 <= 0.8 * 25 < 82 * 0.244  # rounded down, within 80 % of the timeout
    said = str(too_big("p", 0.0102, 300, 1))  # in ms, the same way
    assert "3.1 s of work (300 texts at about 10.2 ms each" in said, said
    assert "send at most about 78 documents" in said, said
    assert too_big("p", 0.08, 300, 25) is None  # 24 s: it fits the whole timeout, not refused
