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
