"""A failed LLM call's message names where the call went (the provider, the address and the
model) and what happened in words, never the key or the query; a provider that keeps
failing is logged at INFO once per batch, not once per document and retry. Through the
real openai SDK against a local server that speaks its protocol."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit._threads import work_scope
from rerankit.errors import TransientProviderError
from rerankit.llm import CallRunner, LLMRequest, OpenAIClient, RetryPolicy, Usage
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer

KEY = "sk-do-not-show-this-key"
QUERY = "which doc mentions the private query words?"
DOCS = ["alpha doc", "beta doc"]
PATIENT = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=10.0)


def _free_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _all_said(result, caplog) -> str:
    return "\n".join([*result.warnings, *(r.getMessage() for r in caplog.records)])


@pytest.mark.parametrize("scorer_class", [LLMPointwiseScorer, LLMListwiseScorer])
def test_a_refused_connection_names_the_provider_address_and_model(scorer_class, caplog):
    port = _free_port()
    # credentials and a query in base_url are never shown: either may hold a key
    base_url = f"http://user:pw-hidden@127.0.0.1:{port}/v1/?token=tok-hidden"
    client = OpenAIClient(base_url=base_url, model="x", api_key=KEY)
    scorer = scorer_class(client, cache=False, retry=PATIENT)
    with caplog.at_level(logging.DEBUG, logger="rerankit"):
        result = ScorerReranker(scorer).rerank(QUERY, DOCS)
    said = f"openai at http://127.0.0.1:{port}/v1 (model 'x'): connection refused"
    assert said in result.warnings[0], result.warnings
    assert all("llm_failed:connection" in r.flags for r in result)  # the kind as before
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(said in m for m in warned), warned  # the scorer's log line says it too
    everything = _all_said(result, caplog)
    assert "APIConnectionError" not in "\n".join(result.warnings)
    for secret in (KEY, QUERY, "pw-hidden", "tok-hidden"):
        assert secret not in everything


def test_an_error_answer_and_a_timeout_name_where_they_came_from():
    replies = {"alpha doc": Reply(status=503, text="overloaded")}
    slow = Reply(text='{"id": "1", "score": 5}', delay=2.0)
    with FakeLLMServer(responder=lambda r: replies.get(_doc(r), slow)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key=KEY)
        policy = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=0.5)
        result = ScorerReranker(LLMPointwiseScorer(client, cache=False, retry=policy)).rerank(
            QUERY, DOCS
        )
        at = f"openai at {server.openai_url} (model 'm')"
    by_text = {r.text: r for r in result}
    # each says how many attempts it made (retry.attempts = 1 here)
    assert (
        f"document 0: no score ({at} answered HTTP 503: overloaded (after 1 attempt)); scored 0.0"
        in result.warnings
    ), result.warnings
    assert (
        f"document 1: no score ({at}: no answer within 0.5 s (after 1 attempt)); scored 0.0"
        in result.warnings
    ), result.warnings
    assert "llm_failed:server_error" in by_text["alpha doc"].flags
    assert "llm_failed:timeout" in by_text["beta doc"].flags


def _doc(request) -> str | None:
    return next((d for d in DOCS if f'"{d}"' in request.prompt), None)


def test_without_a_base_url_the_message_names_the_provider_s_own_address(monkeypatch):
    """No call is made: the request's deadline has passed before it, and the message still
    says where it would have gone."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    runner = CallRunner(OpenAIClient(api_key=KEY, model="m"), PATIENT)

    async def call():
        with work_scope(deadline=time.monotonic() - 1.0):
            return await runner.call(LLMRequest("x"), Usage())

    with pytest.raises(TransientProviderError) as caught:
        asyncio.run(call())
    assert str(caught.value) == (
        "openai at https://api.openai.com/v1 (model 'm'): not called: its request's deadline "
        "has passed"
    )
    assert caught.value.kind == "timeout"


def test_a_provider_that_keeps_failing_is_logged_once_per_batch(caplog):
    """Four documents, three attempts each: eight retries, one INFO line per rerank (the
    first retry, naming where and the HTTP status), every retry at DEBUG with the answer's
    text, which may quote the request (a tenant's query): it stays out of INFO."""
    retry = RetryPolicy(attempts=3, min_wait=0.0, max_wait=0.0, timeout=10.0)
    docs = ["alpha doc", "beta doc", "gamma doc", "delta doc"]

    def echoes(request):  # as many providers' errors do
        return Reply(status=503, text=f"overloaded: {request.prompt}")

    with FakeLLMServer(responder=echoes) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key=KEY)
        reranker = ScorerReranker(LLMPointwiseScorer(client, cache=False, retry=retry))
        with caplog.at_level(logging.DEBUG, logger="rerankit.llm.resilience"):
            results = [reranker.rerank(QUERY, docs) for _ in range(2)]
        at = f"openai at {server.openai_url} (model 'm') answered HTTP 503"
    assert [r.usage["retries"] for r in results] == [8, 8]
    ours = [r for r in caplog.records if r.name == "rerankit.llm.resilience"]
    info = [r.getMessage() for r in ours if r.levelno == logging.INFO]
    assert len(info) == 2, info  # one per batch
    said = f"{at} (its text at debug level); retry 1 in 0.0 s"
    assert all(m.startswith(said) and QUERY not in m for m in info), info
    debug = [r.getMessage() for r in ours if r.levelno == logging.DEBUG]
    assert len(debug) == 16 and all(m.startswith(f"{at}: overloaded") for m in debug), debug
    assert all(QUERY in m for m in debug)


def test_gemini_names_where_its_call_went_too():
    pytest.importorskip("google.genai", reason="needs the 'gemini' extra")
    from rerankit.llm import GeminiClient

    port = _free_port()
    client = GeminiClient(api_key=KEY, model="g", base_url=f"http://127.0.0.1:{port}")
    result = ScorerReranker(LLMPointwiseScorer(client, cache=False, retry=PATIENT)).rerank(
        QUERY, DOCS
    )
    said = f"gemini at http://127.0.0.1:{port} (model 'g'): connection refused"
    assert said in result.warnings[0], result.warnings
    assert all("llm_failed:connection" in r.flags for r in result)
    with FakeLLMServer(responder=lambda r: Reply(status=429, text="slow down")) as server:
        client = GeminiClient(api_key=KEY, model="g", base_url=server.url)
        result = ScorerReranker(LLMPointwiseScorer(client, cache=False, retry=PATIENT)).rerank(
            QUERY, DOCS
        )
        said = f"gemini at {server.url} (model 'g') answered HTTP 429: slow down"
    assert said in result.warnings[0], result.warnings
    assert KEY not in "\n".join(result.warnings)
