"""Every error answer names its cause in ``code`` beside its ``message`` (one status covers
several causes: a client branches on the code, not on the English), with the numbers a
client acts on as fields (``max_documents``); TEI's ``/rerank`` keeps TEI's ``error`` and
``error_type``. The HTTP service page's table lists exactly the codes the service sends."""

from __future__ import annotations

import ast
import asyncio
import re
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.errors import MissingDependencyError, ModelLoadError
from rerankit.rerankers import ScorerReranker
from rerankit.server import ServerSettings, create_app
from rerankit.server.codes import CODES
from rerankit.server.shedding import too_big

REPO = Path(__file__).resolve().parents[2]
KEY = {"Authorization": "Bearer k"}
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
LOADING = threading.Event()  # set at the end: the "loading" pipeline's load then ends


def _not_installed():
    raise MissingDependencyError("the cross-encoder needs torch: pip install 'rerankit[torch]'")


def _cannot_load():
    raise ModelLoadError("could not load model 'gone': no such folder")


class _SlowWarmUp:
    """A scorer whose warm-up batch (so its pipeline's load) lasts until LOADING is set."""

    name = "slow_warm_up"

    async def score(self, query, docs, **context):
        if query == "warm up":
            await asyncio.to_thread(LOADING.wait, 60)
        return [0.0] * len(docs)


register_reranker("test-codes-not-installed", _not_installed)
register_reranker("test-codes-cannot-load", _cannot_load)
register_reranker("test-codes-slow-to-load", lambda: ScorerReranker(_SlowWarmUp()))


@pytest.fixture(scope="module")
def client():
    settings = ServerSettings(
        pipelines={
            "bm25": "bm25",
            "missing": "test-codes-not-installed",
            "broken": "test-codes-cannot-load",
            "loading": "test-codes-slow-to-load",
        },
        default="bm25",
        api_keys=["k"],
        max_documents=3,
        max_document_chars=50,
        truncate=False,
        max_body_bytes=5000,
        max_header_bytes=4000,
        ready_when="any",
    )
    with TestClient(create_app(settings)) as c:
        yield c
        LOADING.set()  # (its load ends: the app's loop stops without waiting for it)


def _error(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["code"] == code and body["message"], body
    return body


def test_every_error_names_its_cause(client):
    _error(client.post("/v2/rerank", json=ASK), 401, "unauthorized")
    _error(client.get("/no/such/path", headers=KEY), 404, "not_found")
    _error(client.get("/v2/rerank", headers=KEY), 405, "method_not_allowed")
    plain = {**KEY, "Content-Type": "text/plain"}
    _error(client.post("/v2/rerank", content="{}", headers=plain), 415, "unsupported_media_type")
    _error(client.post("/v2/rerank", content=b"{", headers=KEY), 400, "invalid_json")
    wrong = {**ASK, "top_n": "2"}
    _error(client.post("/v2/rerank", json=wrong, headers=KEY), 422, "invalid_request")
    unknown = {**ASK, "model": "nope"}
    _error(client.post("/v2/rerank", json=unknown, headers=KEY), 404, "unknown_model")
    bad = {**KEY, "x-rerankit-experiment": "maybe"}
    said = _error(client.post("/v2/rerank", json=ASK, headers=bad), 400, "invalid_header")
    assert said["header"] == "x-rerankit-experiment"


def test_the_numbers_a_client_acts_on_are_fields(client):
    many = {"query": "q", "documents": ["a", "b", "c", "d"]}
    said = _error(client.post("/v2/rerank", json=many, headers=KEY), 400, "too_many_documents")
    assert said["max_documents"] == 3 and "at most 3" in said["message"]
    long = {"query": "q", "documents": ["a", "x" * 60]}
    said = _error(client.post("/v2/rerank", json=long, headers=KEY), 400, "document_too_long")
    assert (said["max_document_chars"], said["index"]) == (50, 1)
    query = {"query": "q" * 60, "documents": ["a"]}
    said = _error(client.post("/v1/rerank", json=query, headers=KEY), 400, "query_too_long")
    assert said["max_document_chars"] == 50
    big = {"query": "q", "documents": ["a" * 40] * 200}
    said = _error(client.post("/v2/rerank", json=big, headers=KEY), 413, "body_too_large")
    assert said["max_body_bytes"] == 5000
    huge = {**KEY, "x-padding": "p" * 5000}
    said = _error(client.post("/v2/rerank", json=ASK, headers=huge), 431, "headers_too_large")
    assert said["max_header_bytes"] == 4000


def test_tei_keeps_error_and_error_type_and_gains_the_code(client):
    texts = {"query": "q", "texts": ["short", "x" * 60]}
    said = _error(client.post("/rerank", json=texts, headers=KEY), 413, "document_too_long")
    assert said["error"] == said["message"] and said["error_type"] == "Validation"
    assert (said["max_document_chars"], said["index"]) == (50, 1)
    said = _error(client.post("/rerank", json={"query": "q", "texts": []}), 401, "unauthorized")
    assert said["error_type"] == "Validation"


def test_a_pipeline_that_cannot_answer_says_why_in_its_code(client):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # their first attempts fail at once
        states = client.get("/info", headers=KEY).json()["pipelines"]
        if all(states[name].get("error") for name in ("missing", "broken")):
            break
        time.sleep(0.02)
    codes = {}
    for name in ("loading", "broken", "missing"):
        answer = client.post("/v2/rerank", json={**ASK, "model": name}, headers=KEY)
        codes[name] = _error(answer, 503, answer.json()["code"])["code"]
        if name != "missing":
            assert int(answer.headers["retry-after"]) >= 1
    assert codes == {
        "loading": "pipeline_loading",
        "broken": "pipeline_failed",
        "missing": "pipeline_not_installed",
    }


def test_a_pipeline_not_installed_says_no_wait_mends_it(client):
    """Its 503 said Retry-After: 300 (retry_max_seconds): a client honouring it waited five
    minutes for what only an install and a restart mend. Other 503s keep theirs."""
    answer = client.post("/v2/rerank", json={**ASK, "model": "missing"}, headers=KEY)
    assert answer.status_code == 503 and "retry-after" not in answer.headers
    assert answer.json()["code"] == "pipeline_not_installed"
    ready = client.get("/ready?model=missing")  # (its requests' answer, said by /ready)
    assert ready.status_code == 503 and "retry-after" not in ready.headers
    assert client.get("/ready?model=broken").headers["retry-after"] != ""
    assert client.get("/ready").status_code == 200  # ready_when = "any": bm25 is ready


def test_ready_says_a_failed_pipeline_failed_to_load(client):
    """It said `pipeline 'broken' is failed: ...`; then, without a key, `failed to load:
    see /info ...` with no retry time, and `is loading: see /info (...) for the cause` for
    a pipeline that had not failed (tests/server/test_ready_messages.py)."""
    said = client.get("/ready?model=broken").json()["message"]
    assert said.startswith("pipeline 'broken' is unavailable: see /info (with an API key) ")
    assert "; retry in " in said
    said = client.get("/ready?model=loading").json()["message"]
    assert said.startswith("pipeline 'loading' is loading (attempt 1, ")


def test_a_request_too_large_for_the_timeout_says_how_many_documents_fit():
    refused = too_big("hybrid", 0.072, 60, 2.0)  # 4.3 s of work for a 2 s timeout
    assert refused is not None and refused.status == 413
    assert refused.code == "too_much_work_for_timeout"
    assert refused.details == {"max_documents": 22, "timeout": 2.0}
    assert "send at most about 22 documents" in refused.message


def _codes_in_source() -> dict[str, set[str]]:
    """Each ``code=`` given to a ``ServiceError`` or an ``error`` answer in the service's
    source, by file; a ``ServiceError`` without one is an error of this test."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "src" / "rerankit" / "server").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            given = {k.arg: k.value for k in node.keywords}
            if node.func.id == "ServiceError":
                assert "code" in given, f"{path.name}:{node.lineno}: a ServiceError without code"
            if node.func.id in ("ServiceError", "error") and "code" in given:
                literals = {
                    n.value
                    for n in ast.walk(given["code"])
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                }
                found.setdefault(path.name, set()).update(literals)
    return found


def _table() -> dict[str, set[int]]:
    """The codes of the table in the HTTP service page's "Errors and retries", with their
    statuses."""
    page = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    section = page.split("\n## Errors and retries\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([\d, ]+) \| `([a-z_]+)` \|", section, flags=re.M)
    assert rows, "no table of codes"
    return {code: {int(s) for s in statuses.split(",")} for statuses, code in rows}


def test_the_table_lists_every_code_the_service_sends():
    sent = set().union(*_codes_in_source().values())
    assert sent <= set(CODES), sent - set(CODES)
    assert sent | {"not_found", "method_not_allowed"} >= set(CODES)  # (Starlette's 404, 405)
    assert _table() == {code: set(statuses) for code, statuses in CODES.items()}
