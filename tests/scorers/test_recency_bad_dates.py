"""A date that is no time fails the whole call (one malformed date in a feed took down the
search request) unless ``on_bad_date = "missing"`` scores it as missing, flagged and named
in a warning; an empty string counts as missing, as None does (it was an error)."""

from __future__ import annotations

import pytest

import rerankit
from rerankit.errors import ConfigError, InvalidDocumentError
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import RecencyScorer

NOW = "2025-12-31"
DOCS = [
    {"id": "a", "text": "x", "published": "2025-12-01"},
    {"id": "b", "text": "x", "published": "2023/13/45"},
    {"id": "c", "text": "x", "published": ""},
    {"id": "d", "text": "x", "published": "   "},
    {"id": "e", "text": "x", "published": None},
    {"id": "f", "text": "x", "published": [2023]},
]


def test_an_empty_date_counts_as_missing_as_none_does():
    result = ScorerReranker(RecencyScorer("published", now=NOW)).rerank("q", DOCS[2:5] + DOCS[:1])
    assert result[0].id == "a"
    assert {r.id: r.flags for r in result}["c"] == ("missing:published",)
    assert "'published' is missing from 3 of 4 documents" in result.warnings[0]


def test_a_bad_date_fails_the_call_by_default_naming_the_document():
    with pytest.raises(InvalidDocumentError, match=r"document 1: field 'published' is not a time"):
        ScorerReranker(RecencyScorer("published", now=NOW)).rerank("q", DOCS)


def test_on_bad_date_missing_scores_it_missing_flagged_and_named():
    scorer = RecencyScorer("published", now=NOW, missing=0.0, on_bad_date="missing")
    result = ScorerReranker(scorer).rerank("q", DOCS)
    assert result[0].id == "a" and not result.degraded
    flags = {r.id: r.flags for r in result}
    assert flags["b"] == ("bad_date:published",) and flags["f"] == ("bad_date:published",)
    assert flags["c"] == flags["e"] == ("missing:published",)
    [bad] = [w for w in result.warnings if "is not a time" in w]
    assert bad == (
        "scorer 'recency': field 'published' is not a time in 2 of 6 documents (document 1: "
        "'2023/13/45', document 5: [2023]); they score missing=0.0 (on_bad_date='missing')"
    )


def test_a_pipeline_file_takes_on_bad_date_and_refuses_another_value():
    spec = {"scorer": {"type": "recency", "field": "published", "on_bad_date": "missing"}}
    assert rerankit.load(spec).rerank("q", DOCS)[0].id == "a"
    with pytest.raises(ConfigError, match=r"on_bad_date must be 'error' .* or 'missing'"):
        rerankit.load({"scorer": {"type": "recency", "on_bad_date": "skip"}})
