"""The service answers UTF-8 JSON, texts readable as sent (Cohere, TEI and Jina do the
same); an answer holding what UTF-8 cannot encode (a lone surrogate from a ``\\ud800``
escape) falls back to escaped non-ASCII, so every answer still encodes. The 404's
``[server.aliases]`` line shows a non-ASCII name as the caller sent it."""

from __future__ import annotations

import json

import pytest
import tomllib

pytest.importorskip("fastapi", reason="needs the 'server' extra")


TEXT = "返品は30日以内に無料です。"


@pytest.fixture(scope="module")
def client(bm25_client):
    return bm25_client


def test_documents_come_back_as_utf8_not_escapes(client):
    body = {"query": "返品", "documents": [TEXT, "営業時間"], "return_documents": True}
    r = client.post("/v1/rerank", json=body)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert TEXT.encode("utf-8") in r.content and b"\\u" not in r.content
    assert r.json()["results"][0]["document"]["text"] == TEXT
    tei = client.post("/rerank", json={"query": "返品", "texts": [TEXT], "return_text": True})
    assert tei.status_code == 200 and TEXT.encode("utf-8") in tei.content


def test_a_lone_surrogate_falls_back_to_escapes_for_that_answer(client):
    raw = '{"query": "返品", "documents": ["a\\ud800b 返品", "x"], "return_documents": true}'
    r = client.post("/v1/rerank", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 200
    r.content.decode("ascii")  # escaped throughout: it encodes
    assert b"\\ud800" in r.content and b"\\u8fd4\\u54c1" in r.content
    texts = [x["document"]["text"] for x in json.loads(r.content)["results"]]
    assert "a\ud800b 返品" in texts


def test_error_messages_quote_the_input_readably(client):
    r = client.post("/v1/rerank", json={"query": "q", "documents": [{"本文": "x"}]})
    assert r.status_code == 422 and "'本文'".encode() in r.content


def test_the_404_aliases_line_shows_the_name_as_sent(client):
    name = "rerank-多言語-v3"
    r = client.post("/v2/rerank", json={"model": name, "query": "q", "documents": ["a"]})
    assert r.status_code == 404
    said = r.json()["message"]
    line = f'"{name}" = "bm25"'
    assert f"add {line} to [server.aliases]" in said
    assert tomllib.loads(line) == {name: "bm25"}  # the line pastes into the settings file
