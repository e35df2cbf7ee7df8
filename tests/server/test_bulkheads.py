"""Bulkheads between pipelines under slow failures: a model whose hub stalls or refuses
slowly, a provider that accepts connections and never answers. Each service runs in a
process of its own (as deployed; see bulkhead_scenario.py) and 32 clients here hammer its
broken pipelines. Their requests are answered 503 with Retry-After at once (or at their
deadline, for a provider that stalls once a request runs); a healthy pipeline keeps
answering within a second, during and after; no thread or task keeps working for a request
that was answered, and no request starts a load attempt."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from bulkhead_scenario import hammer

from rerankit.errors import ServiceError
from rerankit.server import ServerSettings
from rerankit.server.admission import Admission
from rerankit.server.metrics import Metrics

SCENARIO = Path(__file__).with_name("bulkhead_scenario.py")


@contextlib.contextmanager
def _served(scenario: str) -> Iterator[tuple[dict, list]]:
    """The scenario's service in a process of its own: yields what it printed once under
    way, and a list that holds its report (what still runs) once the block ends."""
    child = subprocess.Popen(
        [sys.executable, str(SCENARIO), scenario],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    report: list[dict] = []
    try:
        line = child.stdout.readline()
        assert line, child.stderr.read()[-3000:]
        start = json.loads(line)
        assert start["bm25_ready"], "bm25 did not become ready while the others load"
        assert start["under_way"], f"the broken pipelines are not as the scenario needs: {start}"
        yield start, report
        child.stdin.write("report\n")
        child.stdin.flush()
        report.append(json.loads(child.stdout.readline()))
    finally:
        child.kill()
        child.wait(10)


def _check_answers(answers: dict, *, broken_within: float, ran: bool = False) -> None:
    """Every answer of a broken pipeline was a 503 with Retry-After within
    ``broken_within`` s (or, for requests that ``ran`` out of time, a 504); every one of
    bm25's, while they came and after, a 200 within 1 s."""
    assert answers["broken"] and answers["during"] and answers["after"]
    for status, retry_after, took, body in answers["broken"]:
        assert status in ((503, 504) if ran else (503,)), body
        assert retry_after is not None and int(retry_after) >= 1, body
        assert took < broken_within, f"a broken pipeline's 503 took {took:.2f} s: {body}"
    for phase in ("during", "after"):
        for status, _, took, body in answers[phase]:
            assert status == 200, f"bm25 {phase}: {status} {body}"
            assert took < 1.0, f"bm25 {phase} took {took:.2f} s"


def _check_nothing_left(start: dict, report: dict, loading: int) -> None:
    """Once every request was answered, no thread works in rerankit but each of ``loading``
    pipelines' one load attempt, and no more tasks run rerankit's code than ran before the
    requests came (the attempts' own, their warm-up batches at the provider; they may be a
    later attempt's by now), none of them a request's."""
    threads, tasks = report["threads"], report["tasks"]
    assert all(name.startswith("rerankit-load") for name in threads), threads
    assert len(threads) <= loading, threads
    assert not [t for t in tasks if t.startswith("rerankit-request")], tasks
    assert len(tasks) <= len(start["tasks"]), f"before: {start['tasks']}; after: {tasks}"


@pytest.mark.parametrize(
    "hub",
    ["stall", pytest.param("drop", marks=pytest.mark.slow)],  # drop: make test-slow
)
def test_a_pipeline_whose_hub_or_provider_stalls_never_delays_another(hub):
    """``$HF_ENDPOINT`` accepts and never answers (``stall``) or closes each connection
    half a second after accepting it without a word (``drop``), so a load attempt of ``ce``
    hangs in huggingface_hub's retries; ``llm``'s provider accepts and never answers, so
    its warm-up batch does not come back within the 10 s ``timeout``. Once both attempts are
    under way, 32 clients hammer both for 2 s while bm25 is asked every 50 ms, and 1 s
    after."""
    pytest.importorskip("openai", reason="the provider case needs the 'openai' extra")
    pytest.importorskip("sentence_transformers", reason="the hub case loads a cross-encoder")
    for attempt in (1, 2):
        with _served(f"hub-{hub}") as (start, report):
            answers = hammer(start["url"], ["ce", "llm"], seconds=2.0)
        # bm25 answers in ~0.1 s while the others stall (seconds each without bulkheads);
        # one answer just over 1 s on a machine busy with other work is run again, once
        slow = [a[2] for phase in ("during", "after") for a in answers[phase] if a[2] >= 1.0]
        if not slow or max(slow) >= 2.0 or attempt == 2:
            break
    _check_answers(answers, broken_within=2.0)
    (seen,) = report
    for name in ("ce", "llm"):
        entry = seen["info"][name]
        assert entry["state"] in ("loading", "failed") and not entry["loaded"], entry
        # hundreds of requests, and no attempt of theirs: a 10 s attempt then a 5 s wait
        # leave room for at most one more in these 3 s
        assert entry["attempts"] - start["attempts"][name] <= 1, (entry, start)
        assert entry["retry_after_seconds"] >= 1
    _check_nothing_left(start, seen, loading=2)


@pytest.mark.slow  # make test-slow: keeps make test under 10 minutes
def test_a_provider_that_stalls_once_requests_run_holds_nothing_another_pipeline_needs():
    """``llm``'s provider answers the warm-up batch, then accepts every call and never
    answers: its requests run until their 1 s deadline (504; those still queued then get
    503), holding at most their pipeline's share of the slots and queue, while bm25 keeps
    answering at once; each answered request's provider calls are closed; the pipeline,
    loaded and warmed up, says it is failing."""
    pytest.importorskip("openai", reason="needs the 'openai' extra")
    with _served("provider-stall") as (start, report):
        answers = hammer(start["url"], ["llm"], seconds=2.0)
    _check_answers(answers, broken_within=2.0, ran=True)
    (seen,) = report
    # requests ran and called the provider (not all refused before they ran) ...
    assert seen["provider_calls"] > start["provider_calls"], (start, seen)
    assert seen["unanswered"] == 0  # ... and every call of an answered request was given up
    assert seen["info"]["llm"]["state"] == "failing"  # loaded, but its requests fail
    assert seen["info"]["llm"]["loaded"] and "deadline" in seen["info"]["llm"]["error"]
    _check_nothing_left(start, seen, loading=0)


def test_no_pipeline_takes_more_than_its_share_of_the_slots_and_the_queue():
    async def scenario() -> None:
        admission = Admission(slots=4, queue=8, metrics=Metrics(), share=3)
        assert (admission.share, admission.queue_share) == (3, 6)
        for _ in range(3):
            await admission.acquire("stuck")
        waiting = [asyncio.ensure_future(admission.acquire("stuck")) for _ in range(6)]
        await asyncio.sleep(0.01)
        assert not any(w.done() for w in waiting)  # at its share: they queue
        with pytest.raises(ServiceError) as refused:  # and its share of the queue is full
            await admission.acquire("stuck")
        assert refused.value.status == 429 and "'stuck'" in refused.value.message
        await asyncio.wait_for(admission.acquire("healthy"), 1.0)  # the slot kept for others
        assert admission.running_by == {"stuck": 3, "healthy": 1}
        await admission.release("healthy")
        assert not any(w.done() for w in waiting)  # a free slot, but not for "stuck"
        await admission.release("stuck")
        await asyncio.sleep(0.01)
        assert sum(w.done() for w in waiting) == 1  # one of its own waiters took its place
        for w in waiting:
            w.cancel()

    asyncio.run(scenario())


def test_the_share_of_one_pipeline_is_set_or_chosen():
    one = {"bm25": "bm25"}
    two = {"bm25": "bm25", "text": "text"}
    assert ServerSettings(pipelines=one, default="bm25").pipeline_share() == 4  # all: alone
    assert ServerSettings(pipelines=two, default="bm25").pipeline_share() == 3
    for slots, share in ((1, 1), (2, 1), (3, 2), (8, 6), (16, 12)):
        settings = ServerSettings(pipelines=two, default="bm25", max_concurrency=slots)
        assert settings.pipeline_share() == share
    chosen = ServerSettings(pipelines=two, default="bm25", max_concurrency_per_pipeline=2)
    assert chosen.pipeline_share() == 2
    with pytest.raises(ValueError, match=r"max_concurrency_per_pipeline .* \(4\), got 5"):
        ServerSettings(pipelines=two, default="bm25", max_concurrency_per_pipeline=5)
    with pytest.raises(ValueError, match="max_concurrency_per_pipeline"):
        ServerSettings.from_mapping({"server": {"max_concurrency_per_pipeline": -1}})


def test_the_service_warns_at_start_when_no_pipeline_is_kept_from_the_others_load(caplog):
    """Settings that let one of several pipelines hold every slot isolate nothing, which
    the settings file itself does not show: the start log says so, once; settings that
    keep a slot for the others, or serve one pipeline, say nothing of it."""
    from rerankit.server import create_app

    two = {"bm25": "bm25", "text": "text"}
    cases = [
        ({"pipelines": two, "max_concurrency": 1}, True),
        ({"pipelines": two, "max_concurrency_per_pipeline": 4}, True),
        ({"pipelines": two}, False),  # 3 of 4
        ({"pipelines": two, "max_concurrency": 2}, False),  # 1 of 2
        ({"pipelines": {"bm25": "bm25"}, "max_concurrency": 1}, False),  # alone
    ]
    for options, warned in cases:
        caplog.clear()
        with caplog.at_level("WARNING", logger="rerankit.server.app"):
            create_app(ServerSettings(default="bm25", **options))
        said = [r.getMessage() for r in caplog.records if "leaves none" in r.getMessage()]
        assert len(said) == (1 if warned else 0), (options, said)
    assert said == [] and caplog.records  # (the open-service warning: the log was read)
    caplog.clear()
    with caplog.at_level("WARNING", logger="rerankit.server.app"):
        create_app(ServerSettings(default="bm25", pipelines=two, max_concurrency=1))
    (line,) = [r.getMessage() for r in caplog.records if "leaves none" in r.getMessage()]
    assert line.startswith("rerankit service: 2 pipelines, and one may hold every slot ")
    assert "max_concurrency 2 or more" in line
