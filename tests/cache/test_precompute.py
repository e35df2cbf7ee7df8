"""rerankit.precompute: a corpus encoded ahead of traffic into the cache a later rerank
reads (whole documents and passages), so that rerank encodes nothing and scores as one
that encoded them itself."""

from __future__ import annotations

import json
import os

import pytest

import rerankit
from rerankit.cache import embedding_lookups
from rerankit.errors import InputError
from rerankit.rerankers import HybridReranker
from rerankit.rerankers.precompute import PrecomputeResult
from rerankit.scorers import EmbeddingScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATION

QUERY = "how do solar panels work"
#: short documents (one passage: the whole text) and long ones (several passages)
DOCS = [
    {
        "id": str(i),
        "title": f"Panel {i}",
        "text": " ".join(["solar panels convert light"] * (i % 15 + 1)),
    }
    for i in range(30)
]


def _hybrid(model, **cache) -> HybridReranker:
    """The calibrated hybrid (passages and whole documents) on ``model``."""
    return HybridReranker(EmbeddingScorer(str(model), **cache), calibration=HYBRID_CALIBRATION)


def test_a_rerank_after_precompute_encodes_nothing_and_scores_the_same(tiny_st, tmp_path):
    store = tmp_path / "embeddings.sqlite"
    done = []
    result = rerankit.precompute(
        DOCS, _hybrid(tiny_st, embedding_cache=store), batch_size=7, progress=done.append
    )
    assert done == [7, 14, 21, 28, 30]
    assert (result.documents, result.cached, result.where) == (30, 0, (str(store),))
    assert result.encoded_whole == 30 and result.encoded_passages > 0  # the long ones' passages
    assert result.encoded == result.encoded_whole + result.encoded_passages

    later = _hybrid(tiny_st, embedding_cache=store)  # a new process's pipeline, on the same file
    with embedding_lookups() as counts:
        warm = later.rerank(QUERY, DOCS)
    assert counts["misses"] == 0 and counts["store_hits"] >= result.encoded  # each read
    assert later.embedding.cache.misses == 0

    fresh = _hybrid(tiny_st).rerank(QUERY, DOCS)  # memory only: encodes them itself
    # the same vectors, to float32 rounding (a batch's makeup moves the model's last bits;
    # the near-copies here tie, so they are compared by id)
    by_id = {r.id: r.score for r in fresh}
    assert {r.id: r.score for r in warm} == pytest.approx(by_id, rel=0, abs=1e-6)

    again = rerankit.precompute(DOCS, _hybrid(tiny_st, embedding_cache=store))
    assert (again.encoded, again.cached) == (0, result.encoded)


def test_a_name_and_a_cache_file_are_built_into_one_and_the_environment_is_left(
    tiny_st, tmp_path, monkeypatch
):
    pipeline = tmp_path / "pipeline.json"
    spec = {
        "reranker": {"type": "hybrid", "model": str(tiny_st), "calibration": HYBRID_CALIBRATION}
    }
    pipeline.write_text(json.dumps(spec), encoding="utf-8")
    store = tmp_path / "named.sqlite"
    texts = [d["text"] for d in DOCS[:5]]
    result = rerankit.precompute(texts, str(pipeline), embedding_cache=store)
    assert result.where == (str(store),) and result.encoded_whole == 5
    assert "RERANKIT_EMBEDDING_CACHE" not in os.environ
    with pytest.raises(InputError, match="built with its own cache"):
        rerankit.precompute(texts, _hybrid(tiny_st), embedding_cache=store)


def test_nowhere_to_keep_the_vectors_is_refused_saying_how_to_name_a_place(tiny_st):
    with pytest.raises(
        InputError, match=r"memory only.*embedding_cache='FILE'.*RERANKIT_CACHE_URL"
    ):
        rerankit.precompute(["a document"], _hybrid(tiny_st))
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        rerankit.precompute(["a document"], "bm25", batch_size=0)


def test_a_pipeline_that_keeps_nothing_per_document_says_so():
    result = rerankit.precompute(["a document"], "bm25")
    assert result == PrecomputeResult(documents=0, kept=False)


def test_the_vectors_go_to_the_shared_redis_cache(tiny_st, redis_url):
    shared = HybridReranker(
        EmbeddingScorer(str(tiny_st), cache=rerankit.cache.EmbeddingCache(url=redis_url)),
        calibration=HYBRID_CALIBRATION,
    )
    result = rerankit.precompute(DOCS[:6], shared)
    assert result.encoded_whole == 6 and result.failed_calls == 0
    assert result.where == (f"{redis_url} (rerankit:embedding:*)",)
    later = HybridReranker(
        EmbeddingScorer(str(tiny_st), cache=rerankit.cache.EmbeddingCache(url=redis_url)),
        calibration=HYBRID_CALIBRATION,
    )
    with embedding_lookups() as counts:
        later.rerank(QUERY, DOCS[:6])
    assert counts["misses"] == 0 and counts["store_hits"] >= result.encoded
