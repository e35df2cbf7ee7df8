"""What the service says of input it cannot use as given, and of what it runs: documents
that share an id (each ranked, the answer warns and flags them; feedback naming such an id
is refused, as it cannot say which was clicked) and the experiments in ``GET /info``."""

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

register_reranker(
    "test-length", lambda: ScorerReranker(FunctionScorer(lambda q, d: float(len(d.text))))
)
register_reranker(
    "test-short", lambda: ScorerReranker(FunctionScorer(lambda q, d: -float(len(d.text))))
)

DOCS = [
    {"id": "a", "text": "solar power on roofs"},
    {"id": "b", "text": "wind farms"},
    {"id": "a", "text": "solar panels"},
    {"id": "c", "text": "coal"},
]
SHARED = "1 id is shared by several documents ('a': documents 0, 2)"


def _app(tmp_path, **server):
    pipelines = {"long": "test-length", "short": "test-short", "bm25": "bm25"}
    return create_app(ServerSettings(pipelines=pipelines, default="long", **server))


def _ready(client) -> None:
    """Wait while the app's pipelines warm up: a request before that is answered 503."""
    deadline = time.time() + 120
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)


def _post(client, path, **body):
    _ready(client)
    response = client.post(path, json={"model": "long", "query": "solar", **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_documents_sharing_an_id_are_each_answered_with_a_warning(tmp_path):
    with TestClient(_app(tmp_path)) as client:
        v1 = _post(client, "/v1/rerank", documents=DOCS, return_documents=True)
        assert sorted(r["index"] for r in v1["results"]) == [0, 1, 2, 3]
        assert any(w.startswith(SHARED) for w in v1["meta"]["warnings"])
        assert v1["meta"]["rerankit"]["flags"] == {"0": ["duplicate_id"], "2": ["duplicate_id"]}
        assert v1["meta"]["rerankit"]["degraded"] is False
        # each keeps its own fields (the documents answered are the ones sent)
        assert {r["index"]: r["document"] for r in v1["results"]}[2] == DOCS[2]
        explained = _post(client, "/v1/explain", documents=DOCS)
        assert any(w.startswith(SHARED) for w in explained["warnings"])
        # texts carry no ids: the same text twice is two candidates, as Cohere, TEI and
        # Infinity score them, and nothing to warn about
        v2 = _post(client, "/v2/rerank", documents=["same", "same"])
        assert "warnings" not in v2["meta"] and len(v2["results"]) == 2


def test_chunks_of_one_document_are_not_taken_for_documents_sharing_its_id(tmp_path):
    long = " ".join(f"word{i}" for i in range(1200))  # bm25 counts words: 3 chunks of 500
    with TestClient(_app(tmp_path)) as client:
        docs = [{"id": "x", "text": long}, {"id": "y", "text": "solar"}]
        body = {"model": "bm25", "documents": docs, "max_chunks_per_doc": 3}
        split = _post(client, "/v1/rerank", **body)
        assert split["meta"]["rerankit"]["flags"] == {"0": ["chunked"]}
        assert not any("shared by several" in w for w in split["meta"]["warnings"])
        docs.append({"id": "y", "text": long})  # now two documents share 'y'
        split = _post(client, "/v1/rerank", **{**body, "documents": docs})
        warned = [w for w in split["meta"]["warnings"] if "shared by several" in w]
        assert warned == [
            "1 id is shared by several documents ('y': documents 1, 2): each document is "
            "ranked as a candidate of its own; tell them apart by their index, not their id"
        ]


def test_feedback_naming_an_id_several_documents_share_is_refused(tmp_path):
    feedback = {"path": str(tmp_path / "clicks.jsonl"), "store": "id"}
    with TestClient(_app(tmp_path, feedback=feedback)) as client:
        answer = _post(client, "/v1/rerank", documents=DOCS)
        refused = client.post("/v1/feedback", json={"id": answer["id"], "clicks": ["a"]})
        assert refused.status_code == 422
        message = refused.json()["message"]
        assert message.startswith("invalid request: clicks.0: 'a' is the id of documents [0, 2]")
        assert "by its index" in message
        by_index = client.post("/v1/feedback", json={"id": answer["id"], "clicks": [2, "b"]})
        assert by_index.status_code == 200 and by_index.json()["clicks"] == [2, 1]


def test_info_says_the_experiments_it_runs(tmp_path):
    feedback = {"path": str(tmp_path / "clicks.jsonl"), "store": "hash"}
    experiments = {
        "feedback": feedback,
        "interleave": ["long", "short"],
        "interleave_share": 0.25,
        "interleave_method": "team-draft",
        "explore": 0.1,
        "explore_pairs": 0.2,
    }
    with TestClient(_app(tmp_path, **experiments)) as client:
        info = client.get("/info").json()
    assert info["experiments"] == {
        "feedback": {
            "path": feedback["path"],
            "store": "hash",
            "retention_days": None,
            "accept_unknown_ids": False,
        },
        "interleave": {"pipelines": ["long", "short"], "share": 0.25, "method": "team-draft"},
        "explore": {"share": 0.1, "pairs": 0.2},
    }
    with TestClient(_app(tmp_path)) as client:  # none: each said to be off
        info = client.get("/info").json()
    assert info["experiments"] == {"feedback": None, "interleave": None, "explore": None}
