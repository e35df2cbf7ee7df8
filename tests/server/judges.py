"""The LLM judge the service tests point at a local stand-in provider (FakeLLMServer), and
the cascade that puts it after BM25."""

from __future__ import annotations

from typing import Any


def judge_at(provider: Any, timeout: float = 5) -> dict[str, Any]:
    """A pointwise judge at ``provider`` (a FakeLLMServer): one attempt of ``timeout``
    seconds, no judgment cache."""
    return {
        "type": "llm_pointwise",
        "provider": "openai",
        "base_url": provider.openai_url,
        "model": "m",
        "cache": False,
        "retry": {"attempts": 1, "timeout": timeout},
    }


def after_bm25(judge: dict[str, Any]) -> dict[str, Any]:
    """A cascade: BM25 keeping 2, then ``judge``."""
    return {"stages": [{"scorer": {"type": "bm25"}, "keep": 2}, {"scorer": judge}]}
