"""A reranker object passed to ``evaluate`` (built before the call, with the default
embedding cache) reads and writes the evaluation's embedding cache on disk, as a name or a
file loaded by ``evaluate`` does: a second evaluation with a fresh object reads every
document's vector from the disk cache instead of encoding it again, and afterwards the
object's cache is memory only again, as it was given."""

from __future__ import annotations

from eval_tiny import write_tiny

from rerankit.cache import EMBEDDING_CACHE_ENV, embedding_lookups
from rerankit.eval import evaluate
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import EmbeddingScorer


def _object(model):
    """A reranker of the caller's, built outside ``evaluate`` with the default cache."""
    return ScorerReranker(EmbeddingScorer(str(model)))


def test_an_object_reads_the_disk_cache_a_file_would(tmp_path, tiny_st, monkeypatch):
    monkeypatch.delenv(EMBEDDING_CACHE_ENV, raising=False)
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    folder = write_tiny(tmp_path / "tiny")
    disk = tmp_path / "embeddings.sqlite"
    first = _object(tiny_st)
    (scorer,) = first.scorers()
    assert scorer.default_cache and scorer.cache.store is None  # memory only as built
    with embedding_lookups() as cold:
        evaluate(folder, {"mine": first}, embedding_cache=disk)
    assert cold["misses"] > 0 and cold["store_hits"] == 0
    assert scorer.cache.store is None  # lent for the call only
    with embedding_lookups() as warm:  # a fresh object: nothing in its memory
        evaluate(folder, {"mine": _object(tiny_st)}, embedding_cache=disk)
    assert warm["misses"] == 0 and warm["store_hits"] == cold["misses"]
    with embedding_lookups() as unlent:  # embedding_cache=False: memory only, as asked
        evaluate(folder, {"mine": _object(tiny_st)}, embedding_cache=False)
    assert unlent["store_hits"] == 0 and unlent["misses"] == cold["misses"]


def test_a_scorer_with_a_cache_of_its_own_keeps_it(tmp_path, tiny_st, monkeypatch):
    monkeypatch.delenv(EMBEDDING_CACHE_ENV, raising=False)
    folder = write_tiny(tmp_path / "tiny")
    own = EmbeddingScorer(str(tiny_st), embedding_cache=tmp_path / "own.sqlite")
    assert not own.default_cache
    store = own.cache.store
    evaluate(folder, {"mine": ScorerReranker(own)}, embedding_cache=tmp_path / "e.sqlite")
    assert own.cache.store is store and not (tmp_path / "e.sqlite").exists()
