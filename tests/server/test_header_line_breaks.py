"""A warning that holds a line break (a provider's error text often does) reaches the
client as one header line: the answer is the degraded 200 the pages promise, never a
dropped connection (an HTTP server refuses a header value with a line break)."""

from __future__ import annotations

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("openai", reason="needs the 'openai' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from judges import after_bm25, judge_at  # noqa: E402

from rerankit.llm.testing import FakeLLMServer, Reply  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402

DOCS = ["solar panels on roofs", "wind farms at sea", "solar power for homes"]


#: the provider answers the warm-up, then refuses every call with a multi-line error
FAILING = {"now": False}


def _reply(request) -> Reply:
    if not FAILING["now"]:
        return Reply(text='{"score": 9}')
    return Reply(status=400, text="bad request:\nline two\r\nthree")  # real line breaks


def _settings(provider: FakeLLMServer) -> ServerSettings:
    """A service of one cascade: BM25 keeping 2, then an LLM judge at ``provider`` (one
    attempt, no cache)."""
    cascade = after_bm25(judge_at(provider))
    return ServerSettings(pipelines={"cascade": cascade}, default="cascade")


def test_a_provider_error_with_line_breaks_is_a_degraded_200_with_one_header_line(live_server):
    FAILING["now"] = False  # the warm-up answered, then every call refused
    with FakeLLMServer(responder=_reply) as provider:
        server = live_server(_settings(provider))
        try:
            FAILING["now"] = True
            ask = {"model": "cascade", "query": "solar power", "documents": DOCS}
            for path in ("/v2/rerank", "/rerank"):
                body = ask if path == "/v2/rerank" else {**ask, "documents": DOCS}
                r = httpx.post(f"{server.url}{path}", json=body, timeout=30)
                assert r.status_code == 200, r.text
                assert r.headers["x-rerankit-degraded"] == "true"
                said = r.headers["x-rerankit-warnings"]
                assert "\n" not in said and "\r" not in said and said
        finally:
            server.stop()


def test_a_warm_up_that_fell_back_logs_the_providers_status_not_its_text(live_server, caplog):
    """The pages promise the log holds a provider's error answer as its status and length
    only (it may quote the prompt)."""
    import logging

    caplog.set_level(logging.INFO, logger="rerankit")
    FAILING["now"] = True
    with FakeLLMServer(responder=_reply) as provider:
        server = live_server(_settings(provider))
        server.stop()
    said = [r.getMessage() for r in caplog.records if "warm-up" in r.getMessage()]
    assert said, [r.getMessage() for r in caplog.records]
    assert not any("line two" in line for line in said), said
    assert any("characters of its text" in line for line in said), said
