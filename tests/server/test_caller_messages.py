"""Errors a client developer (who cannot change the service's settings) can act on: a
``/rerank`` body with neither ``texts`` nor ``documents`` names both, a Jina ``image``
document says images are not supported, and too many documents says to split them."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app


@pytest.fixture(scope="module")
def client():
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", max_documents=2)
    with TestClient(create_app(settings)) as c:
        yield c


def _said(client, path, body, status):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    return r.json()["message"]


def test_neither_texts_nor_documents_names_both(client):
    said = _said(client, "/rerank", {"query": "q", "docs": ["a"]}, 422)
    assert "`texts` (Text Embeddings Inference's request) or `documents` (Infinity's)" in said
    assert said.startswith("invalid request: texts: Field required")


def test_an_image_document_says_images_are_not_supported(client):
    body = {"query": "q", "documents": [{"image": "https://example.com/a.png"}]}
    said = _said(client, "/v1/rerank", body, 422)
    assert "image documents are not supported: the pipelines read text only" in said


@pytest.mark.parametrize(("path", "field"), [("/v2/rerank", "documents"), ("/rerank", "texts")])
def test_too_many_documents_says_to_split_them(client, path, field):
    said = _said(client, path, {"query": "q", field: ["a", "b", "c"]}, 400)
    assert said.startswith("3 documents; the limit is 2 per request: split them into ")
    assert "batches of at most 2 (max_documents in the service's settings" in said


def test_rerankits_python_names_in_a_cohere_request_name_cohere_s_field(client):
    """`"top_k": 1` to /v2/rerank (rerankit's Python name for top_n) answered every document,
    and `"text_field": "body"` to /v1/rerank ranked on `text`, both silently; Cohere's API
    refuses fields it does not know with a 422 (`unknown field: parameter 'top_k' is not a
    valid field`), so these are refused too, naming the field to send."""
    docs = ["solar panels", "wind at sea"]
    said = _said(client, "/v2/rerank", {"query": "solar", "documents": docs, "top_k": 1}, 422)
    assert said == (
        "invalid request: top_k: top_k is rerankit's Python name; Cohere's rerank request "
        'says top_n: send "top_n": 1 (Cohere\'s API refuses fields it does not know)'
    )
    objects = [{"text": "wind at sea", "body": "solar panels"}, {"text": "solar", "body": "x"}]
    body = {"query": "solar", "documents": objects, "text_field": "body"}
    said = _said(client, "/v1/rerank", body, 422)
    assert said.startswith("invalid request: text_field: text_field is rerankit's Python name")
    assert 'says rank_fields: send "rank_fields": ["body"]' in said
    body = {"query": "solar", "documents": objects, "text_fields": ["text", "body"]}
    said = _said(client, "/v1/rerank", body, 422)
    assert 'send "rank_fields": ["text", "body"]' in said
    # null is as absent (a client that sends every field), and other unknown fields are
    # still ignored, as before
    for path, body in (
        ("/v2/rerank", {"query": "solar", "documents": docs, "top_k": None, "topn": 1}),
        ("/v1/rerank", {"query": "solar", "documents": objects, "text_field": None}),
    ):
        r = client.post(path, json=body)
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]) == 2
