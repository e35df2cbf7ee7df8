"""A rerank's ``deadline=``: a pipeline whose later stage is still running at the deadline
returns the last finished stage's result, degraded, saying so (as ``rerankit serve``'s
timeout does); with no stage finished it raises :class:`~rerankit.errors.DeadlineError`.
The stage left running on a thread neither blocks the caller nor lets a later stage start.
Bounds are loose (a loaded machine): the held stage would take 30 s without the deadline."""

from __future__ import annotations

import asyncio
import math
import threading
import time

import numpy as np
import pytest

import rerankit
from rerankit import load
from rerankit.errors import DeadlineError, InputError
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.registry import register
from rerankit.rerankers import Pipeline
from rerankit.scorers import BM25Scorer, LLMPointwiseScorer

DOCS = ["wind farms", "solar power and solar panels", "battery storage", "solar power"]
QUERY = "solar power"
DEADLINE = 0.3
SLACK = 3.0  # the call returns this soon after its deadline, however loaded the machine
HELD = 30.0  # how long a held stage would take (it is let go at the end of each test)
GATE = {"event": threading.Event()}


class Held:
    """A stage that works on a thread (as a plugin's blocking work does) until the test
    lets it go; ``ran`` says whether it started, ``ended`` whether its thread finished."""

    name = "held"

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate = gate or GATE["event"]
        self.ran, self.ended = threading.Event(), threading.Event()

    def _work(self) -> None:
        self.gate.wait(HELD)
        self.ended.set()

    async def score(self, query, docs, **context):
        self.ran.set()
        await asyncio.to_thread(self._work)
        return np.arange(len(docs), dtype=float)  # the input order reversed


register("scorer", "deadline_held", Held)


@pytest.fixture
def gate():
    event = threading.Event()
    GATE["event"] = event
    yield event
    event.set()  # the held thread ends


def _cascade(gate, *later):
    return Pipeline([BM25Scorer(), Held(gate), *later], name="cascade")


def _bm25_order():
    return [r.index for r in load("bm25").rerank(QUERY, DOCS)]


def _check_degraded(result, elapsed):
    assert DEADLINE * 0.8 <= elapsed < DEADLINE + SLACK, elapsed
    assert result.degraded
    assert result.warnings[0] == (
        f"stage 'held' did not finish within the {DEADLINE:g} s deadline; its documents keep "
        "the previous stage's order and scores"
    )
    assert [r.index for r in result] == _bm25_order()
    assert result.ranked_by == "bm25"
    assert "held" not in result.timings


def test_sync_returns_the_first_stage_order_degraded_at_the_deadline(gate):
    start = time.monotonic()
    result = _cascade(gate).rerank(QUERY, DOCS, deadline=DEADLINE)
    _check_degraded(result, time.monotonic() - start)


def test_async_returns_the_first_stage_order_degraded_at_the_deadline(gate):
    async def main():
        start = time.monotonic()
        result = await _cascade(gate).arerank(QUERY, DOCS, deadline=DEADLINE)
        return result, time.monotonic() - start

    result, elapsed = asyncio.run(_released(main(), gate))
    _check_degraded(result, elapsed)


async def _released(coro, gate):
    """``coro``'s result, the held stage let go before the loop closes (which waits for it)."""
    try:
        return await coro
    finally:
        gate.set()


def test_the_one_call_form_takes_the_deadline_too(gate):
    start = time.monotonic()
    result = rerankit.rerank(QUERY, DOCS, reranker=_cascade(gate), deadline=DEADLINE)
    _check_degraded(result, time.monotonic() - start)


def test_a_deadline_no_stage_meets_raises_naming_it_and_the_stage(gate):
    pipeline = Pipeline([Held(gate), BM25Scorer()], name="slow-first")
    start = time.monotonic()
    with pytest.raises(DeadlineError) as caught:
        pipeline.rerank(QUERY, DOCS, deadline=DEADLINE)
    assert time.monotonic() - start < DEADLINE + SLACK
    assert isinstance(caught.value, TimeoutError)
    assert caught.value.deadline == DEADLINE and caught.value.stage == "held"
    message = str(caught.value)
    assert "pipeline 'slow-first': stage 'held' did not finish within the 0.3 s deadline" in message
    assert "no order to return" in message


def test_a_reranker_without_stages_raises_at_its_deadline(gate):
    with pytest.raises(
        DeadlineError, match=r"reranker 'held' did not finish within the 0\.3 s"
    ) as e:
        load(Held(gate)).rerank(QUERY, DOCS, deadline=DEADLINE)
    # a caller of the library is told its fix in Python's words
    assert str(e.value).endswith(
        "(give a longer deadline, or rerank with a Pipeline whose first stage is fast)"
    )


def test_no_stage_starts_after_the_deadline(gate):
    last = Held(threading.Event())
    last.name = "last"
    held = Held(gate)
    pipeline = Pipeline([BM25Scorer(), held, last], name="three")
    result = pipeline.rerank(QUERY, DOCS, deadline=DEADLINE)
    assert result.degraded and "stage 'held' did not finish" in result.warnings[0]
    gate.set()  # the held stage's thread finishes now, long after the deadline
    assert held.ended.wait(10)
    time.sleep(0.2)  # (time for a next stage to start, were one to)
    assert not last.ran.is_set()


def test_a_deadline_met_changes_nothing():
    pipeline = Pipeline([BM25Scorer(), load("jaccard")], name="fast")
    plain = pipeline.rerank(QUERY, DOCS)
    timed = pipeline.rerank(QUERY, DOCS, deadline=30)
    assert not plain.degraded and not timed.degraded
    assert [(r.index, r.score, r.scores) for r in timed] == [
        (r.index, r.score, r.scores) for r in plain
    ]
    assert timed.warnings == plain.warnings and timed.ranked_by == plain.ranked_by

    async def main():
        return await pipeline.arerank(QUERY, DOCS, deadline=30)

    assert [r.index for r in asyncio.run(main())] == [r.index for r in plain]


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "1", True])
def test_a_deadline_that_is_no_positive_number_is_refused(bad):
    with pytest.raises(InputError, match=r"deadline=.*expected a positive number of seconds"):
        load("bm25").rerank(QUERY, DOCS, deadline=bad)


def test_a_slow_llm_judge_is_cut_at_the_deadline():
    """A real LLM judge whose provider takes 3 s per answer (its own timeout is 30 s)."""
    pytest.importorskip("openai", reason="needs the 'openai' extra")
    with FakeLLMServer(responder=lambda r: Reply('{"score": 9}', delay=3.0)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="k")
        judge = LLMPointwiseScorer(client, cache=False, retry=RetryPolicy(attempts=1, timeout=30))
        pipeline = Pipeline([BM25Scorer(), judge], name="judged")
        start = time.monotonic()
        result = pipeline.rerank(QUERY, DOCS, deadline=DEADLINE)
        elapsed = time.monotonic() - start
    assert elapsed < 3.0 * 0.8, elapsed  # well before the provider's first answer
    assert result.degraded and [r.index for r in result] == _bm25_order()
    assert result.warnings[0].startswith(
        "stage 'llm_pointwise' did not finish within the 0.3 s deadline"
    )
