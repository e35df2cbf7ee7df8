"""The judgment cache's key holds the server's address: the same model name on another
server never reuses the first one's answers, and the provider's own address keeps the keys
it always had (existing caches of the default endpoints keep hitting). A pointwise judgment
is kept per document, whatever ``docs_per_call`` grouped it with; a listwise rejection is an
answer and is kept too (scorers.md says both)."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.cache import JudgmentCache
from rerankit.llm import OpenAIClient
from rerankit.llm.base import LLMRequest
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer


def _score(n: int):
    return lambda request: Reply(text=f'{{"id": "0", "score": {n}}}')


def test_the_same_model_on_another_server_is_asked_again(tmp_path):
    cache = JudgmentCache(tmp_path / "judgments.sqlite")
    with FakeLLMServer(responder=_score(2)) as one, FakeLLMServer(responder=_score(9)) as two:
        first, second = (
            ScorerReranker(
                LLMPointwiseScorer(OpenAIClient(base_url=s.openai_url, model="m"), cache=cache)
            ).rerank("q", ["a doc"])
            for s in (one, two)
        )
    assert len(two.requests) == 1 and second.usage["cache_hits"] == 0
    assert (first[0].score, second[0].score) == (2.0, 9.0)


def _key(monkeypatch, base_url: str | None) -> str:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = OpenAIClient(api_key="k", model="m", base_url=base_url)
    return LLMPointwiseScorer(client, cache=False).cache_key(LLMRequest(prompt="p", system="s"))


def test_the_providers_own_address_keeps_the_key_it_had(monkeypatch):
    before = JudgmentCache.key(  # the key as it was built before addresses were in it
        provider="openai",
        model="m",
        system="s",
        prompt="p",
        schema=None,
        temperature=0.0,
        max_output_tokens=None,
    )
    assert _key(monkeypatch, None) == _key(monkeypatch, "https://API.openai.com/v1/") == before
    local = _key(monkeypatch, "http://127.0.0.1:8000/v1")
    assert local != before
    assert _key(monkeypatch, "HTTP://127.0.0.1:8000/v1/") == local
    assert _key(monkeypatch, "http://127.0.0.1:8001/v1") != local


def test_pointwise_judgments_are_kept_per_document_whatever_docs_per_call(tmp_path):
    cache = JudgmentCache(tmp_path / "judgments.sqlite")
    docs = [{"id": f"u{i}", "text": f"doc {i}"} for i in range(4)]
    with FakeLLMServer(responder=_score(6)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m")
        alone = ScorerReranker(LLMPointwiseScorer(client, cache=cache)).rerank("q", docs)
        grouped = ScorerReranker(LLMPointwiseScorer(client, cache=cache, docs_per_call=4)).rerank(
            "q", [{"id": f"other{i}", "text": f"doc {i}"} for i in range(4)]
        )
    assert alone.usage["calls"] == 4 and len(server.requests) == 4  # none for the group
    assert grouped.usage["cache_hits"] == 4 and [r.score for r in grouped] == [6.0] * 4


def test_a_listwise_rejection_is_cached_like_an_order(tmp_path):
    cache = JudgmentCache(tmp_path / "judgments.sqlite")
    reject = '{"reranked_indices": [], "is_rejected": true, "rejection_reason": "off topic"}'
    with FakeLLMServer(responder=lambda request: Reply(text=reject)) as server:
        scorer = LLMListwiseScorer(OpenAIClient(base_url=server.openai_url, model="m"), cache=cache)
        _, again = (ScorerReranker(scorer).rerank("q", ["a", "b"]) for _ in range(2))
    assert len(server.requests) == 1 and again.usage["cache_hits"] == 1
    assert "llm_rejected" in again[0].flags and not again.degraded


def test_a_gemini_server_named_by_its_environment_variable_is_in_the_key(monkeypatch):
    pytest.importorskip("google.genai", reason="needs the 'gemini' extra")
    from rerankit.llm import GeminiClient

    def key() -> str:
        client = GeminiClient(api_key="k", model="m")
        return LLMPointwiseScorer(client, cache=False).cache_key(LLMRequest(prompt="p"))

    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    own = key()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9000")
    local = key()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://Generativelanguage.googleapis.com/")
    assert local != own and key() == own
