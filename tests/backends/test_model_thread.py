"""Local models run on the one model thread (see ``rerankit._threads``): every forward pass
of a cross-encoder, a causal LM or an embedding model, called directly or through
``rerank`` (from any thread, synchronous or not) or the service's micro-batching, runs
there, and the scores agree."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("torch", reason="local models need the 'torch' extra")

from rerankit._threads import (
    ABANDONED,
    in_loading_thread,
    in_thread,
    on_model_thread,
    work_scope,
)
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import CausalLMScorer, CrossEncoderScorer, EmbeddingScorer
from rerankit.scorers.embedding import ENCODE_HOOK
from rerankit.server.batching import MicroBatching

QUERY = "what do vaccines train"
DOCS = [
    "vaccines train the immune system against pathogens",
    "pasta sauce with tomatoes",
    "the immune system makes antibodies",
]


def _forwards(module) -> list[str]:
    """The name of the thread of each forward pass of ``module`` from now on."""
    names: list[str] = []
    module.register_forward_pre_hook(lambda *_: names.append(threading.current_thread().name))
    return names


def _rerank_from_everywhere(scorer) -> list[np.ndarray]:
    """Scores of DOCS by ``rerank`` from this thread, from another, and by ``arerank``."""
    reranker = ScorerReranker(scorer)
    results = [reranker.rerank(QUERY, DOCS)]
    helper = threading.Thread(target=lambda: results.append(reranker.rerank(QUERY, DOCS)))
    helper.start()
    helper.join(60)
    results.append(asyncio.run(reranker.arerank(QUERY, DOCS)))
    return [np.array([r.score for r in sorted(res, key=lambda r: r.index)]) for res in results]


@pytest.mark.parametrize("kind", ["cross-encoder", "causal-lm"])
def test_model_scorers_reached_through_rerank_run_on_the_model_thread(kind, bert_dir, qwen_dir):
    if kind == "cross-encoder":
        scorer = CrossEncoderScorer(str(bert_dir), device="cpu")
    else:
        scorer = CausalLMScorer(str(qwen_dir), device="cpu", batch_size=2)
    names = _forwards(scorer.model.model)  # (loaded on the model thread)
    direct = scorer.score_texts(QUERY, DOCS)  # a direct call from this thread runs there too
    assert names and all(n.startswith("rerankit-model") for n in names), set(names)
    for scores in _rerank_from_everywhere(scorer):
        np.testing.assert_allclose(scores, direct, rtol=1e-5, atol=1e-6)
    assert names and all(n.startswith("rerankit-model") for n in names), set(names)


def test_embedding_work_runs_on_the_model_thread_with_and_without_micro_batching(tiny_st):
    scorer = EmbeddingScorer(str(tiny_st), device="cpu", cache=False)
    names = _forwards(scorer.model[0])
    direct = scorer.score_texts(QUERY, DOCS)
    for scores in _rerank_from_everywhere(scorer):
        np.testing.assert_allclose(scores, direct, rtol=1e-5, atol=1e-6)
    plain = len(names)
    assert plain and all(n.startswith("rerankit-model") for n in names), set(names)

    batching = MicroBatching(max_wait_ms=50)

    async def served():  # as the service runs requests: the hook set, three at once
        ENCODE_HOOK.set(batching)
        return await asyncio.gather(*(scorer.score(QUERY, scorer_docs) for _ in range(3)))

    from rerankit.types import Document

    scorer_docs = [Document(text=t) for t in DOCS]
    batches = asyncio.run(served())
    for batch in batches:
        np.testing.assert_allclose(batch.values, direct, rtol=1e-5, atol=1e-6)
    assert len(names) > plain and all(n.startswith("rerankit-model") for n in names)


def test_embedding_asked_for_on_the_model_thread_with_the_hook_set_does_not_wait_for_itself(
    tiny_st,
):
    """The micro-batcher encodes on the model thread, so an embedding call made there with
    the service's hook set must encode at once instead of queueing behind itself."""
    scorer = EmbeddingScorer(str(tiny_st), device="cpu", cache=False)
    direct = scorer.score_texts(QUERY, DOCS)
    out: list[np.ndarray] = []

    def there():
        ENCODE_HOOK.set(MicroBatching(max_wait_ms=50))
        out.append(on_model_thread(scorer.score_texts, QUERY, DOCS))

    worker = threading.Thread(target=there, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the embedding call waited for its own thread"
    np.testing.assert_allclose(out[0], direct, rtol=1e-5, atol=1e-6)


def test_the_service_loads_a_model_on_a_thread_of_its_own_that_ends_with_the_load(bert_dir):
    """A model first used on a loading thread loads there, not on the model thread (a load
    that hangs must not hold it), and the thread is gone once the load is done; the model
    then runs on the model thread as any other."""
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu")
    on_model_thread(lambda: None)  # the model thread exists (and is free)
    loaded_on: list[str] = []
    lazy = scorer._model  # where the loader runs: noted by a wrapper around it
    loader = lazy._load
    lazy._load = lambda: (loaded_on.append(threading.current_thread().name), loader())[1]

    async def attempt() -> None:
        await in_loading_thread("rerankit-load-test", lambda: scorer.model)

    asyncio.run(attempt())
    assert loaded_on == ["rerankit-load-test"] and scorer.loaded
    time.sleep(0.1)
    assert not [t for t in threading.enumerate() if t.name == "rerankit-load-test"]
    names = _forwards(scorer.model.model)
    scorer.score_texts(QUERY, DOCS)
    assert names and all(n.startswith("rerankit-model") for n in names), set(names)


def test_work_abandoned_before_it_starts_never_starts():
    """A request's blocking calls run on its scope's executor; once the request is
    abandoned, a call still queued there, or queued for the model thread, never runs."""
    ran: list[str] = []
    abandoned = threading.Event()
    gate = threading.Event()
    pool = ThreadPoolExecutor(1, thread_name_prefix="pipeline")

    async def request() -> tuple[str, list]:
        with work_scope(executor=pool, abandoned=abandoned):
            where = await in_thread(lambda: threading.current_thread().name)
            busy = asyncio.ensure_future(in_thread(gate.wait, 10))  # holds the one thread
            queued = asyncio.ensure_future(in_thread(ran.append, "queued"))
            await asyncio.sleep(0.05)
        abandoned.set()  # the request was answered: nothing of it may start now
        gate.set()
        outcomes = await asyncio.gather(busy, queued, return_exceptions=True)
        return where, outcomes

    where, (busy, queued) = asyncio.run(request())
    assert where.startswith("pipeline") and busy is True  # the running call ended as it does
    assert isinstance(queued, asyncio.CancelledError) and ran == []

    held, release = threading.Event(), threading.Event()
    hold = lambda: (held.set(), release.wait(10))  # noqa: E731
    holder = threading.Thread(target=lambda: on_model_thread(hold))
    holder.start()
    held.wait(10)
    outcome: list = []

    def asker() -> None:  # a pipeline thread asking the model thread for its request
        ABANDONED.set(abandoned)
        try:
            outcome.append(on_model_thread(ran.append, "model"))
        except CancelledError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=asker)
    thread.start()
    time.sleep(0.05)  # queued behind the held model thread
    release.set()
    thread.join(10)
    holder.join(10)
    assert isinstance(outcome[0], CancelledError) and ran == []
    pool.shutdown()


def test_a_loading_thread_leaves_no_thread_behind(bert_dir, tmp_path):
    """Loads on loading threads do not add to the process's threads: once each loading
    thread has ended, the process has as many as before, the OpenMP team a load's parallel
    kernels started included (a large model's load runs some; here a product of two
    512 x 512 matrices stands for them), and scoring on the model thread adds none."""
    import os
    import shutil

    import torch

    task_dir = "/proc/self/task"
    if not os.path.isdir(task_dir):
        pytest.skip("counts the process's threads in /proc")
    first = CrossEncoderScorer(str(bert_dir), device="cpu")
    first.score_texts(QUERY, DOCS)  # the model thread has its team already
    before = len(os.listdir(task_dir))
    grew: list[int] = []

    def load(scorer) -> None:
        scorer.model  # noqa: B018 - loads it here
        torch.randn(512, 512) @ torch.randn(512, 512)  # parallel kernels, as a load runs
        grew.append(len(os.listdir(task_dir)) - before)

    for i in range(3):  # three loads, as three pipelines or three attempts would make
        copy = shutil.copytree(bert_dir, tmp_path / f"copy{i}")  # a model of its own
        scorer = CrossEncoderScorer(str(copy), device="cpu")

        async def attempt(scorer=scorer, name=f"rerankit-load-{i}") -> None:
            await in_loading_thread(name, load, scorer)

        asyncio.run(attempt())
        scorer.score_texts(QUERY, DOCS)
    assert max(grew) >= 1  # while it loaded, the loading thread (and its team) existed
    deadline = time.monotonic() + 10
    while len(os.listdir(task_dir)) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir(task_dir)) <= before
