"""What the service says when an LLM judge's provider fails for every document: the 502's
message, ``/info``'s error and the ``failing`` 503 read `the LLM provider failed for every
document: document 0: no score (... answered HTTP 500 ...); scored 0.0 (and 3 more
warnings)`. The library's result scores such a document 0.0; the service sends no score
at all, so an operator read of a score that was never given."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient
from judges import judge_at

from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.server import ServerSettings, create_app
from rerankit.server.state import FAILING_AFTER

MODE = {"now": "ok"}


def _reply(request) -> Reply:
    return Reply(status=500, text="provider down") if MODE["now"] == "500" else Reply("7")


def test_a_provider_down_is_said_without_a_score_the_service_never_sent():
    MODE["now"] = "ok"
    with FakeLLMServer(responder=_reply) as provider:
        settings = ServerSettings(
            pipelines={"judge": {"scorer": judge_at(provider)}}, default="judge"
        )
        with TestClient(create_app(settings)) as client:
            deadline = time.time() + 60
            while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
                time.sleep(0.02)
            MODE["now"] = "500"
            ask = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
            said = []
            for _ in range(FAILING_AFTER + 1):  # the last one: the failing pipeline's 503
                answer = client.post("/v2/rerank", json=ask)
                said.append(answer.json()["message"])
            error = client.get("/info").json()["pipelines"]["judge"]["error"]
    assert said[0].startswith("pipeline 'judge': the LLM provider failed for every document: ")
    assert "answered HTTP 500" in said[0] and said[-1].startswith("pipeline 'judge' is failing")
    for text in [*said, error]:
        assert "scored 0.0" not in text, text
        assert "more warnings)" in text, text  # the other document, and the summary
