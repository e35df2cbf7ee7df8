"""The OpenAPI document says what the service sends: real answers of every endpoint, errors
included, checked against the document the service serves (``openapi_check``: each status
declared, each body valid against its schema read closed, so that a field the document
leaves out fails, each header declared and of its schema); and its schema names are
unique and readable, for generated clients."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
import uuid

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("jsonschema", reason="needs jsonschema (dev extra)")

import httpx
from fastapi.testclient import TestClient
from openapi_check import Document

from rerankit import register_reranker
from rerankit.errors import ModelLoadError
from rerankit.rerankers import ScorerReranker
from rerankit.scorers.base import ScoreBatch
from rerankit.server import ServerSettings, create_app
from rerankit.server.state import FAILING_AFTER

KEY = "openapi-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
DOCS = ["solar panels on roofs", "wind farms at sea", "solar panels on roofs!", "hydro dams"]
OBJECTS = [
    {"id": "a", "title": "Solar", "text": "panels on roofs"},
    {"id": 7, "title": "Wind", "text": "at sea"},
]


class _Odd:
    """Scores by position; what the query says: ``degrade`` (flags, a warning, degraded),
    ``slow`` (past the deadline), ``hold`` (a while, inside the deadline)."""

    name = "odd"
    score_scale = "unit"

    async def score(self, query, docs, **context):
        values = np.linspace(0.9, 0.1, len(docs))
        if query == "slow" or query.startswith("hold"):
            await asyncio.sleep(5 if query == "slow" else 0.5)
        if query == "degrade":
            return ScoreBatch(values, flags={0: ["odd"]}, warnings=["odd: one; two"], degraded=True)
        return values


class _Crashing(ScorerReranker):
    async def arerank(self, query, docs, **kwargs):
        if query == "crash":
            raise RuntimeError("crashed on purpose")
        return await super().arerank(query, docs, **kwargs)


def _broken():
    raise ModelLoadError("no model at /nowhere")


register_reranker("test-openapi-odd", lambda: _Crashing(_Odd()))
register_reranker("test-openapi-broken", _broken)


def _settings(tmp_path, **server) -> ServerSettings:
    server.setdefault("feedback", str(tmp_path / "clicks.jsonl"))
    return ServerSettings(
        pipelines={
            "bm25": "bm25",
            "jaccard": "jaccard",
            "dedup": {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "deduplicate"}}]},
            "odd": "test-openapi-odd",
            "broken": "test-openapi-broken",
        },
        default="bm25",
        aliases={"rerank-v3.5": "bm25", "rerank-2.5": "bm25"},
        **server,
    )


@pytest.fixture(scope="module")
def served(live_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("openapi")
    with pytest.MonkeyPatch.context() as env:  # (the autouse fixture's is a test's)
        env.setenv("RERANKIT_CACHE_DIR", str(folder / "cache"))
        yield from _served(live_server, folder)


def _served(live_server, folder):
    settings = _settings(
        folder,
        api_keys=[KEY],
        answer_cache=True,
        interleave=["jaccard", "bm25"],
        interleave_share=1.0,
        max_documents=8,
        max_document_chars=300,
        max_body_bytes=20_000,
        max_header_bytes=4096,
        timeout=3.0,  # a 200 has room on a busy machine; `slow` (5 s) still runs past it
        body_timeout=0.3,
        max_concurrency=2,
        max_concurrency_per_pipeline=1,
        max_queue=0,
        ready_when="any",
        failing_probe_seconds=0,
        stuck_grace=0.2,
    )
    server = live_server(settings)
    with httpx.Client(base_url=server.url, headers=AUTH) as client:
        yield client, Document(client.get("/openapi.json").json())
    server.stop()


def _ask(client, doc, method, path, status, *, of=None, **kwargs):
    """``method path`` on the service, checked against the document (as an answer of the
    path's ``of`` operation: a 405's); ``status`` the one expected (a tuple: any of them)."""
    answer = client.request(method, path, **kwargs)
    wanted = status if isinstance(status, tuple) else (status,)
    assert answer.status_code in wanted, (method, path, answer.status_code, answer.text)
    doc.check(of or method, path.split("?")[0], answer)
    return answer


def _slow_body(client, path) -> httpx.Response:
    """The answer to a body that never arrives (half sent, then nothing)."""
    with socket.create_connection((client.base_url.host, client.base_url.port), timeout=10) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        raw = b""
        while b"\r\n\r\n" not in raw or not raw.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
    return httpx.Response(int(lines[0].split()[1]), headers=headers, content=body)


POSTS = {
    "/v1/rerank": {"query": "solar", "documents": OBJECTS},
    "/v2/rerank": {"query": "solar", "documents": DOCS},
    "/rerank": {"query": "solar", "texts": DOCS},
    "/v1/explain": {"query": "solar", "documents": OBJECTS},
    "/v1/feedback": {"id": "no-such-answer", "clicks": [0]},
}
GETS = ["/health", "/ready", "/v1/models", "/info", "/metrics"]


def test_every_answer_of_every_endpoint_is_what_the_document_says(served):
    client, doc = served
    ask = lambda *a, **k: _ask(client, doc, *a, **k)  # noqa: E731
    for path in GETS:
        ask("GET", path, 200)
    ask("GET", "/ready?model=rerank-v3.5", 200)
    echoed = ask("GET", "/health", 200, headers={"X-Request-Id": "order-7731"})
    assert echoed.headers["x-request-id"] == "order-7731"
    long = "solar " * 80  # over max_document_chars: cut, and said
    v2 = ask("POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "return_documents": True})
    ask("POST", "/v2/rerank", 200, json={"query": "solar", "documents": [long, "wind"]})
    ask("POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "max_tokens_per_doc": 2})
    twice = {**POSTS["/v2/rerank"], "top_n": 2}
    ask("POST", "/v2/rerank", 200, json=twice)
    assert ask("POST", "/v2/rerank", 200, json=twice).headers["x-rerankit-cache"] == "hit"
    mixed = ask("POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "model": "jaccard"})
    assert mixed.json()["meta"]["rerankit"]["order"] == "interleaved"
    assert (
        "x-rerankit-dropped"
        in ask("POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "model": "dedup"}).headers
    )
    odd = ask(
        "POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "model": "odd", "query": "degrade"}
    )
    assert odd.headers["x-rerankit-degraded"] == "true" and odd.json()["meta"]["rerankit"]["flags"]
    ask("POST", "/v1/rerank", 200, json=POSTS["/v1/rerank"])
    ask("POST", "/v1/rerank", 200, json={**POSTS["/v1/rerank"], "rank_fields": ["title", "nope"]})
    ask("POST", "/v1/rerank", 200, json={"query": "solar", "documents": DOCS, "top_k": 2})
    ask(
        "POST",
        "/v1/rerank",
        200,
        json={"query": "solar", "documents": DOCS, "model": "rerank-2.5", "return_documents": True},
    )
    ask("POST", "/rerank", 200, json={**POSTS["/rerank"], "return_text": True, "raw_scores": True})
    ask(
        "POST", "/rerank", 200, json={**POSTS["/rerank"], "texts": [long, "wind"], "truncate": True}
    )
    ask(
        "POST", "/rerank", 200, json={"query": "solar", "documents": DOCS, "return_documents": True}
    )
    ask("POST", "/rerank", 200, json={"query": "solar", "documents": DOCS, "raw_scores": True})
    ask("POST", "/v1/explain", 200, json=POSTS["/v1/explain"])
    ask("POST", "/v1/explain", 200, json={"query": "solar", "documents": DOCS, "model": "odd"})
    feedback = {"id": v2.json()["id"], "clicks": [0], "dwell_ms": 1200}
    ask("POST", "/v1/feedback", 200, json=feedback)
    ask("POST", "/v1/feedback", 200, json=feedback)  # a duplicate
    # a pipeline that fails, then fails its requests: ready, failing, then ready again
    ask("POST", "/v2/rerank", 503, json={**POSTS["/v2/rerank"], "model": "broken"})
    ask("POST", "/rerank", 503, json={"query": "q", "documents": DOCS, "model": "broken"})
    ask("GET", "/ready?model=broken", 503)
    for _ in range(FAILING_AFTER):
        ask("POST", "/v1/explain", 500, json={"query": "crash", "documents": DOCS, "model": "odd"})
    assert ask("GET", "/ready?model=odd", 200).json()["status"] == "failing"
    ask("GET", "/info", 200)
    ask("GET", "/ready", 200)
    ask("POST", "/rerank", 504, json={"query": "slow", "documents": DOCS, "model": "odd"})
    ask("POST", "/v2/rerank", 200, json={**POSTS["/v2/rerank"], "model": "odd"})
    ask("GET", "/ready?model=odd", 200)
    # at capacity (one slot for a pipeline, no queue)
    held_query = f"hold {uuid.uuid4()}"  # not an answer the answer cache holds
    holding = {"json": {"query": held_query, "documents": DOCS, "model": "odd"}, "headers": AUTH}
    where = str(client.base_url.join("/v2/rerank"))
    held = threading.Thread(target=lambda: httpx.post(where, **holding))
    held.start()
    try:
        for _ in range(200):  # until it holds its slot
            text = client.get("/metrics").text
            if 'rerankit_in_flight{model="odd"} 1.0' in text:
                break
            time.sleep(0.01)
        ask(
            "POST",
            "/v1/explain",
            (429, 503),
            json={"query": "q", "documents": DOCS, "model": "odd"},
        )
    finally:
        held.join()
    # the caller's mistakes, on every endpoint
    for path, body in POSTS.items():
        for method in ("GET", "PUT"):
            ask(method, path, 405, of="POST")
        ask("POST", path, 401, headers={"Authorization": "Bearer wrong"}, json=body)
        ask("POST", path, 400, content=b"{not json")
        ask("POST", path, 415, content=b"{}", headers={"Content-Type": "text/plain"})
        ask("POST", path, 422, json={"query": 5})
        ask("POST", path, 413, content=b"[" + b"1," * 12_000 + b"1]")
        ask("POST", path, 431, headers={"X-Padding": "x" * 5000}, json=body)
    for path in GETS:
        ask("POST", path, 405, of="GET")
        ask("GET", path, 431, headers={"X-Padding": "x" * 5000})
    ask("GET", "/info", 401, headers={"Authorization": ""})
    ask("GET", "/v1/models", 401, headers={"Authorization": ""})
    ask("GET", "/ready?model=nope", 404)
    ask("POST", "/v2/rerank", 404, json={**POSTS["/v2/rerank"], "model": "nope"})
    ask("POST", "/rerank", 404, json={"query": "q", "documents": DOCS, "model": "nope"})
    ask("POST", "/v1/feedback", 404, json=POSTS["/v1/feedback"])
    ask("POST", "/v2/rerank", 400, json={**POSTS["/v2/rerank"], "documents": DOCS * 3})
    ask("POST", "/v2/rerank", 400, json=POSTS["/v2/rerank"], headers={"x-rerankit-experiment": "x"})
    ask("POST", "/rerank", 413, json={"query": "q", "texts": [long], "truncate": False})
    ask("POST", "/v1/explain", 422, json={**POSTS["/v1/explain"], "topn": 1})
    for path in ("/v2/rerank", "/rerank"):  # a body that does not arrive: 408
        doc.check("POST", path, _slow_body(client, path))
    # every operation answered, a success and an error each
    assert {label for label, status in doc.seen if status < 300} == doc.operations()
    assert {label for label, status in doc.seen if status >= 400} == doc.operations()


def test_an_open_service_s_answers_while_a_pipeline_fails_are_what_the_document_says(tmp_path):
    """No keys, every pipeline needed for readiness (one failed), feedback kept for ids this
    replica does not hold: /ready's 503 names every pipeline, feedback gets 202."""
    settings = _settings(
        tmp_path, feedback={"path": str(tmp_path / "c.jsonl"), "accept_unknown_ids": True}
    )
    with TestClient(create_app(settings)) as client:
        doc = Document(client.get("/openapi.json").json())
        assert "401" not in doc.doc["paths"]["/info"]["get"]["responses"]
        for _ in range(500):
            answer = client.get("/ready")
            if answer.json()["status"] != "loading":
                break
        doc.check("GET", "/ready", answer)
        assert answer.status_code == 503 and "broken" in answer.json()["failed"]
        for path in GETS:
            doc.check("GET", path, client.get(path))
        doc.check("POST", "/v1/feedback", client.post("/v1/feedback", json=POSTS["/v1/feedback"]))
        assert ("POST /v1/feedback", 202) in doc.seen and ("GET /ready", 503) in doc.seen


#: a component name a generated client can take as a type name as it is
READABLE = re.compile("^[A-Z][A-Za-z0-9]*$")


def _titles(node, found):
    if isinstance(node, dict):
        if isinstance(node.get("title"), str) and ("properties" in node or "anyOf" in node):
            found.append(node["title"])
        for value in node.values():
            _titles(value, found)
    elif isinstance(node, list):
        for value in node:
            _titles(value, found)
    return found


def _refs(node, found):
    if isinstance(node, dict):
        if "$ref" in node:
            found.add(node["$ref"])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)
    return found


@pytest.mark.parametrize("keys", [[KEY], []])
def test_schema_names_are_unique_and_readable(tmp_path, keys):
    with TestClient(create_app(_settings(tmp_path, api_keys=keys))) as client:
        doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    unreadable = [name for name in schemas if not READABLE.match(name)]
    assert not unreadable, unreadable  # not rerankit__server__formats__voyage__Usage
    for name, schema in schemas.items():
        assert schema.get("title", name) == name, name
    # every object or union is a named component: no inline "Request" for a generator to
    # name, no FastAPI "Response Handle V1 Rerank Post"
    titles = _titles(doc["paths"], [])
    assert not titles, titles
    for ref in _refs(doc, set()):
        kind, name = ref.removeprefix("#/components/").split("/")
        assert name in doc["components"][kind], ref
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(set(ids)) == len(ids) and all(re.fullmatch("[a-z][A-Za-z0-9]*", i) for i in ids)
    assert "HTTPValidationError" not in schemas  # every error is {"message": ...}
