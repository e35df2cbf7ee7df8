"""LLM providers behind one small protocol, with retries, limits and accounting."""

from .base import LLMClient, LLMRequest, LLMResponse, Usage
from .resilience import CallRunner, Limits, RetryPolicy

__all__ = [
    "CallRunner",
    "GeminiClient",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Limits",
    "OpenAIClient",
    "RetryPolicy",
    "Usage",
]


def __getattr__(name: str):  # the SDK-backed clients load their SDK only when used
    if name == "GeminiClient":
        from .gemini import GeminiClient

        return GeminiClient
    if name == "OpenAIClient":
        from .openai_client import OpenAIClient

        return OpenAIClient
    raise AttributeError(f"module 'rerankit.llm' has no attribute {name!r}")
