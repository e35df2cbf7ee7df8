"""A client bounds its request's time on the server with ``x-rerankit-timeout: SECONDS``:
it shortens the service's ``timeout`` for that request, never lengthens it; a value that is
not a positive number of seconds is a 400 naming the header; the 504 it gets says the
deadline it asked for, and such 504s do not turn the pipeline ``failing``."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.errors import ServiceError
from rerankit.rerankers import ScorerReranker
from rerankit.server import ServerSettings, create_app
from rerankit.server.request_timeout import HEADER, asked_timeout
from rerankit.server.shedding import too_big
from rerankit.server.state import FAILING_AFTER


class _Slow:
    """0.25 s per document, yielding between them (a cancelled rerank stops at once)."""

    name = "slow"

    async def score(self, query, docs, **context):
        for _ in docs:
            await asyncio.sleep(0.25)
        return np.arange(len(docs), dtype=float)


register_reranker("test-request-timeout-slow", lambda: ScorerReranker(_Slow()))


def test_the_header_can_only_shorten_the_service_s_timeout():
    assert asked_timeout(None, 30) is None
    assert asked_timeout("2", 30) == 2.0
    assert asked_timeout(" 0.25 ", 30) == 0.25
    assert asked_timeout("30", 30) is None  # the service's own
    assert asked_timeout("3600", 30) is None  # never longer
    for bad in ("0", "-1", "", "abc", "2s", "inf", "nan"):
        with pytest.raises(ServiceError) as refused:
            asked_timeout(bad, 30)
        assert refused.value.status == 400 and refused.value.code == "invalid_header"
        assert refused.value.details == {"header": HEADER}
        assert refused.value.message.startswith(f"{HEADER}: {bad!r} is not a number of seconds")


def test_a_request_too_large_for_its_own_deadline_is_told_so():
    said = too_big("p", 0.5, 10, 2.0, asked=True).message  # 5 s of work, a 2 s deadline
    assert "more than the 2 s deadline its x-rerankit-timeout header set" in said
    assert said.endswith("or a longer x-rerankit-timeout")
    assert too_big("p", 0.5, 10, 2.0).message.endswith("or raise the service's deadline")


def test_a_request_gets_the_deadline_it_asked_for(wait_ready):
    settings = ServerSettings(
        pipelines={"slow": "test-request-timeout-slow"}, default="slow", timeout=20
    )
    ask = {"query": "q", "documents": ["a", "b", "c", "d"]}  # 1 s of work
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        bad = client.post("/v2/rerank", json=ask, headers={HEADER: "soon"})
        assert bad.status_code == 400 and bad.json()["header"] == HEADER
        for _ in range(FAILING_AFTER):
            start = time.monotonic()
            answer = client.post("/v2/rerank", json=ask, headers={HEADER: "0.3"})
            took = time.monotonic() - start
            assert answer.status_code == 504, answer.text
            body = answer.json()
            assert body["code"] == "deadline_exceeded" and body["timeout"] == 0.3
            assert body["message"] == (
                "pipeline 'slow': no answer within the 0.3 s deadline its x-rerankit-timeout "
                "header set"
            )
            assert took < 0.9  # not the 1 s of work, nor the service's 20 s
        # the client's budget, not the pipeline's failure: it is not failing
        state = client.get("/info").json()["pipelines"]["slow"]["state"]
        assert state == "ready"
        fine = client.post("/v2/rerank", json=ask, headers={HEADER: "15"})
        assert fine.status_code == 200, fine.text


def test_a_call_s_own_timeout_never_lengthens_the_service_s():
    """One rule for a request's time, wherever it is read (its deadline, shedding, the
    refusal's text and whether it counts towards ``failing``): a call's own timeout counts
    only when shorter than the service's, as the header's does."""
    from rerankit.server.formats.base import Call
    from rerankit.server.service import Service
    from rerankit.types import Document

    async def scenario():
        service = Service(
            ServerSettings(
                pipelines={"slow": "test-request-timeout-slow"}, default="slow", timeout=0.8
            )
        )
        await service.warm_up()  # 0.5 s
        docs = [Document(text=t) for t in "abcdefgh"]  # 2 s of work
        errors = []
        for own in (0.4, 5.0):  # shorter: its own; longer: the service's 0.8 s
            with pytest.raises(ServiceError) as refused:
                await service.run("v2", Call(query="q", documents=docs, model="slow", timeout=own))
            errors.append(refused.value)
        service.stop_retries()
        return errors

    shorter, longer = asyncio.run(scenario())
    assert shorter.status in (413, 504) and shorter.details["timeout"] == 0.4
    assert "x-rerankit-timeout header set" in shorter.message
    assert longer.status in (413, 504) and longer.details["timeout"] == 0.8
    assert "header set" not in longer.message
