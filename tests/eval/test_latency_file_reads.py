"""The same pipeline twice showed 37 and 11 ms a query (tune's report: the default hybrid and
the file it wrote, the same pipeline, 17.7 and 8.7 ms), on every run: with nothing to
encode, the first read its vectors from the embedding cache's file and the second found them
in memory. The note under the table now says so, which "run it again" would not fix."""

from __future__ import annotations

from eval_tiny import write_tiny

from rerankit.cache import EmbeddingCache
from rerankit.eval import evaluate
from rerankit.eval.latency import latency_note
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import EmbeddingScorer


def _row(name, hits, store_hits, misses=0):
    cache = {"hits": hits, "misses": misses, "store_hits": store_hits, "reused": store_hits}
    return {
        "pipeline": name,
        "mean_ms": 9.0,
        "p95_ms": 12.0,
        "max_ms": 13.0,
        "embedding_cache": cache,
    }


def test_a_run_reading_the_file_before_one_reading_memory_is_said():
    note = latency_note([_row("hybrid", 4478, 4266), _row("hybrid-2", 4478, 0)])
    assert note == (
        "(mean ms, p95 ms: hybrid read 4266 texts' vectors from the embedding cache's file, "
        "and its time includes that; hybrid-2 after it found them in memory, so it looks "
        "faster than it would on its own, on this run and the next: to compare speeds, run "
        "each in an evaluation of its own)"
    )
    two = latency_note([_row("a", 10, 10), _row("b", 10, 0), _row("c", 10, 0)])
    assert "; b and c after it found them in memory, so they look faster than they" in two
    # each read the file (separate caches), or a later one read it too: nothing to say
    assert latency_note([_row("a", 10, 10), _row("b", 10, 10)]) is None
    assert latency_note([_row("a", 0, 0), _row("b", 10, 0)]) is None


def test_an_evaluation_of_one_pipeline_twice_over_a_filled_cache_says_it(tmp_path, tiny_st):
    folder = write_tiny(tmp_path / "tiny")
    disk = tmp_path / "embeddings.sqlite"
    shared = ScorerReranker(EmbeddingScorer(str(tiny_st), cache=EmbeddingCache(path=disk)))
    evaluate(folder, {"fill": shared}, embedding_cache=disk)  # the file holds every vector
    fresh = ScorerReranker(EmbeddingScorer(str(tiny_st), cache=EmbeddingCache(path=disk)))
    result = evaluate(folder, {"first": fresh, "again": fresh}, embedding_cache=disk)
    by_name = {r["pipeline"]: r["embedding_cache"] for r in result.rows[1:]}
    assert by_name["first"]["misses"] == 0 and by_name["first"]["store_hits"] > 0
    assert by_name["again"]["store_hits"] == 0 and by_name["again"]["hits"] > 0
    note = result.collections[0].latency_note()
    assert "first read" in note and "again after it found them in memory" in note, note
