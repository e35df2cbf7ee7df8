"""OpenTelemetry tracing of the service: one trace per request, joined to the caller's: the
HTTP server span, the rerank span under it (with the GenAI rerank attributes and rerankit's
own) and one per stage and scorer; probes and scrapes untraced; configured by the standard
OTEL_* variables; nothing at all when not set up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")
pytest.importorskip("opentelemetry.sdk", reason="needs the 'otel' extra")

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from rerankit.server import ServerSettings, create_app

REPO = Path(__file__).resolve().parents[2]
DOCS = ["solar panels on roofs", "wind at sea", "solar power plants", "bread", "coal power"]
CASCADE = {
    "stages": [
        {"name": "first", "scorer": {"type": "bm25"}, "keep": 3},
        {"name": "second", "scorers": [{"type": "bm25"}, {"type": "jaccard"}]},
    ]
}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def traced(wait_ready):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = ServerSettings(
        pipelines={"cascade": CASCADE, "bm25": "bm25"}, default="cascade", aliases={}
    )
    with TestClient(create_app(settings, tracer_provider=provider)) as client:
        wait_ready(client)  # 503 until the pipelines load
        yield client, exporter


def test_a_request_span_with_stage_and_scorer_spans_under_it(traced):
    client, exporter = traced
    exporter.clear()
    r = client.post(
        "/v2/rerank",
        json={"query": "solar power", "documents": DOCS, "top_n": 2},
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT}-01"},
    )
    assert r.status_code == 200
    spans = exporter.get_finished_spans()
    (http,) = [s for s in spans if s.kind == SpanKind.SERVER]  # one server span: FastAPI's
    assert http.name == "POST /v2/rerank"
    assert http.attributes["http.route"] == "/v2/rerank"
    assert format(http.context.trace_id, "032x") == TRACE_ID  # joined the caller's trace
    assert format(http.parent.span_id, "016x") == PARENT
    (request,) = [s for s in spans if s.name == "rerank cascade"]
    assert request.kind == SpanKind.INTERNAL and request.parent.span_id == http.context.span_id
    assert not [s for s in spans if s.name.startswith("fastapi.")]  # no operation spans
    a = request.attributes
    assert a["gen_ai.operation.name"] == "rerank"
    assert a["gen_ai.provider.name"] == "rerankit"
    assert a["gen_ai.request.model"] == "cascade"
    assert a["gen_ai.rerank.candidate.count"] == len(DOCS)
    assert a["gen_ai.rerank.top_n"] == 2
    assert a["rerankit.pipeline"] == "cascade"
    assert a["rerankit.score_scale"] == "relative"
    assert a["rerankit.degraded"] is False
    assert a["rerankit.queue_seconds"] >= 0 and a["rerankit.inference_seconds"] > 0
    assert a["gen_ai.usage.input_tokens"] > 0  # v2 bills tokens
    assert a["http.response.status_code"] == 200 and a["http.route"] == "/v2/rerank"
    stages = {s.name: s for s in spans if s.name.startswith("stage ")}
    assert set(stages) == {"stage first", "stage second"}
    for stage in stages.values():
        assert stage.parent.span_id == request.context.span_id
        assert stage.context.trace_id == request.context.trace_id
    assert stages["stage first"].attributes["rerankit.documents"] == len(DOCS)
    assert stages["stage second"].attributes["rerankit.documents"] == 3  # keep = 3
    under = {
        stage: sorted(
            s.name for s in spans if s.parent and s.parent.span_id == span.context.span_id
        )
        for stage, span in stages.items()
    }
    assert under == {
        "stage first": ["scorer bm25"],
        "stage second": ["scorer bm25", "scorer jaccard"],
    }
    assert stages["stage first"].start_time < stages["stage second"].start_time


def test_a_refused_request_is_an_error_span(traced):
    client, exporter = traced
    exporter.clear()
    r = client.post("/v2/rerank", json={"model": "nope", "query": "q", "documents": ["a"]})
    assert r.status_code == 404
    (request,) = [s for s in exporter.get_finished_spans() if s.name.startswith("rerank ")]
    assert request.status.status_code == StatusCode.ERROR
    assert request.attributes["http.response.status_code"] == 404
    assert request.attributes["error.type"] == "404"
    assert "not found" in request.status.description


def test_probes_and_scrapes_are_not_traced(traced):
    client, exporter = traced
    exporter.clear()
    for path in ("/health", "/ready", "/ready?model=bm25", "/metrics"):
        assert client.get(path).status_code == 200
    assert exporter.get_finished_spans() == ()
    assert client.get("/v1/models").status_code == 200  # other requests are
    assert [s.name for s in exporter.get_finished_spans()] == ["GET /v1/models"]


def test_without_an_http_span_the_rerank_span_is_the_server_span():
    """(An older FastAPI traces nothing itself: rerankit's span joins the caller's trace.)"""
    import asyncio
    from types import SimpleNamespace

    from rerankit.server.tracing import traced as traced_call

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    call = SimpleNamespace(model=None, documents=["a", "b"], top_n=None)
    headers = {"traceparent": f"00-{TRACE_ID}-{PARENT}-01"}

    async def work():
        return "answer"

    tracer = provider.get_tracer("test")
    got = asyncio.run(traced_call(tracer, headers, "/rerank", call, "bm25", work, lambda _: {}))
    assert got == "answer"
    (span,) = exporter.get_finished_spans()
    assert span.name == "rerank bm25" and span.kind == SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert format(span.parent.span_id, "016x") == PARENT


def test_an_answer_from_the_cache_is_a_request_span_that_says_so(tmp_path, monkeypatch, wait_ready):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))  # the answers' SQLite file
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = ServerSettings(
        pipelines={"bm25": "bm25"}, default="bm25", aliases={}, answer_cache=True
    )
    ask = {"query": "solar power", "documents": DOCS}
    with TestClient(create_app(settings, tracer_provider=provider)) as client:
        wait_ready(client)
        for source in ("miss", "hit"):
            exporter.clear()
            r = client.post("/v2/rerank", json=ask)
            assert r.headers["x-rerankit-cache"] == source
            spans = exporter.get_finished_spans()
            (request,) = [s for s in spans if s.name.startswith("rerank ")]
            a = request.attributes
            assert a["rerankit.cache"] == source and a["http.response.status_code"] == 200
            assert a["rerankit.pipeline"] == "bm25"
            # only the request that computed its answer reports the computing
            assert ("rerankit.inference_seconds" in a) == (source == "miss")


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


_SERVE_ONE = """
import sys
import time
from fastapi.testclient import TestClient
from rerankit.server import ServerSettings, create_app
app = create_app(ServerSettings(pipelines={"bm25": "bm25"}, default="bm25"))
with TestClient(app) as c:
    deadline = time.time() + 120  # 503 until the pipeline has loaded
    while c.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)
    assert c.get("/ready").status_code == 200, c.get("/ready").text
    r = c.post("/v2/rerank", json={"query": "solar", "documents": ["solar", "wind"]})
    assert r.status_code == 200
print("TRACER", app.state.tracer is not None)
print("SDK", "opentelemetry.sdk" in sys.modules)
if app.state.tracer is not None:
    from opentelemetry import trace
    trace.get_tracer_provider().shutdown()
"""


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def test_nothing_is_set_up_without_configuration():
    out = _run(_SERVE_ONE, _clean_env())
    assert out.returncode == 0, out.stderr
    assert "TRACER False" in out.stdout and "SDK False" in out.stdout
    disabled = _run(
        _SERVE_ONE,
        {**_clean_env(), "OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
    )
    assert "TRACER False" in disabled.stdout, disabled.stderr


def test_the_standard_variables_send_spans_over_otlp():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    received: list[tuple[str, str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args):
            pass

    collector = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        env = {
            **_clean_env(),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
            "OTEL_SERVICE_NAME": "search-reranker",
        }
        out = _run(_SERVE_ONE, env)
    finally:
        collector.shutdown()
    assert out.returncode == 0, out.stderr
    assert "TRACER True" in out.stdout
    assert received, "no spans reached the collector"
    names, services = set(), set()
    for path, content_type, body in received:
        assert path == "/v1/traces" and content_type == "application/x-protobuf"
        message = ExportTraceServiceRequest.FromString(body)
        for resource_spans in message.resource_spans:
            for attr in resource_spans.resource.attributes:
                if attr.key == "service.name":
                    services.add(attr.value.string_value)
            for scope in resource_spans.scope_spans:
                names.update(s.name for s in scope.spans)
    assert services == {"search-reranker"}
    assert {"POST /v2/rerank", "rerank bm25", "scorer bm25"} <= names
    assert not any(name.startswith("GET /ready") for name in names)  # the polls above
    assert json.dumps(sorted(names))  # every name is a plain string


class _Reads20:
    """A scorer that reads each document's first 20 characters and says so, as the
    embedding's ``max_passages`` or an LLM judge's ``max_chars`` do."""

    name = "reads20"

    async def score(self, query, docs, **context):
        import numpy as np

        from rerankit.scorers.base import ScoreBatch, cut_to_fit

        flags: dict[int, list[str]] = {}
        warnings: list[str] = []
        cut_to_fit(docs, 20, self.name, flags, warnings)
        values = np.array([float(query in d.text[:20]) + len(d.text[:20]) / 100 for d in docs])
        return ScoreBatch(values=values, flags=flags, warnings=warnings)


def test_a_cut_the_pipeline_makes_is_reported_like_the_services(wait_ready):
    """The header lists every document cut (not only those answered), the span counts them,
    and meta flags each, for a pipeline's own cut as for max_tokens_per_doc's."""
    from rerankit import register_reranker
    from rerankit.rerankers import ScorerReranker

    register_reranker("test-reads20", lambda: ScorerReranker(_Reads20()))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    docs = ["solar", "solar power plants on every roof", "wind", "a long text about bread"]
    settings = ServerSettings(pipelines={"reads20": "test-reads20"}, default="reads20")
    with TestClient(create_app(settings, tracer_provider=provider)) as client:
        wait_ready(client)
        exporter.clear()
        r = client.post("/v2/rerank", json={"query": "solar", "documents": docs, "top_n": 1})
        assert r.status_code == 200, r.text
        assert [x["index"] for x in r.json()["results"]] == [1]
        assert r.headers["x-rerankit-truncated"] == "1,3"
        meta = r.json()["meta"]
        assert meta["rerankit"]["flags"] == {"1": ["truncated:reads20"], "3": ["truncated:reads20"]}
        assert any("2 documents longer than 20" in w for w in meta["warnings"])
        (span,) = [s for s in exporter.get_finished_spans() if s.name == "rerank reads20"]
        assert span.attributes["rerankit.truncated"] == 2
        # with the service's own cut too: one list, each document once
        both = client.post(
            "/v2/rerank",
            json={"query": "solar", "documents": docs, "max_tokens_per_doc": 3},
        )
        assert both.headers["x-rerankit-truncated"] == "1,3"
        untouched = client.post("/v2/rerank", json={"query": "solar", "documents": ["solar"]})
        assert "x-rerankit-truncated" not in untouched.headers
