"""The proximity signal: a query's adjacent terms next to each other in a document."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("wordfreq")

from rerankit.scorers.proximity import ProximityScorer, query_pairs
from rerankit.text import Analyzer, BackgroundFrequencies


def test_query_pairs_are_adjacent_distinct_terms_once_whatever_their_order():
    assert query_pairs(["parallel", "process", "parallel"]) == [("parallel", "process")]
    assert query_pairs(["b", "a", "c"]) == [("a", "b"), ("a", "c")]
    assert query_pairs(["one"]) == [] and query_pairs(["x", "x"]) == []


def test_scores_by_hand():
    k1, b, avgdl, qn = 0.9, 0.4, 100.0, 0.75
    scorer = ProximityScorer(k1=k1, b=b, avgdl=avgdl, query_normalized=qn)
    query = "parallel processing"
    docs = [
        "Parallel processing on matrices.",  # adjacent once
        "Processing in parallel, then parallel processing again.",  # twice, either order
        "Parallel computers do processing.",  # both terms, never adjacent
        "Serial code.",  # neither
    ]
    analyzer = Analyzer(language="en")
    terms, surfaces = analyzer.query_terms(query)
    assert terms == ["parallel", "process"]
    idf = BackgroundFrequencies("en").idf(terms, [surfaces[t] for t in terms])
    weight = float(min(idf))
    ceiling = weight * (k1 + 1)

    def expected(tf: int, length: int) -> float:
        norm = k1 * (1 - b + b * length / avgdl)
        return weight * tf * (k1 + 1) / (tf + norm) / ceiling**qn

    lengths = [len(analyzer.terms(d)) for d in docs]
    assert lengths == [3, 5, 4, 2]  # "on", "in", "then", "do" are stopwords
    got = scorer.score_texts(query, docs)
    assert list(got) == pytest.approx([expected(1, 3), expected(2, 5), 0.0, 0.0])
    assert got[1] > got[0] > 0


def test_a_one_word_query_scores_zero_and_an_empty_batch_is_empty():
    scorer = ProximityScorer()
    assert list(scorer.score_texts("vaccines", ["vaccines work", "vaccines"])) == [0.0, 0.0]
    assert scorer.score_texts("parallel processing", []).shape == (0,)


WORDS = st.sampled_from(["parallel", "processing", "matrix", "the", "of", "fast", "code"])
TEXTS = st.lists(WORDS, max_size=12).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    query=st.lists(WORDS, min_size=1, max_size=5).map(" ".join), docs=st.lists(TEXTS, max_size=6)
)
def test_a_documents_score_depends_on_the_pair_alone(query, docs):
    """Pair-wise: a document scores the same alone, in any batch, in any order (the hybrid's
    calibrated scores rely on it), and never below 0."""
    scorer = ProximityScorer(query_normalized=0.75)
    together = scorer.score_texts(query, docs)
    alone = [scorer.score_texts(query, [d])[0] for d in docs]
    backwards = scorer.score_texts(query, docs[::-1])[::-1]
    assert list(together) == pytest.approx(alone)
    assert list(backwards) == pytest.approx(alone)
    assert all(v >= 0 for v in together)


def test_bad_settings_are_refused():
    for bad in ({"k1": -1}, {"b": 2}, {"avgdl": 0}, {"query_normalized": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ProximityScorer(**bad)


def test_a_declared_pipeline_can_name_it():
    from rerankit import load

    pipeline = load({"scorer": {"type": "proximity", "avgdl": 50}})
    result = pipeline.rerank("parallel processing", ["serial code", "parallel processing"])
    assert result[0].index == 1 and result[0].score > 0


def test_its_scale_is_unit_only_when_fully_query_normalised():
    docs = [
        "heat shock proteins protect cells",
        "proteins heat shock",
        "shock heat shock heat proteins",
    ]
    normalised = ProximityScorer(query_normalized=1)
    scores = normalised.score_texts("heat shock proteins", docs)
    assert normalised.score_scale == "unit"
    assert ((scores >= 0) & (scores <= 1)).all() and scores.max() > 0
    assert ProximityScorer().score_scale == "relative"  # unbounded
    assert ProximityScorer(query_normalized=0.5).score_scale == "relative"
