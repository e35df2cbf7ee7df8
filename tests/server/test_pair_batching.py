"""The service's continuous batching of cross-encoder pairs: concurrent requests' pairs,
tokenised on their own threads, share forward passes on the model thread, and every
request gets exactly the scores, flags and warnings it would get alone."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

pytest.importorskip("torch", reason="local models need the 'torch' extra")
pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx")

from rerankit._threads import on_model_thread  # noqa: E402
from rerankit.scorers import CrossEncoderScorer  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402
from rerankit.server.batching import MicroBatching, request_hooks  # noqa: E402
from rerankit.types import Document  # noqa: E402

REQUESTS = [
    ("what do vaccines train", ["vaccines train the immune system", "pasta with tomatoes"]),
    ("solar power", ["solar cells turn sunlight into power", "wind at sea", "solar " * 200]),
    ("immune system", ["the immune system makes antibodies"]),
]


@pytest.fixture
def scorer(bert_dir):
    # batch 64 so that pairs of several requests can share one forward pass
    return CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=64)


@pytest.fixture
def forwards(scorer):
    """The rows of each forward pass of the scorer's model from now on."""
    rows: list[int] = []
    handle = scorer.model.model.register_forward_pre_hook(
        lambda _m, _args, kwargs: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    yield rows
    handle.remove()


async def _served(scorer, batching, abandoned=None):
    """The REQUESTS, each as the service runs one (its hooks set): the first alone, the
    other two once the first is being run (its batch taken from the queue)."""

    def start(k):
        event = abandoned[k] if abandoned else threading.Event()
        query, texts = REQUESTS[k]
        with request_hooks(batching, event):
            return asyncio.ensure_future(scorer.score(query, [Document(text=t) for t in texts]))

    tasks = [start(0)]
    if batching.batches_pairs(scorer):
        taken = lambda: _queued(batching, scorer, taken=1, waiting=0)  # noqa: E731
        assert await asyncio.to_thread(_wait_for, taken), "the first request was never taken"
    tasks += [start(1), start(2)]
    return await asyncio.gather(*tasks, return_exceptions=True)


def _wait_for(condition, seconds: float = 20) -> bool:
    """Whether ``condition()`` came true within ``seconds`` (polled)."""
    give_up = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > give_up:
            return False
        time.sleep(0.01)
    return True


def _with_model_thread_held(run, until):
    """``run()`` while the model thread is busy; released once ``until()`` holds (or 20 s)."""
    gate, holding = threading.Event(), threading.Event()

    def hold():
        holding.set()
        gate.wait(30)

    holder = threading.Thread(target=lambda: on_model_thread(hold), daemon=True)
    holder.start()
    holding.wait(10)
    out: list = []
    worker = threading.Thread(target=lambda: out.append(run()), daemon=True)
    worker.start()
    reached = _wait_for(until)
    gate.set()
    worker.join(60)
    holder.join(10)
    assert reached, "the requests never queued while the model thread was busy"
    assert not worker.is_alive()
    return out[0]


def _queued(batching, scorer, *, taken: int, waiting: int) -> bool:
    """Whether the scorer's pair batcher has taken ``taken`` jobs from its queue and
    ``waiting`` more wait there."""
    batcher = batching._pair_batchers.get(id(scorer))
    if batcher is None:
        return False
    put, left = batcher._queue.unfinished_tasks, batcher._queue.qsize()
    return put - left == taken and left == waiting


def test_concurrent_requests_share_forward_passes_and_get_their_own_scores(scorer, forwards):
    alone = []
    for query, texts in REQUESTS:
        flags, warnings = {}, []
        alone.append((on_model_thread(scorer.score_noted, query, texts, flags, warnings), flags))
    batching = MicroBatching(pairs="on")
    seen: list[int] = []
    batching.on_pairs = lambda pairs, _tokens: seen.append(pairs)
    rows = forwards

    # the model thread is busy while the requests come in: every request is tokenised on
    # its own thread meanwhile (the first job is taken, the other two wait in the queue)
    served = _with_model_thread_held(
        lambda: asyncio.run(_served(scorer, batching)),
        lambda: _queued(batching, scorer, taken=1, waiting=2),
    )
    assert sum(seen) == sum(len(ts) for _, ts in REQUESTS)
    assert len(seen) == 2 and seen[1] == len(REQUESTS[1][1]) + len(REQUESTS[2][1]), seen
    assert max(rows) == seen[1]  # two requests' pairs in one forward pass
    for (values, flags), batch in zip(alone, served, strict=True):
        np.testing.assert_allclose(batch.values, values, rtol=1e-5, atol=1e-6)
        assert batch.flags == flags
    assert served[1].flags == {2: ["truncated:cross_encoder"]}
    assert any("1 document longer than the model" in w for w in served[1].warnings)
    assert not served[0].warnings and not served[2].warnings


def test_an_abandoned_request_s_pairs_are_never_scored(scorer, forwards):
    batching = MicroBatching(pairs="on")
    abandoned = [threading.Event() for _ in REQUESTS]
    rows = forwards

    def queued_then_abandoned():
        ready = _queued(batching, scorer, taken=1, waiting=2)
        if ready:
            abandoned[2].set()  # its client went away while it waited for the model
        return ready

    served = _with_model_thread_held(
        lambda: asyncio.run(_served(scorer, batching, abandoned)), queued_then_abandoned
    )
    assert isinstance(served[2], asyncio.CancelledError)  # (the batcher's, converted)
    assert not isinstance(served[0], BaseException) and not isinstance(served[1], BaseException)
    assert rows == [len(REQUESTS[0][1]), len(REQUESTS[1][1])]


def test_auto_batches_only_models_on_an_accelerator_and_off_batches_none(scorer, forwards):
    assert not scorer.on_accelerator
    assert not MicroBatching(pairs="auto").batches_pairs(scorer)
    assert MicroBatching(pairs="on").batches_pairs(scorer)
    assert not MicroBatching(pairs="off").batches_pairs(scorer)
    batching = MicroBatching(pairs="auto")
    served = asyncio.run(_served(scorer, batching))
    assert not batching._pair_batchers  # scored as without the service
    assert sorted(forwards) == sorted(len(ts) for _, ts in REQUESTS)
    for (query, texts), batch in zip(REQUESTS, served, strict=True):
        np.testing.assert_allclose(batch.values, scorer.score_texts(query, texts), rtol=1e-5)
    with pytest.raises(ValueError, match="pairs must be one of auto, on, off"):
        MicroBatching(pairs="sometimes")


def test_the_service_scores_pairs_the_same_with_batching_on_and_off(bert_dir, live_server):
    pipelines = {"cross": {"scorer": {"type": "cross_encoder", "model": str(bert_dir)}}}
    base = dict(pipelines=pipelines, default="cross", max_concurrency=4, timeout=60.0)
    with pytest.raises(ValueError, match="batch_pairs must be one of auto, on, off"):
        ServerSettings(**base, batch_pairs="always")
    answers = {}
    for mode in ("on", "off"):
        server = live_server(ServerSettings(**base, batch_pairs=mode))
        try:
            info = httpx.get(f"{server.url}/info", timeout=30).json()
            assert info["batching"]["pairs"] == mode

            async def burst(url=server.url):
                async with httpx.AsyncClient(timeout=60) as http:
                    calls = [
                        http.post(
                            f"{url}/v1/rerank",
                            json={"query": q, "documents": ts, "model": "cross"},
                        )
                        for q, ts in REQUESTS * 4
                    ]
                    return [r.json() for r in await asyncio.gather(*calls)]

            answers[mode] = asyncio.run(burst())
            metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
            (count,) = [
                float(line.split()[-1])
                for line in metrics.splitlines()
                if line.startswith("rerankit_pair_batch_pairs_count")
            ]
            assert (count > 0) == (mode == "on"), count
        finally:
            server.stop()
    for on, off in zip(answers["on"], answers["off"], strict=True):
        assert [r["index"] for r in on["results"]] == [r["index"] for r in off["results"]]
        np.testing.assert_allclose(
            [r["relevance_score"] for r in on["results"]],
            [r["relevance_score"] for r in off["results"]],
            rtol=1e-5,
            atol=1e-6,
        )


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_unbatched_pairs_of_an_abandoned_request_queued_for_the_model_never_run(
    scorer, forwards, mode
):
    """Where pairs are not batched (the default), the service's requests go to the model
    thread as before: a call still queued there when its request is cancelled is dropped."""
    batching = MicroBatching(pairs=mode)
    query, texts = REQUESTS[0]
    asked = threading.Event()

    async def cancelled_while_queued():
        with request_hooks(batching, threading.Event()):
            task = asyncio.ensure_future(scorer.score(query, [Document(text=t) for t in texts]))
        await asyncio.sleep(0.2)  # queued behind the held model thread
        task.cancel()
        asked.set()  # the model thread is let go now
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "ran"

    outcome = _with_model_thread_held(lambda: asyncio.run(cancelled_while_queued()), asked.is_set)
    on_model_thread(lambda: None)  # anything queued before this has had its turn
    assert outcome == "cancelled" and forwards == []
