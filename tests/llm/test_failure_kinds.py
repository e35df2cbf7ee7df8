"""How an LLM judgment failed is said per document as a flag, ``llm_failed:<kind>`` beside
``llm_failed``, and not only in the warning's text: through the real openai SDK against a
local server that speaks its protocol."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.errors import FAILURE_KINDS, PermanentProviderError, TransientProviderError
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer

DOCS = ["alpha doc", "beta doc"]
NO_RETRY = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=0.5)
# for a test of anything but a timeout: a loaded machine must not turn it into one
PATIENT = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=10.0)


def _rerank(scorer_class, reply: Reply, **options):
    with FakeLLMServer(responder=lambda request: reply) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="test-key")
        scorer = scorer_class(client, cache=False, retry=NO_RETRY, **options)
        return ScorerReranker(scorer).rerank("which doc?", DOCS)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(status=429, text="slow down"), "rate_limit"),
        (Reply(status=401, text="bad key"), "auth"),
        (Reply(status=503, text="overloaded"), "server_error"),
        (Reply(status=404, text="no such model"), "bad_request"),
        (Reply(text='{"score": 7}', delay=2.0), "timeout"),
        (Reply(text="I cannot rate this."), "unreadable"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_pointwise_failure_is_flagged_with_its_kind(reply, kind):
    result = _rerank(LLMPointwiseScorer, reply)
    assert kind in FAILURE_KINDS
    for r in result:  # the flag a caller checks, and how, beside it
        assert "llm_failed" in r.flags and f"llm_failed:{kind}" in r.flags, r.flags
        assert [f for f in r.flags if f.startswith("llm_failed:")] == [f"llm_failed:{kind}"]
    assert result.degraded and result.unusable  # as before: every document failed
    assert any(w.startswith("document 0: no score (") for w in result.warnings)  # kept


def test_a_provider_that_cannot_be_reached_is_a_connection_failure():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAIClient(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key="k")
    scorer = LLMPointwiseScorer(client, cache=False, retry=PATIENT)
    result = ScorerReranker(scorer).rerank("which doc?", DOCS)
    assert all("llm_failed:connection" in r.flags for r in result), [r.flags for r in result]


def test_a_listwise_window_whose_call_failed_is_flagged_with_its_kind():
    result = _rerank(LLMListwiseScorer, Reply(status=429, text="slow down"), window=2, step=1)
    assert all({"llm_failed", "llm_failed:rate_limit"} <= set(r.flags) for r in result)
    assert any("call failed (" in w for w in result.warnings)
    # an unreadable window is a failure of kind unreadable, as a pointwise answer is, and
    # keeps its older flag, llm_unreadable
    result = _rerank(LLMListwiseScorer, Reply(text="the first one"), window=2, step=1)
    for r in result:
        assert r.flags == ("llm_failed", "llm_failed:unreadable", "llm_unreadable"), r.flags
    assert any("unreadable answer (" in w for w in result.warnings)
    assert result.degraded and result.unusable == "the LLM provider failed for every document"


def test_a_provider_error_s_kind_follows_its_status_unless_given():
    assert TransientProviderError("x", status=408).kind == "timeout"
    assert TransientProviderError("x", status=500).kind == "server_error"
    assert PermanentProviderError("x", status=403).kind == "auth"
    assert PermanentProviderError("x", status=400).kind == "bad_request"
    assert TransientProviderError("x").kind == "error"
    assert TransientProviderError("x", kind="connection").kind == "connection"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("text/html; charset=utf-8", "<html>proxy error</html>"), ("application/json", "<html>")],
)
def test_a_body_that_is_not_json_is_unreadable_naming_the_server(content_type, body):
    """A proxy's HTML page answered with 200: a failure with its kind, saying the server did
    not answer JSON (and its content type), not an internal AttributeError."""
    reply = Reply(text=body, content_type=content_type)
    with FakeLLMServer(responder=lambda request: reply) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="k")
        scorer = LLMPointwiseScorer(client, cache=False, retry=PATIENT)
        result = ScorerReranker(scorer).rerank("which doc?", DOCS)
        url = server.openai_url
    for r in result:
        assert {"llm_failed", "llm_failed:unreadable"} <= set(r.flags), r.flags
    message = result.warnings[0]
    assert f"openai at {url} (model 'm'): the server did not answer JSON" in message, message
    assert f"(Content-Type {content_type})" in message and "<html>" in message, message
    assert "AttributeError" not in " ".join(result.warnings)
    assert result.usage["failures"] == 2 and result.usage["retries"] == 0  # not retried
    assert result.unusable == "the LLM provider failed for every document"


def test_a_cut_off_json_body_says_so_and_is_retried_and_the_warning_counts_attempts():
    """A 200 JSON answer cut off mid-body (a proxy or a worker closed the connection): the
    warning says the answer was cut off or not valid JSON, asks nothing about base_url, and
    the call is retried (the next answer is usually whole), the warning saying how many
    attempts it made; an error that is not transient says it was not retried."""
    cut = Reply(
        text='{"choices": [{"message": {"content": "{\\"id\\":', content_type="application/json"
    )
    whole = Reply(text='{"id": "0", "score": 6}')
    replies = iter([cut, whole])
    retry = RetryPolicy(attempts=2, min_wait=0.0, max_wait=0.0, timeout=10.0)
    with FakeLLMServer(responder=lambda request: next(replies, cut)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="k")
        scorer = LLMPointwiseScorer(client, cache=False, retry=retry)
        healed = ScorerReranker(scorer).rerank("which doc?", DOCS[:1])
        failed = ScorerReranker(scorer).rerank("which doc?", DOCS[:1])
        at = f"openai at {server.openai_url} (model 'm')"
    assert healed.results[0].score == 6.0 and not healed.degraded  # the retry got it whole
    assert healed.usage["retries"] == 1 and healed.usage["calls"] == 2
    (said,) = [w for w in failed.warnings if w.startswith("document 0:")]
    assert said.startswith(
        f"document 0: no score ({at}: the server's answer was cut off or is not valid JSON "
        '(Content-Type application/json, 46 bytes): \'{"choices"'
    ), said
    assert said.endswith("(after 2 attempts)); scored 0.0"), said
    assert "base_url" not in said and "did not answer JSON" not in said
    assert failed.results[0].flags == ("llm_failed", "llm_failed:unreadable")
    assert failed.usage["calls"] == 2 and failed.usage["failures"] == 1

    result = _rerank(LLMPointwiseScorer, Reply(status=401, text="bad key"))
    assert (
        "bad key (after 1 attempt, not retried: this failure is not transient)"
        in (result.warnings[0])
    ), result.warnings


def test_a_gemini_answer_that_is_not_json_is_an_unreadable_failure():
    pytest.importorskip("google.genai", reason="needs the 'gemini' extra")
    from rerankit.llm import GeminiClient

    reply = Reply(text="<html>proxy error</html>", content_type="text/html")
    with FakeLLMServer(responder=lambda request: reply) as server:
        client = GeminiClient(api_key="k", model="m", base_url=server.url)
        scorer = LLMPointwiseScorer(client, cache=False, retry=PATIENT)
        result = ScorerReranker(scorer).rerank("which doc?", DOCS)
        url = server.url
    assert all("llm_failed:unreadable" in r.flags for r in result), [r.flags for r in result]
    said = f"gemini at {url} (model 'm'): the server did not answer JSON"
    assert said in result.warnings[0], result.warnings


def test_a_404_from_a_base_url_without_a_version_asks_whether_it_ends_in_v1():
    reply = Reply(status=404, text="no such path /chat/completions")
    with FakeLLMServer(responder=lambda request: reply) as server:
        url, results = server.url, []
        for base_url in (url, server.openai_url):  # without /v1, and with it
            client = OpenAIClient(base_url=base_url, model="m", api_key="k")
            scorer = LLMPointwiseScorer(client, cache=False, retry=PATIENT)
            results.append(ScorerReranker(scorer).rerank("which doc?", DOCS))
    bare, versioned = results
    assert "does base_url end in /v1?" in bare.warnings[0], bare.warnings
    assert f"{url}/chat/completions" in bare.warnings[0]
    assert all("llm_failed:bad_request" in r.flags for r in bare)  # the kind as before
    assert not any("/v1?" in w for w in versioned.warnings)  # an unknown model, say
