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
