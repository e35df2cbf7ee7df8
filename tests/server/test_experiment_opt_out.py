"""A request sent with ``x-rerankit-experiment: off`` (a parity check, a probe) is kept out
of the experiments and the click log: a reader's five parity requests were interleaved
and logged as sessions, and counted in the interleaving report."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import FunctionScorer
from rerankit.server import ServerSettings, create_app
from rerankit.training.clicks import read_log

DOCS = [f"document number {i}" for i in range(6)]
BODY = {"model": "up", "query": "which number", "documents": DOCS}
OFF = {"x-rerankit-experiment": "off"}


def _number(q, d):
    return float(d.text[-1]) if d.text[-1].isdigit() else 0.0


register_reranker("test-optout-up", lambda: ScorerReranker(FunctionScorer(_number)))
register_reranker(
    "test-optout-down", lambda: ScorerReranker(FunctionScorer(lambda q, d: -_number(q, d)))
)


def _client(tmp_path, **experiment):
    settings = ServerSettings(
        pipelines={"up": "test-optout-up", "down": "test-optout-down"},
        default="up",
        feedback={"path": str(tmp_path / "clicks.jsonl"), "store": "hash"},
        **experiment,
    )
    return TestClient(create_app(settings))


def _ready(client):
    deadline = time.time() + 60
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)


@pytest.mark.parametrize(
    "experiment",
    [{"interleave": ["up", "down"], "interleave_share": 1.0}, {"explore": 1.0}],
    ids=["interleave", "explore"],
)
def test_a_request_sent_with_the_experiment_off_is_plain_and_not_logged(tmp_path, experiment):
    with _client(tmp_path, **experiment) as client:
        _ready(client)
        probes = [client.post("/v2/rerank", json=BODY, headers=OFF) for _ in range(4)]
        drawn = client.post("/v2/rerank", json=BODY)
        if "interleave" in experiment:  # the draw, without the header
            assert drawn.json()["meta"]["rerankit"]["order"] == "interleaved"
        for probe in probes:
            assert probe.status_code == 200, probe.text
            assert "order" not in probe.json()["meta"].get("rerankit", {})
            assert [r["index"] for r in probe.json()["results"]] == [5, 4, 3, 2, 1, 0]
        said = client.post("/v1/feedback", json={"id": probes[0].json()["id"], "clicks": [0]})
        assert said.status_code == 404, said.text  # no impression: an unknown id
        assert client.post(
            "/v1/feedback", json={"id": drawn.json()["id"], "clicks": [0]}
        ).is_success
        on = client.post("/v2/rerank", json=BODY, headers={"x-rerankit-experiment": "On"})
        assert on.status_code == 200
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    assert sorted(s.impression.id for s in sessions) == sorted(
        [drawn.json()["id"], on.json()["id"]]
    )


def test_a_value_the_header_does_not_take_is_refused_naming_it(tmp_path):
    with _client(tmp_path, interleave=["up", "down"], interleave_share=1.0) as client:
        _ready(client)
        answer = client.post("/v2/rerank", json=BODY, headers={"x-rerankit-experiment": "no"})
    assert answer.status_code == 400
    message = answer.json()["message"]
    assert "x-rerankit-experiment: 'no' is not a value it takes: off" in message
