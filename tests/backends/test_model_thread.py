"""Local models run on the one model thread (see ``rerankit._threads``): every forward pass
of a cross-encoder, a causal LM or an embedding model, called directly or through
``rerank`` (from any thread, synchronous or not) or the service's micro-batching, runs
there, and the scores agree."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

pytest.importorskip("torch", reason="local models need the 'torch' extra")

from rerankit._threads import on_model_thread
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
