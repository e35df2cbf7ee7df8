"""``rerankit serve --log-format json``: every line the service writes, rerankit's and
uvicorn's, in one process or several, is one JSON object with its time, level, logger and
message, the request's id while one is answered, an access line's client, method, path and
status, and a traceback in ``exception`` rather than on lines of its own."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rerankit.server.logs import REQUEST_ID, JsonLines, log_formatter

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("uvicorn", reason="needs the 'server' extra")

from processes import wait_process_ready  # noqa: E402

from rerankit.server import ServerSettings, serve  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d")


def _logged(formatter: logging.Formatter, write) -> list[str]:
    """The lines ``write(logger)`` logs through ``formatter``."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    logger = logging.getLogger("rerankit.tests.json_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        write(logger)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    return out.getvalue().splitlines()


def test_a_traceback_and_a_line_break_stay_in_the_one_json_line():
    def write(logger):
        token = REQUEST_ID.set("order-7731")
        try:
            raise ValueError("the model server went away")
        except ValueError:
            logger.exception("scorer 'judge' failed:\nsecond line")
        finally:
            REQUEST_ID.reset(token)
        logger.warning("outside any request")

    failed, outside = (json.loads(line) for line in _logged(log_formatter("json"), write))
    assert ISO.fullmatch(failed["time"]), failed
    assert failed["level"] == "ERROR" and failed["logger"] == "rerankit.tests.json_logs"
    assert failed["message"] == "scorer 'judge' failed:\nsecond line"
    assert failed["request_id"] == "order-7731" and "trace_id" not in failed
    assert failed["exception"].startswith("Traceback (most recent call last):")
    assert failed["exception"].endswith("ValueError: the model server went away")
    assert set(outside) == {"time", "level", "logger", "message"}, outside


def test_a_line_under_a_span_names_its_trace():
    pytest.importorskip("opentelemetry.sdk", reason="needs the 'otel' extra")
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("test")

    def write(logger):
        token = REQUEST_ID.set("traced-1")
        try:
            with tracer.start_as_current_span("rerank") as span:
                logger.warning("slow")
                trace_ids.append(f"{span.get_span_context().trace_id:032x}")
        finally:
            REQUEST_ID.reset(token)

    trace_ids: list[str] = []
    (line,) = _logged(JsonLines(), write)
    assert json.loads(line)["trace_id"] == trace_ids[0]


def test_a_log_format_that_is_not_text_or_json_is_refused_naming_it():
    with pytest.raises(ValueError, match="log_format: expected one of text, json; got 'xml'"):
        serve(ServerSettings(), log_format="xml")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_every_line_of_a_real_service_is_json_with_the_request_on_its_access_line(
    tmp_path, workers
):
    settings = tmp_path / "service.toml"
    settings.write_text('[server]\ndefault = "bm25"\n[pipelines.bm25]\nreranker = "bm25"\n')
    port, out, err = _free_port(), tmp_path / "stdout.log", tmp_path / "stderr.log"
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "rerankit", "serve", "--settings", str(settings)]
    flags = ["--port", str(port), "--log-format", "json", "--workers", str(workers)]
    env = {k: v for k, v in os.environ.items() if k != "RERANKIT_API_KEYS"}  # (a warning)
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [*command, *flags, "--shutdown-delay", "0"],
            env={**env, "PYTHONPATH": str(REPO / "src")},
            stdout=stdout,
            stderr=stderr,
        )
    try:
        wait_process_ready(proc, url, err)
        r = httpx.post(f"{url}/v2/rerank", json=ASK, headers={"X-Request-Id": "order-7731"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "order-7731"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = {name: path.read_text().splitlines() for name, path in [("out", out), ("err", err)]}
    parsed = {name: [json.loads(line) for line in text] for name, text in lines.items()}
    for line in parsed["out"] + parsed["err"]:
        assert ISO.fullmatch(line["time"]) and line["level"] in {"INFO", "WARNING"}, line
        assert isinstance(line["logger"], str) and isinstance(line["message"], str), line
    access = [line for line in parsed["out"] if line["logger"] == "uvicorn.access"]
    (rerank,) = [line for line in access if line.get("path") == "/v2/rerank"]  # (and /ready)
    assert rerank["request_id"] == "order-7731" and rerank["status"] == 200, rerank
    assert rerank["method"] == "POST" and rerank["client"].startswith("127.0.0.1:"), rerank
    assert all(line.get("request_id") and line.get("status") for line in access), access
    said = [(line["logger"], line["message"]) for line in parsed["err"]]
    ready = ("rerankit.server.pipeline", "pipeline 'bm25' ready")
    assert said.count(ready) == workers, said  # rerankit's lines, from each worker
    assert ("uvicorn.error", "Application startup complete.") in said, said
    open_service = [line for line in parsed["err"] if "no API keys" in line["message"]]
    assert len(open_service) == workers and open_service[0]["level"] == "WARNING"


@pytest.mark.parametrize("kind", ["text", "json"])
def test_no_line_above_debug_holds_a_providers_error_text_whoever_logs_it(kind):
    """The pages promise a provider's error answer (it may quote the prompt) is logged as
    its status and length: the formatters hold it for every logger, not only the sites
    that remember to; at debug level it is logged as it came."""
    from rerankit.server.logs import JsonLines, log_formatter

    formatter = JsonLines() if kind == "json" else log_formatter()
    said = "provider at http://x answered HTTP 400: the prompt was 'my secret query'"
    warned = logging.LogRecord("rerankit.any", logging.WARNING, __file__, 1, said, None, None)
    line = formatter.format(warned)
    assert "my secret query" not in line and "characters of its text" in line, line
    debug = logging.LogRecord("rerankit.any", logging.DEBUG, __file__, 1, said, None, None)
    assert "my secret query" in formatter.format(debug)
