"""Every answer's ``X-Request-Id`` (the caller's when sane, else a new one) and the log
lines written while a request is answered, which name it; other lines are as they were."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rerankit import register_reranker
from rerankit.errors import ModelLoadError
from rerankit.rerankers import ScorerReranker

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient  # noqa: E402

from rerankit.server import ServerSettings, create_app  # noqa: E402
from rerankit.server import pipeline as pipeline_module  # noqa: E402
from rerankit.server.logs import log_formatter  # noqa: E402
from rerankit.server.state import FAILING_AFTER  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
NEW = re.compile(r"[0-9a-f]{32}")  # an id the service made
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class _Broken:
    """A scorer whose every request fails (its warm-up passes)."""

    name = "broken"

    async def score(self, query, docs, **context):
        if query != "warm up":
            raise RuntimeError("the model server went away")
        return [0.0] * len(docs)


class _Gone:
    """A scorer whose model is gone for a request asking ``gone`` (then loaded again)."""

    name = "gone"

    async def score(self, query, docs, **context):
        if query == "gone":
            raise ModelLoadError("could not load model 'gone': its files were deleted")
        return [0.0] * len(docs)


register_reranker("test-request-id-broken", lambda: ScorerReranker(_Broken()))
register_reranker("test-request-id-gone", lambda: ScorerReranker(_Gone()))


@pytest.fixture(scope="module")
def service(wait_ready):
    """A service of a bm25 pipeline and a broken one, its rerankit lines in ``log`` as the
    service writes them (``rerankit serve``'s formatter)."""
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(log_formatter())
    rerankit = logging.getLogger("rerankit")
    rerankit.addHandler(handler)
    level = rerankit.level
    rerankit.setLevel(logging.INFO)
    settings = ServerSettings(
        pipelines={"bm25": "bm25", "broken": "test-request-id-broken"},
        default="bm25",
        aliases={},
        failing_probe_seconds=0,
    )
    try:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            wait_ready(client)
            yield client, log
    finally:
        rerankit.removeHandler(handler)
        rerankit.setLevel(level)


@pytest.mark.parametrize("sent", ["client-42", "a1b2:c3/d4_e5.f6~!", "x" * 128])
def test_a_sane_request_id_of_the_callers_is_answered_back(service, sent):
    client, _ = service
    headers = {"X-Request-Id": sent}
    assert client.post("/v2/rerank", json=ASK, headers=headers).headers["x-request-id"] == sent
    assert client.get("/health", headers=headers).headers["x-request-id"] == sent
    missing = client.get("/no/such/page", headers=headers)  # an error answer carries it too
    assert missing.status_code == 404 and missing.headers["x-request-id"] == sent


def test_without_one_each_answer_gets_a_new_id(service):
    client, _ = service
    ids = {client.post("/v2/rerank", json=ASK).headers["x-request-id"] for _ in range(3)}
    ids.add(client.get("/health").headers["x-request-id"])
    assert len(ids) == 4 and all(NEW.fullmatch(i) for i in ids), ids


@pytest.mark.parametrize(
    "sent",
    [
        "a" * 500,
        "x" * 129,
        "abc\r\nX-Evil: 1",
        "abc\n[request admin]",
        "two words",
        "tab\there",
        "caf\xe9".encode("latin-1"),
        "",
    ],
    ids=["500-chars", "129-chars", "crlf", "newline", "space", "tab", "latin-1", "empty"],
)
def test_an_insane_request_id_is_replaced_never_echoed(service, sent):
    client, log = service
    r = client.post("/v2/rerank", json=ASK, headers={"X-Request-Id": sent})
    assert r.status_code == 200
    assert NEW.fullmatch(r.headers["x-request-id"]), r.headers["x-request-id"]
    assert "X-Evil" not in r.headers and "[request admin]" not in log.getvalue()


def test_the_lines_of_a_failing_request_name_it_and_others_are_unchanged(service):
    client, log = service
    log.truncate(0), log.seek(0)
    sent = [f"failing-{n}" for n in range(FAILING_AFTER)]
    for rid in sent:
        r = client.post(
            "/v2/rerank", json={**ASK, "model": "broken"}, headers={"X-Request-Id": rid}
        )
        assert r.status_code == 500 and r.headers["x-request-id"] == rid
    logging.getLogger("rerankit.server.app").warning("outside any request")
    lines_text = log.getvalue()
    lines = lines_text.splitlines()
    # each failure's warning, before its traceback; the warning the last one caused
    for rid in sent:
        assert (
            " WARNING rerankit.rerankers.base: scorer 'broken' failed: the model server went "
            f"away [request {rid}]\nTraceback"
        ) in lines_text, lines
    (failing,) = [line for line in lines if "is failing" in line]
    assert " WARNING rerankit.server.pipeline: pipeline 'broken' is failing" in failing
    assert failing.endswith(f" [request {sent[-1]}]")
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\S+ WARNING rerankit\.server\.app: outside any request", lines[-1]
    )


def test_a_line_under_a_span_names_its_trace_too(wait_ready):
    pytest.importorskip("opentelemetry.sdk", reason="needs the 'otel' extra")
    from opentelemetry.sdk.trace import TracerProvider

    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(log_formatter())
    service_log = logging.getLogger("rerankit.rerankers")
    service_log.addHandler(handler)
    settings = ServerSettings(
        pipelines={"broken": "test-request-id-broken"}, default="broken", aliases={}
    )
    app = create_app(settings, tracer_provider=TracerProvider())
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            wait_ready(client)
            traceparent = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
            headers = {"X-Request-Id": "traced-1", "traceparent": traceparent}
            assert client.post("/v2/rerank", json=ASK, headers=headers).status_code == 500
    finally:
        service_log.removeHandler(handler)
    (line,) = [line for line in log.getvalue().splitlines() if "'broken' failed" in line]
    assert line.endswith(f" [request traced-1 trace {TRACE_ID}]"), line


def test_a_reload_a_request_started_names_no_request(wait_ready, monkeypatch):
    """The loader a request starts (its model was gone) goes on after it: its lines are
    the service's, not that request's."""
    monkeypatch.setattr(pipeline_module, "FIRST_RETRY_SECONDS", 0.05)
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(log_formatter())
    pipelines = logging.getLogger("rerankit.server.pipeline")
    pipelines.addHandler(handler)
    level = pipelines.level
    pipelines.setLevel(logging.INFO)
    settings = ServerSettings(pipelines={"gone": "test-request-id-gone"}, default="gone")
    try:
        with TestClient(create_app(settings)) as client:
            wait_ready(client)
            log.truncate(0), log.seek(0)
            headers = {"X-Request-Id": "found-it-gone"}
            r = client.post("/v2/rerank", json={**ASK, "query": "gone"}, headers=headers)
            assert r.status_code == 503
            deadline = time.monotonic() + 10
            while "pipeline 'gone' ready" not in log.getvalue() and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        pipelines.removeHandler(handler)
        pipelines.setLevel(level)
    lines = log.getvalue().splitlines()
    (failed,) = [line for line in lines if "pipeline 'gone' failed" in line]
    assert failed.endswith(" [request found-it-gone]")  # said while answering it
    (ready,) = [line for line in lines if "pipeline 'gone' ready" in line]
    assert ready.endswith(" INFO rerankit.server.pipeline: pipeline 'gone' ready"), lines


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_uvicorns_access_line_names_the_request_in_a_real_service(tmp_path):
    settings = tmp_path / "service.toml"
    settings.write_text('[server]\ndefault = "bm25"\n[pipelines.bm25]\nreranker = "bm25"\n')
    port, path = _free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "rerankit", "serve", "--settings", str(settings)]
    with path.open("w") as out:
        proc = subprocess.Popen(
            [*command, "--port", str(port), "--log-level", "info"],
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, path.read_text()
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        mine = httpx.post(f"{url}/v2/rerank", json=ASK, headers={"X-Request-Id": "probe-7"})
        made = httpx.post(f"{url}/v2/rerank", json=ASK)
        long = httpx.post(f"{url}/v2/rerank", json=ASK, headers={"X-Request-Id": "z" * 500})
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert mine.headers["x-request-id"] == "probe-7"
    assert made.headers["x-request-id"] != long.headers["x-request-id"]
    text = path.read_text()
    access = [line for line in text.splitlines() if '"POST /v2/rerank HTTP/1.1" 200' in line]
    assert [line.rsplit(" [request ", 1)[-1] for line in access] == [
        "probe-7]",
        f"{made.headers['x-request-id']}]",
        f"{long.headers['x-request-id']}]",
    ], text
    assert "z" * 129 not in text
    (ready,) = [line for line in text.splitlines() if "rerankit service ready" in line]
    assert "[request" not in ready  # a line outside a request: as it was
