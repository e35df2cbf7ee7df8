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
    # null is as absent (a client that sends every field)
    for path, body in (
        ("/v2/rerank", {"query": "solar", "documents": docs, "top_k": None}),
        ("/v1/rerank", {"query": "solar", "documents": objects, "text_field": None}),
    ):
        r = client.post(path, json=body)
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]) == 2


def test_a_field_cohere_s_request_does_not_have_is_refused_as_cohere_refuses_it(client):
    """`"topn": 1` (a misspelt top_n) was ignored, every document answered, while `top_k`
    was refused: Cohere's API refuses every field it does not know with a 422, and so do
    its two shapes here, naming the fields and the one most likely meant."""
    docs = ["solar panels", "wind at sea"]
    said = _said(client, "/v2/rerank", {"query": "solar", "documents": docs, "topn": 1}, 422)
    assert said == (
        "invalid request: topn: is not a field of this request (its fields: model, query, "
        "documents, top_n, max_tokens_per_doc, return_documents, priority); did you mean "
        "'top_n'?"
    )
    body = {"query": "solar", "documents": docs, "return_document": False}
    said = _said(client, "/v1/rerank", body, 422)
    assert said.startswith("invalid request: return_document: is not a field of this request")
    assert said.endswith("did you mean 'return_documents'?")
    # the fields Cohere's SDK sends are taken: priority (no effect here), spans disabled
    for extra in ({"priority": 1}, {"relevant_spans": {"mode": "disabled"}}):
        r = client.post("/v2/rerank", json={"query": "solar", "documents": docs, **extra})
        assert r.status_code == 200, r.text
    enabled = {"query": "solar", "documents": docs, "relevant_spans": {"mode": "enabled"}}
    said = _said(client, "/v2/rerank", enabled, 422)
    assert said.startswith("invalid request: relevant_spans: the service answers no relevant")
