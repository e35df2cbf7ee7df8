"""One of several ``rank_fields`` that no document of the request has is ignored, as
Cohere's API reads only the keys a document has, and said in ``meta.warnings`` and the
``x-rerankit-warnings`` header (a misspelt ``bodyx`` no longer passes unsaid); a field some
documents lack is normal and not warned of."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")


DOCS = [
    {"title": "Solar panels", "body": "Rooftop panels power homes.", "author": "Ann"},
    {"title": "Wind farms", "body": "Turbines at sea."},
]


@pytest.fixture(scope="module")
def client(bm25_client):
    return bm25_client


def _rerank(client, fields, path="/v1/rerank"):
    body = {"query": "solar power", "documents": DOCS, "rank_fields": fields}
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r


def test_a_rank_field_no_document_has_is_warned_of(client):
    r = _rerank(client, ["title", "本文x"])
    said = r.json()["meta"]["warnings"]
    assert said == [
        "rank field '本文x' is in no document of the request, so it was ignored "
        "(fields present: 'author', 'body', 'title')"
    ]
    assert "no document of the request" in r.headers["x-rerankit-warnings"]
    assert r.json()["results"][0]["index"] == 0  # ranked on the field it has


def test_a_field_only_some_documents_have_is_not_warned_of(client):
    r = _rerank(client, ["title", "author", "body"])
    assert "warnings" not in r.json()["meta"]


def test_explain_says_it_too(client):
    r = _rerank(client, ["title", "bodyx"], "/v1/explain")
    assert any("'bodyx' is in no document" in w for w in r.json()["warnings"])
