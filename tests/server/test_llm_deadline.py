"""``deadline_warnings(pipeline, deadline)``: each LLM scorer whose retries can outlast
the service's deadline, from Python (``rerankit check`` prints the same lines)."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the LLM judge needs the 'openai' extra")

from rerankit import load
from rerankit.server import ServerSettings, deadline_warnings


def _judge(**retry):
    scorer = {"type": "llm_pointwise", "provider": "openai", "model": "m"}
    scorer["base_url"] = "http://127.0.0.1:9/v1"
    return {**scorer, "retry": retry} if retry else scorer


def _pipeline(**retry):
    return load(
        {
            "name": "judged",
            "stages": [
                {"name": "lexical", "scorer": {"type": "bm25"}, "keep": 5},
                {"name": "judge", "scorer": _judge(**retry)},
            ],
        }
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_a_judge_whose_retries_outlast_the_deadline_is_named_with_the_arithmetic():
    (said,) = deadline_warnings(_pipeline(timeout=20), 6.0)
    assert said.startswith(
        "stage 'judge' (llm_pointwise): one LLM call can take up to 64 s (retry: 3 attempts "
        "x timeout 20 s, plus waits of 2 + 2 s), longer than [server] deadline (6 s)"
    )
    assert said.endswith("or raise [server] deadline above 64 s")


def test_a_judge_that_fits_and_a_pipeline_without_one_are_not_warned_of():
    assert deadline_warnings(_pipeline(attempts=1, timeout=2), 6.0) == []
    assert deadline_warnings(load("bm25"), 0.1) == []
    assert deadline_warnings(_pipeline(), ServerSettings(deadline=200).deadline) == []


def test_a_judge_served_alone_is_named_by_its_scorer():
    (said,) = deadline_warnings(load({"scorer": _judge(attempts=2, timeout=5)}), 3)
    assert said.startswith("llm_pointwise: one LLM call can take up to 12 s (retry: 2 attempts")
