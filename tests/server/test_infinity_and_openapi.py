"""Infinity's rerank body on ``POST /rerank`` (``documents``, no ``texts``) is answered in
Infinity's shape, its ``model`` naming the pipeline, while TEI's body on the same path is
answered as before (its ``model`` field ignored, as TEI ignores it); and every operation of
the OpenAPI document has a summary and a description of its own."""

from __future__ import annotations

import time

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit import register_reranker  # noqa: E402
from rerankit.rerankers import ScorerReranker  # noqa: E402
from rerankit.scorers import FunctionScorer  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402

DOCS = ["solar panels on roofs", "wind at sea", "solar power plants and solar cells", "bread"]
QUERY = "solar power"


def _shortest_first(q, d):
    return -float(len(d.text))


register_reranker(
    "test-shortest", lambda: ScorerReranker(FunctionScorer(_shortest_first, name="short"))
)


@pytest.fixture(scope="module")
def live(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25", "short": "test-shortest"}, default="bm25", api_keys=["k"]
    )
    server = live_server(settings)
    yield server
    server.stop()


def _post(live, path, body):
    return httpx.post(f"{live.url}{path}", json=body, headers={"Authorization": "Bearer k"})


def test_infinitys_body_gets_infinitys_answer_from_the_pipeline_it_names(live):
    before = time.time()
    for model, pipeline in ((None, "bm25"), ("default/not-specified", "bm25"), ("short", "short")):
        body = {"query": QUERY, "documents": DOCS, **({"model": model} if model else {})}
        r = _post(live, "/rerank", body)
        assert r.status_code == 200, r.text
        got = r.json()
        assert list(got) == ["id", "object", "results", "model", "usage", "created"]
        assert got["object"] == "rerank" and got["model"] == pipeline
        assert got["id"] and before - 1 <= got["created"] <= time.time() + 1
        assert got["usage"]["prompt_tokens"] == got["usage"]["total_tokens"] > 0
        # the same order and relevance scores as Cohere's v2 answer from that pipeline
        v2 = _post(live, "/v2/rerank", {"query": QUERY, "documents": DOCS, "model": pipeline})
        want = [(x["index"], x["relevance_score"]) for x in v2.json()["results"]]
        assert [(x["index"], x["relevance_score"]) for x in got["results"]] == want
        assert all(set(x) == {"index", "relevance_score"} for x in got["results"])


def test_infinitys_options_top_n_documents_and_raw_scores(live):
    body = {"query": QUERY, "documents": DOCS, "model": "short", "top_n": 2}
    r = _post(live, "/rerank", {**body, "return_documents": True, "raw_scores": True})
    results = r.json()["results"]
    assert [x["index"] for x in results] == [3, 1]  # "bread", then "wind at sea"
    assert [x["document"] for x in results] == ["bread", "wind at sea"]
    assert [x["relevance_score"] for x in results] == [-5.0, -11.0]  # the pipeline's own
    assert r.headers["x-rerankit-scores"] == "relative"


def test_infinitys_mistakes_are_located_and_unknown_models_listed(live):
    r = _post(live, "/rerank", {"query": QUERY, "documents": []})
    assert r.status_code == 422 and r.json()["message"].startswith("invalid request: documents")
    r = _post(live, "/rerank", {"query": QUERY, "documents": DOCS, "top_n": "2"})
    assert r.status_code == 422 and "top_n" in r.json()["message"]
    r = _post(live, "/rerank", {"query": QUERY, "documents": DOCS, "model": "nope"})
    assert r.status_code == 404 and "bm25" in r.json()["message"]


def test_teis_body_is_answered_as_before_its_model_field_ignored(live):
    r = _post(live, "/rerank", {"query": QUERY, "texts": DOCS, "model": "short"})
    assert r.status_code == 200
    answer = r.json()
    assert isinstance(answer, list) and set(answer[0]) == {"index", "score"}
    v2 = _post(live, "/v2/rerank", {"query": QUERY, "documents": DOCS})  # the default's
    assert [x["index"] for x in answer] == [x["index"] for x in v2.json()["results"]]
    both = _post(live, "/rerank", {"query": QUERY, "texts": DOCS, "documents": DOCS})
    assert isinstance(both.json(), list)  # texts: TEI's, whatever else it holds
    r = _post(live, "/rerank", {"query": QUERY})
    assert r.status_code == 422 and "texts" in r.json()["message"]


def test_every_operation_has_a_summary_and_a_description_of_its_own(live):
    schema = httpx.get(f"{live.url}/openapi.json").json()
    operations = [
        (f"{method.upper()} {path}", op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    ]
    assert len(operations) >= 9
    summaries = [op.get("summary", "") for _, op in operations]
    for name, op in operations:
        assert op.get("summary") and op.get("description"), name
        assert op["summary"] not in ("Handle", "Ready", "Health", "Models", "Info"), name
    assert len(set(summaries)) == len(summaries), summaries
    rerank = schema["paths"]["/rerank"]["post"]
    named = schema["components"]["schemas"]
    body = rerank["requestBody"]["content"]["application/json"]["schema"]
    shapes = [named[one["$ref"].split("/")[-1]] for one in named["RerankRequest"]["anyOf"]]
    assert body == {"$ref": "#/components/schemas/RerankRequest"}
    assert {"texts", "documents"} <= {field for shape in shapes for field in shape["properties"]}
    ready = schema["paths"]["/ready"]["get"]
    assert [p["name"] for p in ready["parameters"] if "name" in p] == ["model"]
