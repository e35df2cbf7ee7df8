"""Voyage AI's rerank request (``POST /v1/rerank`` with ``top_k``, ``truncation`` or a
Voyage model name) gets Voyage's answer (``object: "list"``, ``data`` best first, ``model``,
``usage.total_tokens``), with ``top_k`` honoured; Cohere's and Jina's requests on the same
path keep Cohere's answer. A ``top_n`` in Voyage's request is refused, not ignored."""

from __future__ import annotations

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit.server import ServerSettings  # noqa: E402

DOCS = ["solar panels on roofs", "wind at sea", "solar power plants and solar cells", "bread"]
QUERY = "solar power"


@pytest.fixture(scope="module")
def live(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25"}, default="bm25", aliases={"rerank-2.5": "bm25"}
    )
    server = live_server(settings)
    yield server
    server.stop()


def _post(live, body):
    return httpx.post(f"{live.url}/v1/rerank", json=body)


def _cohere(live):
    r = _post(live, {"model": "bm25", "query": QUERY, "documents": DOCS})
    return [(x["index"], x["relevance_score"]) for x in r.json()["results"]]


def test_voyages_top_k_is_honoured_in_voyages_answer(live):
    body = {"model": "bm25", "query": QUERY, "documents": DOCS, "top_k": 2}
    r = _post(live, {**body, "return_documents": True, "truncation": True})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["object"] == "list" and out["model"] == "bm25"
    assert out["usage"]["total_tokens"] > 0
    want = _cohere(live)[:2]
    assert [(x["index"], x["relevance_score"]) for x in out["data"]] == want
    assert [x["document"] for x in out["data"]] == [DOCS[i] for i, _ in want]
    # documents come back only when asked, as Voyage's API returns them
    assert all(set(x) == {"index", "relevance_score"} for x in _post(live, body).json()["data"])


def test_a_voyage_model_name_alone_is_voyages_request(live):
    r = _post(live, {"model": "rerank-2.5", "query": QUERY, "documents": DOCS})
    assert r.status_code == 200, r.text
    assert [(x["index"], x["relevance_score"]) for x in r.json()["data"]] == _cohere(live)
    assert r.json()["model"] == "rerank-2.5"  # the name sent, as Voyage echoes it
    no_name = _post(live, {"query": QUERY, "documents": DOCS, "top_k": 1}).json()
    assert no_name["model"] == "bm25"  # none sent: the default pipeline's
    # an unknown Voyage name is a 404, as any unknown name
    assert _post(live, {"model": "rerank-2", "query": QUERY, "documents": DOCS}).status_code == 404


def test_top_n_with_voyages_fields_is_refused_and_cohere_keeps_its_shape(live):
    body = {"model": "bm25", "query": QUERY, "documents": DOCS, "top_k": 1, "top_n": 2}
    r = _post(live, body)
    assert r.status_code == 422
    assert r.json()["message"].startswith("invalid request: top_n: ")
    assert "top_k" in r.json()["message"]
    r = _post(live, {"model": "bm25", "query": QUERY, "documents": DOCS, "top_n": 1})
    assert r.status_code == 200 and len(r.json()["results"]) == 1
    assert "data" not in r.json()
