"""The scorers that read a field of the documents (FieldScorer, RecencyScorer,
PopularityScorer) say in the result's warnings when documents lack it, alike; and
RecencyScorer refuses options it cannot use when it is built, not when it scores."""

from __future__ import annotations

import datetime as dt

import pytest

from rerankit import load
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import FieldScorer, PopularityScorer, RecencyScorer


def _fusion(*scorers: dict) -> dict:
    return {"stages": [{"name": "fuse", "scorers": list(scorers)}]}


NOW = dt.datetime(2025, 7, 1, tzinfo=dt.timezone.utc)


def test_recency_says_when_its_field_is_missing_from_every_document():
    docs = [{"text": "a", "date": "2025-06-01"}, {"text": "b", "date": "2024-07-01"}]
    result = ScorerReranker(RecencyScorer("published", now=NOW)).rerank("q", docs)
    assert result.warnings == (
        "scorer 'recency': field 'published' is missing from every document; they score "
        "missing=0.0 (give each document a 'published' field)",
    )
    assert all(d.flags == ("missing:published",) for d in result) and not result.degraded


def test_recency_says_how_many_lack_its_field_in_a_pipeline_file_too():
    docs = [{"text": "solar", "date": "2025-06-01"}, {"text": "solar wind"}, {"text": "x"}]
    spec = _fusion(
        {"type": "bm25", "weight": 0.5},
        {"type": "recency", "field": "date", "now": "2025-07-01", "weight": 0.5},
    )
    result = load(spec).rerank("solar", docs)
    assert [w for w in result.warnings if "recency" in w] == [
        "scorer 'recency': field 'date' is missing from 2 of 3 documents; they score "
        "missing=0.0 (give each document a 'date' field)"
    ]
    every = ScorerReranker(RecencyScorer("date", now=NOW)).rerank("q", docs[:1])
    assert every.warnings == ()


def test_field_and_recency_scorers_warn_alike():
    docs = [{"text": "a", "n": 1.0}, {"text": "b"}]
    field = ScorerReranker(FieldScorer("n", name="f", missing=0.0)).rerank("q", docs)
    recency = ScorerReranker(RecencyScorer("n", name="f", now=NOW)).rerank("q", docs)
    popularity = ScorerReranker(PopularityScorer("n", name="f")).rerank("q", docs)
    assert field.warnings == recency.warnings == popularity.warnings
    assert field.warnings == (
        "scorer 'f': field 'n' is missing from 1 of 2 documents; they "
        "score missing=0.0 (give each document a 'n' field)",
    )


def test_recency_checks_its_options_when_built():
    with pytest.raises(TypeError, match="half_life_days must be a number of days"):
        RecencyScorer(half_life_days="a year")
    with pytest.raises(TypeError, match="half_life_days"):
        RecencyScorer(half_life_days=True)
    with pytest.raises(ValueError, match="now must be a datetime, an ISO-8601 string"):
        RecencyScorer(now="yesterday")
    assert RecencyScorer(now="2025-07-01", half_life_days=7).half_life_days == 7
