"""Jina AI's rerank request, as its API documents it (``POST /v1/rerank`` with ``model``,
``query``, ``documents`` as strings or ``{"text"}`` objects, ``top_n``,
``return_documents``), is answered on Cohere's v1 path in the shape Jina's clients read:
``results`` best first, each ``index``, ``relevance_score`` and ``document.text``. Jina's
model names reach a pipeline through ``[server.aliases]``, as docs/service.md shows; one
not aliased is a 404 listing the aliases."""

from __future__ import annotations

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit.server import ServerSettings  # noqa: E402

DOCS = ["solar panels on roofs", "wind at sea", "solar power plants and solar cells", "bread"]
QUERY = "solar power"
JINA = "jina-reranker-v2-base-multilingual"


@pytest.fixture(scope="module")
def live(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25", "text": "text"},
        default="bm25",
        aliases={JINA: "text", "rerank-v3.5": "bm25"},
    )
    server = live_server(settings)
    yield server
    server.stop()


def _post(live, body):
    return httpx.post(f"{live.url}/v1/rerank", json=body, headers={"Authorization": "Bearer k"})


def test_jinas_request_gets_the_answer_jinas_clients_read(live):
    r = _post(live, {"model": JINA, "query": QUERY, "documents": DOCS, "top_n": 2})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    # the aliased pipeline's order and scores, as Cohere's v2 answer from it gives them
    v2 = httpx.post(
        f"{live.url}/v2/rerank", json={"model": "text", "query": QUERY, "documents": DOCS}
    )
    want = [(x["index"], x["relevance_score"]) for x in v2.json()["results"]][:2]
    assert [(x["index"], x["relevance_score"]) for x in results] == want
    scores = [x["relevance_score"] for x in results]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    # the documents come back unless asked not to, as Jina's API returns them
    assert [x["document"] for x in results] == [{"text": DOCS[i]} for i, _ in want]


def test_jinas_object_documents_null_top_n_and_no_documents_back(live):
    objects = [{"text": d} for d in DOCS]
    r = _post(live, {"model": JINA, "query": QUERY, "documents": objects, "top_n": None})
    assert r.status_code == 200, r.text  # LangChain's JinaRerank sends top_n: null
    assert len(r.json()["results"]) == len(DOCS)
    assert r.json()["results"][0]["document"] == {"text": DOCS[2]}  # the best first
    body = {"model": JINA, "query": QUERY, "documents": DOCS, "return_documents": False}
    results = _post(live, body).json()["results"]
    assert all(set(x) == {"index", "relevance_score"} for x in results)


def test_a_jina_name_not_aliased_or_an_image_is_refused_saying_why(live):
    r = _post(live, {"model": "jina-reranker-v3", "query": QUERY, "documents": DOCS})
    assert r.status_code == 404
    assert f"{JINA} (text)" in r.json()["message"]  # the aliases served are listed
    images = [{"image": "https://example.com/a.png"}]
    r = _post(live, {"model": JINA, "query": QUERY, "documents": images})
    assert r.status_code == 422
    assert r.json()["message"].startswith("invalid request: documents.0")
