"""spec 1's ReRanker, spec 2's AiRerank / RerankSchema, spec 4's rerank_passages."""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass

import pytest

pytest.importorskip("google.genai", reason="needs the 'gemini' extra")

from rerankit.compat import AiRerank, ReRanker, rerank_passages
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply

FAST = RetryPolicy(min_wait=0.0, max_wait=0.01, timeout=5.0)
ARTICLES = [
    {"url_hash": "a1", "processed_content": "Oil prices fell as OPEC raised output.", "src": 1},
    {"url_hash": "b2", "processed_content": "Apple beat earnings estimates.", "src": 2},
    {"url_hash": "c3", "processed_content": "", "src": 3},
]


def by_content(scores):
    def answer(req):
        for text, score in scores.items():
            if json.dumps(text) in req.prompt:
                return Reply(text=json.dumps({"id": "x", "score": score}))
        return Reply(status=500)

    return answer


def all_at_once(scores):
    """One answer scoring every passage the request lists (by its id in the request)."""

    def answer(req):
        listing = json.loads(req.prompt.split("Documents (a JSON array): ", 1)[1].split("\n")[0])
        rated = [
            {"id": d["id"], "score": scores[d["text"]]} for d in listing if d["text"] in scores
        ]
        return Reply(text=json.dumps({"scores": rated}))

    return answer


def test_rerank_passages_keeps_the_whole_original_order_when_a_passage_is_left_out():
    passages = ["first passage", "second passage", "third passage"]
    answer = all_at_once({"second passage": 9, "third passage": 7})  # the first is left out
    with FakeLLMServer(responder=answer) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m")
        out = rerank_passages("q", passages, client=client, cache=False, retry=FAST)
    assert out == passages and len(server.requests) == 1


def test_rerank_articles_through_gemini():
    before = copy.deepcopy(ARTICLES)
    answer = by_content({ARTICLES[0]["processed_content"]: 2, ARTICLES[1]["processed_content"]: 9})
    with FakeLLMServer(responder=answer) as server:
        ranker = ReRanker("key", base_url=server.url, cache=False, retry=FAST)
        out = ranker.rerank_articles("Apple quarterly results", ARTICLES)
    assert [a["url_hash"] for a in out] == ["b2", "a1", "c3"]
    assert [a["rerank_score"] for a in out] == [9.0, 2.0, 0.0]
    assert out[0]["src"] == 2 and before == ARTICLES
    assert len(server.requests) == 2  # the empty article made no call
    assert "financial analyst" in server.requests[0].system
    assert server.requests[0].model == "gemini-2.0-flash"
    assert ranker.last_result.usage["calls"] == 2
    assert ranker.rerank_articles("q", []) == []


def test_rerank_articles_needs_a_key_and_the_content_field():
    with pytest.raises(ValueError, match="API key"):
        ReRanker("")
    ranker = ReRanker("key", base_url="http://127.0.0.1:9", cache=False)
    with pytest.raises(ValueError, match=r"document 0.*processed_content"):
        ranker.rerank_articles("q", [{"url_hash": "x", "content": "wrong key"}])


def test_ai_rerank_helpers_and_schema():
    from rerankit.compat import RerankSchema

    prompt = AiRerank.get_prompt_rerank("What is BM25?", json.dumps(["a", "b", "c"]))
    assert '["a", "b", "c"]' in prompt and "What is BM25?" in prompt and "0 to 2" in prompt
    assert AiRerank.validate_permutation([0, 1, 2], [2, 0, 1]) == (True, [], [], [])
    assert AiRerank.validate_permutation([0, 1, 2], [0, 0, 5]) == (False, [1, 2], [5], [5])
    assert AiRerank.repair_permutation([0, 1, 2, 3], [3, 3, 9, 1]) == [3, 1, 0, 2]
    ok = RerankSchema(reranked_indices=[1, 0], is_rejected=False, rejection_reason="")
    assert ok.reranked_indices == [1, 0]
    with pytest.raises(Exception, match="extra"):
        RerankSchema(reranked_indices=[], is_rejected=True, rejection_reason="x", note="no")
    assert RerankSchema.model_json_schema()["additionalProperties"] is False


@dataclass
class Citation:
    text: str
    source: str


def test_rerank_passages_orders_objects_and_degrades_gracefully(caplog):
    passages = [
        Citation("Kant on duty, briefly mentioned.", "a"),
        Citation("A long treatment of Kant's categorical imperative.", "b"),
    ]
    answer = all_at_once({passages[0].text: 3, passages[1].text: 8})
    with FakeLLMServer(responder=answer) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m")
        out = rerank_passages("Kant's ethics", passages, client=client, cache=False, retry=FAST)
    assert [p.source for p in out] == ["b", "a"] and out[1] is passages[0]
    assert len(server.requests) == 1  # every passage scored in one structured call
    assert "depth" in server.requests[0].system
    long_text = "x" * 900
    with FakeLLMServer(responder=lambda r: Reply(status=503)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m")
        with caplog.at_level(logging.WARNING, logger="rerankit"):
            out = rerank_passages(
                "q", ["first", long_text, "third"], client=client, cache=False, retry=FAST
            )
    assert out == ["first", long_text, "third"]
    assert any(
        "original order" in r.getMessage() or "every LLM call failed" in r.getMessage()
        for r in caplog.records
    )
    long_prompts = [r.prompt for r in server.requests if "xxxx" in r.prompt]
    assert long_prompts and all(json.dumps("x" * 500) in p for p in long_prompts)
    assert all(json.dumps("x" * 501) not in p for p in long_prompts)  # cut at 500
    assert rerank_passages("q", ["only one"]) == ["only one"]


def test_rerank_passages_without_a_key_keeps_the_order(monkeypatch, caplog):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        assert rerank_passages("q", ["a", "b"]) == ["a", "b"]
    assert any("no Gemini API key" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("top_k", [-1, 0, True, 2.5])
def test_rerank_passages_rejects_a_bad_top_k(top_k):
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        rerank_passages("q", ["only"], top_k=top_k)
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        rerank_passages("q", ["a", "b"], top_k=top_k, api_key="unused")


def test_prompt_for_an_empty_list_asks_for_a_rejection():
    prompt = AiRerank.get_prompt_rerank("q", "[]")
    assert "from 0 to 0" not in prompt and "reject" in prompt and "is_rejected true" in prompt
    assert "every index from 0 to 2" in AiRerank.get_prompt_rerank("q", '["a", "b", "c"]')
    assert "the one index, 0" in AiRerank.get_prompt_rerank("q", '["a"]')


def test_validate_permutation_reports_out_of_range_sorted_as_the_listwise_api_says():
    # "out_of_range = sorted([i for i in reranked if (i < lo or i > hi)])", and [] when the
    # original list is empty
    assert AiRerank.validate_permutation([0, 1, 2], [9, 1, -4, 7]) == (
        False,
        [0, 2],
        [-4, 7, 9],
        [-4, 7, 9],
    )
    assert AiRerank.validate_permutation([], [3, 1]) == (False, [], [1, 3], [])


def test_news_prompt_names_each_article_by_its_own_id():
    articles = [
        {"url_hash": "a1f3", "processed_content": "Rates rise again"},
        {"url_hash": "b7c2", "processed_content": "Bank margins widen"},
    ]

    def answer(req):
        article = "a1f3" if "a1f3" in req.prompt else "b7c2"
        return Reply(text=json.dumps({"id": article, "score": 8 if article == "b7c2" else 3}))

    with FakeLLMServer(responder=answer) as server:
        reranker = ReRanker(api_key="k", base_url=server.url, cache=False)
        ranked = reranker.rerank_articles("bank margins", articles)
    assert [a["url_hash"] for a in ranked] == ["b7c2", "a1f3"]
    assert all('"id": "a1f3"' in r.prompt or '"id": "b7c2"' in r.prompt for r in server.requests)
