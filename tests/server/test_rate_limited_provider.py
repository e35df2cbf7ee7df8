"""A served LLM judge whose provider answers 429 (its rate limit) for every document: the
client gets 429 with a Retry-After taken from the provider's (capped at 60 s), and the
pipeline does not turn ``failing`` (the provider is up, only limiting), where it got a
502 without Retry-After and three of them made the pipeline ``failing``. A provider that
fails otherwise (a 500, or a 429 beside a 500) is still a 502, counted."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient
from judges import judge_at

from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.server import ServerSettings, create_app
from rerankit.server.state import FAILING_AFTER

#: what the provider answers a request that is not the warm-up's
MODE = {"now": "ok"}
DOCS = ["solar panels on roofs", "wind farms at sea", "solar power for homes"]
ASK = {"model": "judge", "query": "solar power", "documents": DOCS}


def _reply(request) -> Reply:
    mode = "ok" if "warm-up document" in request.prompt else MODE["now"]
    if mode.startswith("429"):  # "429" with no Retry-After, "429:7" with one of 7 s
        _, _, after = mode.partition(":")
        return Reply(
            status=429, text="rate limited", headers={"Retry-After": after} if after else {}
        )
    if mode == "mixed":  # the first document's call limited, the others' failing
        limited = "solar panels" in request.prompt
        return Reply(status=429 if limited else 500, text="rate limited or down")
    return Reply(text='{"score": 9}')


@pytest.fixture(scope="module")
def client():
    with FakeLLMServer(responder=_reply) as provider:
        judge = judge_at(provider)
        settings = ServerSettings(
            pipelines={"judge": {"scorer": judge}},
            default="judge",
            timeout=10.0,
            failing_probe_seconds=0,
        )
        with TestClient(create_app(settings)) as c:
            deadline = time.time() + 60
            while c.get("/ready").json()["status"] == "loading" and time.time() < deadline:
                time.sleep(0.02)
            yield c
    MODE["now"] = "ok"


def _state(client) -> str:
    return client.get("/info").json()["pipelines"]["judge"]["state"]


@pytest.mark.parametrize(("mode", "after"), [("429:7", "7"), ("429", "1"), ("429:500", "60")])
def test_a_rate_limited_provider_is_a_429_with_its_retry_after_and_not_failing(client, mode, after):
    MODE["now"] = mode
    try:
        for _ in range(FAILING_AFTER + 1):
            r = client.post("/v2/rerank", json=ASK)
            assert r.status_code == 429, r.text
            assert r.headers["retry-after"] == after
            message = r.json()["message"]
            assert message.startswith("pipeline 'judge': the LLM provider failed for every")
            assert "answered HTTP 429: rate limited" in message
        assert _state(client) == "ready"
        assert "failing" not in client.get("/ready").json()
    finally:
        MODE["now"] = "ok"
    assert client.post("/v2/rerank", json=ASK).status_code == 200


def test_the_provider_s_retry_after_is_said_in_the_warning(client):
    MODE["now"] = "429:7"
    try:
        message = client.post("/v2/rerank", json=ASK).json()["message"]
    finally:
        MODE["now"] = "ok"
    assert "(after 1 attempt; its last answer said Retry-After: 7 s)" in message


def test_a_provider_failing_otherwise_is_still_a_502_that_counts(client):
    MODE["now"] = "mixed"
    try:
        for _ in range(FAILING_AFTER):
            r = client.post("/v2/rerank", json=ASK)
            assert r.status_code == 502, r.text
            assert "retry-after" not in r.headers
        assert _state(client) == "failing"
    finally:
        MODE["now"] = "ok"
    assert client.post("/v2/rerank", json=ASK).status_code == 200
    assert _state(client) == "ready"
