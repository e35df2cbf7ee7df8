"""What an LLM stage costs is in /metrics: a served cascade (BM25 keeping 2, then an LLM
judge at a local OpenAI-compatible stand-in) counts its provider calls, their failures and
the tokens the provider reported, by pipeline, from the same usage /v1/explain answers."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")
parser = pytest.importorskip("prometheus_client.parser", reason="needs the 'server' extra")

from fastapi.testclient import TestClient  # noqa: E402
from judges import after_bm25, judge_at  # noqa: E402

from rerankit.llm.testing import FakeLLMServer, Reply  # noqa: E402
from rerankit.server import ServerSettings, create_app  # noqa: E402

#: what the provider does with a request that is not the warm-up's: "ok" or "500"
MODE = {"now": "ok"}
DOCS = ["solar panels on roofs", "wind farms at sea", "solar power for homes", "hydro dams"]
ASK = {"model": "cascade", "query": "solar power", "documents": DOCS, "top_n": 2}


def _reply(request) -> Reply:
    if MODE["now"] == "500" and "warm-up document" not in request.prompt:
        return Reply(status=500, text="provider down")
    return Reply(text='{"score": 9}', input_tokens=100, output_tokens=7)


@pytest.fixture(scope="module")
def client(wait_ready):
    with FakeLLMServer(responder=_reply) as provider:
        cascade = after_bm25(judge_at(provider, timeout=10))
        settings = ServerSettings(
            pipelines={"cascade": cascade, "bm25": "bm25"}, default="cascade", timeout=20
        )
        with TestClient(create_app(settings)) as c:
            wait_ready(c)
            yield c


def _llm(client) -> dict[tuple[str, ...], float]:
    """The scrape's LLM counters: (name, model[, type]) -> value."""
    out = {}
    for family in parser.text_string_to_metric_families(client.get("/metrics").text):
        for s in family.samples:
            if s.name.startswith("rerankit_llm_") and s.name.endswith("_total"):
                out[(s.name, *s.labels.values())] = s.value
    return out


def _grew(before: dict, after: dict) -> dict:
    return {k: after[k] - before.get(k, 0.0) for k in after if after[k] != before.get(k)}


def test_llm_calls_and_tokens_are_counted_as_explain_reports_them(client):
    MODE["now"] = "ok"
    before = _llm(client)
    assert before[("rerankit_llm_calls_total", "bm25")] == 0  # every pipeline's series, at 0
    assert before[("rerankit_llm_calls_total", "cascade")] > 0  # its warm-up's calls
    r = client.post("/v1/explain", json=ASK)
    assert r.status_code == 200, r.text
    usage = r.json()["usage"]
    assert usage["calls"] == 2 and usage["input_tokens"] == 200 and usage["output_tokens"] == 14
    assert _grew(before, _llm(client)) == {
        ("rerankit_llm_calls_total", "cascade"): usage["calls"],
        ("rerankit_llm_tokens_total", "cascade", "input"): usage["input_tokens"],
        ("rerankit_llm_tokens_total", "cascade", "output"): usage["output_tokens"],
    }
    before = _llm(client)
    assert client.post("/v2/rerank", json={**ASK, "model": "bm25"}).status_code == 200
    assert client.post("/v2/rerank", json=ASK).status_code == 200
    assert _grew(before, _llm(client)) == {  # the cascade's, none for BM25's
        ("rerankit_llm_calls_total", "cascade"): 2,
        ("rerankit_llm_tokens_total", "cascade", "input"): 200,
        ("rerankit_llm_tokens_total", "cascade", "output"): 14,
    }


def test_failed_llm_calls_are_counted_with_no_tokens(client):
    before = _llm(client)
    MODE["now"] = "500"
    try:
        r = client.post("/v2/rerank", json=ASK)
    finally:
        MODE["now"] = "ok"
    assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
    assert _grew(before, _llm(client)) == {
        ("rerankit_llm_calls_total", "cascade"): 2,
        ("rerankit_llm_failures_total", "cascade"): 2,
    }
