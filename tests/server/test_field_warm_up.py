"""A pipeline that reads a document field is served although the warm-up batch (two texts,
no fields) lacks it: the warm-up's refusal is logged, the pipeline is ready, a request with
the field is answered and one without it gets the error `rank` gives."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

import rerankit
from rerankit.errors import InvalidDocumentError
from rerankit.server import ServerSettings, create_app

SETTINGS = """
[server]
default = "boosted"

[pipelines.boosted]
scorer = { type = "field", field = "boost" }
"""
WITH = [{"text": "solar panels", "boost": 1.0}, {"text": "wind at sea", "boost": 3.0}]
WITHOUT = [{"text": "solar panels", "boost": 1.0}, {"text": "wind at sea"}]


def test_a_field_pipeline_is_ready_and_requests_decide(tmp_path, wait_ready, caplog):
    path = tmp_path / "service.toml"
    path.write_text(SETTINGS)
    settings = ServerSettings.from_file(path)
    with (
        caplog.at_level(logging.WARNING, logger="rerankit.server"),
        TestClient(create_app(settings)) as client,
    ):
        wait_ready(client)  # /ready 200, not a pipeline failed for ever
        assert client.get("/ready?model=boosted").status_code == 200
        ok = client.post("/v1/rerank", json={"query": "energy", "documents": WITH})
        assert ok.status_code == 200, ok.text
        assert [r["index"] for r in ok.json()["results"]] == [1, 0]
        refused = client.post("/v1/rerank", json={"query": "energy", "documents": WITHOUT})
    with pytest.raises(InvalidDocumentError) as rank:
        rerankit.load({"scorer": {"type": "field", "field": "boost"}}).rerank("energy", WITHOUT)
    assert refused.status_code == 400  # the caller's documents, as any invalid one
    assert str(rank.value) in refused.json()["message"]
    [record] = [r for r in caplog.records if "warm-up documents carry only" in r.getMessage()]
    assert record.levelno == logging.WARNING and "'boosted'" in record.getMessage()
    assert "missing numeric field 'boost'" in record.getMessage()
