"""The service started from Python in the background (a notebook, a web app's process):
``rerankit.server.start`` takes a free port, says which, serves two pipelines and stops on
``.stop()`` (``serve`` runs until SIGINT or SIGTERM, which a caller cannot send its own
process without stopping itself)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from rerankit.errors import RerankitError
from rerankit.server import RunningService, ServerSettings, start


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _settings() -> ServerSettings:
    return ServerSettings(
        pipelines={"lexical": {"reranker": "bm25"}, "overlap": {"reranker": "jaccard"}},
        default="lexical",
    )


def test_start_serves_two_pipelines_on_a_free_port_and_stop_ends_it():
    service = start(_settings())
    assert isinstance(service, RunningService) and service.port > 0 and service.running
    assert service.url == f"http://127.0.0.1:{service.port}"
    assert service.wait_ready(timeout=60)["status"] == "ready"
    docs = ["wind farms at sea", "solar panels on roofs"]
    for model in ("lexical", "overlap"):
        body = {"model": model, "query": "solar panels", "documents": docs}
        answer = _post(f"{service.url}/v2/rerank", body)
        assert [r["index"] for r in answer["results"]] == [1, 0]
    service.stop(timeout=60)
    assert not service.running
    with pytest.raises(urllib.error.URLError):  # nothing listens there any more
        urllib.request.urlopen(f"{service.url}/ready", timeout=5)
    service.stop()  # stopping again does nothing


def test_a_context_manager_stops_it_and_a_port_in_use_is_an_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RerankitError, match=r"did not start on 127\.0\.0\.1:"):
            start(_settings(), port=taken.getsockname()[1])
    with start(_settings()) as service:
        assert service.wait_ready(timeout=60)["status"] == "ready"
    assert not service.running
