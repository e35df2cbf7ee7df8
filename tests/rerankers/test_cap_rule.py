"""The built-in per-field cap (``cap``): at most ``limit`` documents per value of a field,
read from any kind of document (a dict's field, a Document's or a LangChain Document's
metadata), the rest moved after the others or dropped; a field that no document has is an
error, as a misspelt name would cap nothing."""

from __future__ import annotations

import pytest

import rerankit
from rerankit import Document, Pipeline
from rerankit.errors import InvalidDocumentError
from rerankit.ordering import Cap, Deduplicate
from rerankit.scorers import BM25Scorer, FieldScorer

QUERY = "vaccines"
HITS = [  # ranked by "relevance", best first: a, b, c, d, e
    {"id": "a", "text": "first", "source": "who.int", "relevance": 5},
    {"id": "b", "text": "second", "source": "who.int", "relevance": 4},
    {"id": "c", "text": "third", "source": "who.int", "relevance": 3},
    {"id": "d", "text": "fourth", "source": "cdc.gov", "relevance": 2},
    {"id": "e", "text": "fifth", "source": "sport.com", "relevance": 1},
]


def _ids(result):
    return [r.id for r in result]


def test_a_cap_moves_the_rest_after_the_others_or_drops_them():
    after = Pipeline([FieldScorer("relevance"), Cap("source", limit=1)]).rerank(QUERY, HITS)
    assert _ids(after) == ["a", "d", "e", "b", "c"]
    assert not after.dropped and not after.degraded
    top = Pipeline([FieldScorer("relevance"), Cap("source", limit=2)]).rerank(QUERY, HITS, top_k=3)
    assert _ids(top) == ["a", "b", "d"]  # the cap before the cut: c is not among the 3
    dropped = Pipeline([FieldScorer("relevance"), Cap("source", limit=1, rest="drop")])
    result = dropped.rerank(QUERY, HITS)
    assert _ids(result) == ["a", "d", "e"]
    assert result.dropped == (1, 2)  # input positions of b and c
    assert any("cap dropped 2 documents ['b', 'c']" in w for w in result.warnings)


def test_a_cap_reads_the_field_from_metadata_whatever_the_kind_of_document():
    docs = [Document(h["text"], id=h["id"], metadata={"source": h["source"]}) for h in HITS]
    ranked = rerankit.rerank(QUERY, docs, reranker=FieldScorer("relevance", missing=0.0))
    assert _ids(Cap("source", limit=1)(ranked)) == ["a", "d", "e", "b", "c"]
    nested = [{"text": h["text"], "id": h["id"], "meta": {"site": h["source"]}} for h in HITS]
    assert [d["id"] for d in Cap("meta.site", limit=1)(nested)] == ["a", "d", "e", "b", "c"]
    langchain = pytest.importorskip("langchain_core.documents")
    chunks = [
        langchain.Document(page_content=h["text"], id=h["id"], metadata=dict(h)) for h in HITS
    ]
    reranker = Pipeline([FieldScorer("relevance"), Cap("source", limit=1)])
    assert _ids(reranker.rerank(QUERY, chunks)) == ["a", "d", "e", "b", "c"]


def test_a_field_no_document_has_fails_the_call_some_lacking_it_are_not_capped():
    misspelt = Pipeline([FieldScorer("relevance"), Cap("sorce", limit=1)])
    refused = r"rule 'cap': field 'sorce' is in none of the 5"
    with pytest.raises(InvalidDocumentError, match=refused):
        misspelt.rerank(QUERY, HITS)
    some = [dict(h) for h in HITS]
    del some[1]["source"], some[2]["source"]
    result = Pipeline([FieldScorer("relevance"), Cap("source", limit=1)]).rerank(QUERY, some)
    assert _ids(result) == ["a", "b", "c", "d", "e"]
    assert any("2 of 5 documents have no 'source'" in w for w in result.warnings)


def test_a_cap_in_a_pipeline_file_and_its_mistakes():
    spec = {
        "stages": [
            {"scorer": {"type": "field", "field": "relevance"}},
            {"rule": {"type": "deduplicate"}},
            {"rule": {"type": "cap", "field": "source", "limit": 2, "rest": "drop"}},
        ]
    }
    assert _ids(rerankit.load(spec).rerank(QUERY, HITS)) == ["a", "b", "d", "e"]
    for bad, message in (
        ({"limit": 0}, "limit must be a positive integer"),
        ({"rest": "cut"}, "rest must be 'after' or 'drop'"),
        ({"field": ""}, "field must be a non-empty string"),
    ):
        with pytest.raises(ValueError, match=message):
            Cap(**{"field": "source", **bad})
    # a cap that only drops does not reorder: no warning when mmr follows it
    assert Cap("source", rest="drop").reorders is False and Cap("source").reorders is True
    assert Deduplicate().reorders is False


def test_rerankit_check_names_the_cap_and_pin_rules_as_a_file_spells_them():
    from rerankit import registry
    from rerankit.ordering import Pin

    assert registry.name_of("rule", Cap("source")) == "cap"
    assert registry.name_of("rule", Pin()) == "pin"  # was None: check printed 'rule Pin'


def test_a_cap_over_plain_texts_says_to_send_documents_with_fields():
    """Texts alone (a Cohere v2 request, a list of strings) have no field to cap by: the
    error says what to send, not to check the spelling."""
    capped = Pipeline([BM25Scorer(), Cap("source", limit=1)])
    with pytest.raises(InvalidDocumentError) as err:
        capped.rerank("solar panels", ["solar panels", "wind farms"])
    message = str(err.value)
    assert "send documents with fields" in message and "check its spelling" not in message
    assert "each with its 'source'" in message
