"""Shared by the batch tests."""

from __future__ import annotations

import pytest


def _judge_spec(base_url: str, key_env: str) -> dict:
    """A pipeline of one pointwise LLM judge on an OpenAI-protocol server, uncached."""
    scorer = {
        "type": "llm_pointwise",
        "provider": "openai",
        "model": "m",
        "base_url": base_url,
        "api_key_env": key_env,
        "cache": False,
    }
    return {"name": "judge", "stages": [{"scorer": scorer}]}


@pytest.fixture(scope="session")
def judge_spec():
    """``judge_spec(base_url, key_env)``: a declared LLM-judge pipeline."""
    return _judge_spec
