"""``PrecomputeResult.summary(name)``: what ``rerankit precompute`` prints of a run, from
Python (the result of ``rerankit.precompute``)."""

from __future__ import annotations

from rerankit.rerankers.precompute import NOTHING_TO_KEEP, PrecomputeResult


def test_a_run_says_what_it_read_encoded_found_and_where_it_kept_them():
    result = PrecomputeResult(
        documents=10,
        encoded_whole=8,
        encoded_passages=5,
        cached=2,
        seconds=1.26,
        where=("embeddings.sqlite", "redis://cache:6379/0"),
    )
    assert result.summary("hybrid").splitlines() == [
        "hybrid: 10 documents read",
        "  texts encoded: 13 (8 whole documents, 5 passages)",
        "  already in the cache: 2",
        "  time: 1.3 s",
        "  vectors kept in: embeddings.sqlite, redis://cache:6379/0",
    ]
    assert result.summary().startswith("pipeline: 10 documents read")


def test_documents_read_in_part_and_failed_cache_calls_are_said():
    one = PrecomputeResult(
        documents=3, longer=1, max_passages=4, passage_words=200, failed_calls=1, where=("x",)
    )
    lines = one.summary("e").splitlines()
    assert lines[5] == (
        "  1 document longer than 4 passages of 200 words: read on its first 4, as every "
        "rerank reads it (max_passages; each rerank of it warns too)"
    )
    assert lines[6] == (
        "  1 call to the cache failed: those vectors were not kept (the warning above says "
        "why); run it again once the cache is reachable"
    )
    two = PrecomputeResult(documents=3, longer=2, max_passages=4, passage_words=200)
    assert "2 documents longer than 4 passages" in two.summary("e")
    assert "read on their first 4, as every rerank reads them" in two.summary("e")


def test_a_pipeline_that_keeps_nothing_says_so():
    nothing = PrecomputeResult(documents=0, kept=False)
    assert nothing.summary("bm25") == NOTHING_TO_KEEP.format(name="bm25")
    assert nothing.summary("bm25").startswith("bm25: nothing to precompute: it keeps no work")
