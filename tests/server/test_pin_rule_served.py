"""A pipeline file's ``pin`` rule pins for the query of each request the service answers."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app

DOCS = [
    {"id": "a", "text": "solar panels on the roof"},
    {"id": "b", "text": "wind farms at sea"},
    {"id": "c", "text": "solar panels, solar power"},
]


def test_the_service_pins_for_the_request_s_query(tmp_path, wait_ready):
    path = tmp_path / "pinned.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n[[stages]]\n'
        'rule = { type = "pin", pin = { "solar panels" = ["b"] } }\n'
    )
    settings = ServerSettings(pipelines={"pinned": str(path)}, default="pinned")
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        answer = client.post("/v1/explain", json={"query": "Solar panels", "documents": DOCS})
        assert answer.status_code == 200, answer.text
        assert [r["id"] for r in answer.json()["results"]] == ["b", "c", "a"]
        answer = client.post("/v1/explain", json={"query": "roof", "documents": DOCS})
        assert answer.json()["results"][0]["id"] == "a"  # another query: bm25's order


def test_explain_names_the_pin_for_the_pinned_document_and_its_relevance_score_is_its_stretch_s(
    tmp_path, wait_ready
):
    path = tmp_path / "pinned.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n[[stages]]\n'
        'rule = { type = "pin", pin = { "solar panels" = ["b"] } }\n'
    )
    settings = ServerSettings(pipelines={"pinned": str(path)}, default="pinned")
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        answer = client.post("/v1/explain", json={"query": "solar panels", "documents": DOCS})
    results = answer.json()["results"]
    assert [(r["id"], r["ranked_by"]) for r in results] == [
        ("b", "pin"), ("c", "bm25"), ("a", "bm25"),
    ]  # fmt: skip
    assert results[0]["score"] < results[1]["score"]  # its own score, below the next one's
    assert results[0]["relevance_score"] == 1.0  # relative: the top of its stretch
