"""A pipeline that loaded fine and whose requests then keep failing (a provider down or
stalled mid-day) says so: ``failing`` in /info and /ready's body, rerankit_pipeline_healthy
at 0, one WARNING when it turns and one INFO when a request is answered again; a request
that ran out of time is a 504 naming the pipeline; and every message a failing pipeline
shows is one line."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import ScoreBatch
from rerankit.server import ServerSettings, create_app
from rerankit.server.state import FAILING_AFTER, MESSAGE_CHARS

#: what the "live" pipeline's provider does now: answer, refuse, or stall
PROVIDER = {"mode": "ok"}


class _Provider:
    """An LLM-like scorer: every document flagged ``llm_failed`` with a warning of its own
    while the provider refuses (as an LLM judge reports it), asleep while it stalls."""

    name = "judge"

    async def score(self, query, docs, **context):
        mode = PROVIDER["mode"] if query != "warm up" else "ok"
        if mode == "stall":
            await asyncio.sleep(30)
        if mode == "refuse":
            return ScoreBatch(
                values=np.zeros(len(docs)),
                flags={i: ["llm_failed"] for i in range(len(docs))},
                warnings=[
                    f"document {i}: no score (openai: APIConnectionError: Connection error.)"
                    for i in range(len(docs))
                ]
                + ["every LLM call failed; input order kept"],
            )
        return np.arange(len(docs), dtype=float)


class _Broken:
    """A scorer whose every call fails with a long, many-line error."""

    name = "broken"

    async def score(self, query, docs, **context):
        raise RuntimeError("connection refused\n" + "  a traceback line\n" * 40)


register_reranker("test-provider", lambda: ScorerReranker(_Provider()))
register_reranker("test-broken-provider", lambda: ScorerReranker(_Broken()))

ASK = {"model": "live", "query": "solar power", "documents": ["solar panels", "wind"]}


def _gauge(client, name: str, model: str) -> str:
    line = next(
        line
        for line in client.get("/metrics").text.splitlines()
        if line.startswith(f'{name}{{model="{model}"}}')
    )
    return line.split()[-1]


def test_a_pipeline_whose_requests_keep_failing_says_so_until_one_is_answered(caplog):
    settings = ServerSettings(
        pipelines={"live": "test-provider", "broken": "test-broken-provider", "bm25": "bm25"},
        default="bm25",
        timeout=0.5,
        ready_when="any",
    )
    PROVIDER["mode"] = "ok"
    caplog.set_level(logging.DEBUG, logger="rerankit.server")
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json().get("loading") and time.time() < deadline:
            time.sleep(0.02)
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "1.0"

        # a pipeline that failed to load says why in one line, not the paragraph
        broken = client.get("/ready").json()["failed"]["broken"]
        assert "connection refused" in broken and "\n" not in broken
        assert len(broken) <= MESSAGE_CHARS

        # failures short of FAILING_AFTER in a row, then an answer: nothing turns
        PROVIDER["mode"] = "refuse"
        for _ in range(FAILING_AFTER - 1):
            assert client.post("/v2/rerank", json=ASK).status_code == 502
        PROVIDER["mode"] = "ok"
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        PROVIDER["mode"] = "refuse"
        for _ in range(FAILING_AFTER - 1):
            assert client.post("/v2/rerank", json=ASK).status_code == 502
        assert client.get("/info").json()["pipelines"]["live"]["state"] == "ready"

        # the next failure in a row turns it: the 502 is one line, the kind and first cause
        r = client.post("/v2/rerank", json=ASK)
        assert r.status_code == 502
        assert r.json()["message"] == (
            "pipeline 'live': the LLM provider failed for every document: document 0: no "
            "score (openai: APIConnectionError: Connection error.) (and 2 more warnings)"
        )
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["state"] == "failing" and entry["loaded"] is True
        assert entry["error"].startswith("the LLM provider failed for every document: ")
        assert entry["failed_requests"] == FAILING_AFTER
        assert entry["failing_since"].endswith("Z")
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "0.0"
        assert _gauge(client, "rerankit_pipeline_ready", "live") == "1.0"  # it still serves
        assert _gauge(client, "rerankit_pipeline_failures_total", "live") == "1.0"
        ready = client.get("/ready")  # the replica stays in the balancer, and says why
        assert ready.status_code == 200 and ready.json()["failing"] == {"live": entry["error"]}
        one = client.get("/ready", params={"model": "live"})
        assert one.status_code == 200 and one.json()["status"] == "failing"
        assert one.json()["failed_requests"] == FAILING_AFTER

        # a stalled provider: the request's deadline answer names the pipeline, is a 504
        # (it ran: a balancer does not send it to another replica to wait as long) and
        # counts as one more failure
        PROVIDER["mode"] = "stall"
        r = client.post("/v2/rerank", json=ASK)
        assert r.status_code == 504 and r.headers["retry-after"] == "1"
        assert r.json()["message"] == "pipeline 'live': no answer within the 0.5 s deadline"
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["error"] == "no answer within the 0.5 s deadline"
        assert entry["failed_requests"] == FAILING_AFTER + 1

        # the first answer ends it
        PROVIDER["mode"] = "ok"
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        assert client.get("/info").json()["pipelines"]["live"]["state"] == "ready"
        assert "failing" not in client.get("/ready").json()
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "1.0"

    said = [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "rerankit.server.pipeline" and "'live'" in r.getMessage()
    ]
    warnings = [m for level, m in said if level == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"pipeline 'live' is failing: its last {FAILING_AFTER} requests got no answer"
    )
    infos = [m for level, m in said if level == "INFO" and "answers again" in m]
    assert len(infos) == 1 and f"after {FAILING_AFTER + 1} failed requests" in infos[0]
    # every warning of the failures is in the log, at debug level
    assert any(
        level == "DEBUG" and "every LLM call failed; input order kept" in m for level, m in said
    )
    PROVIDER["mode"] = "ok"
