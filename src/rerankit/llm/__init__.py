"""LLM providers behind one small protocol, with retries, limits and accounting."""

from .base import (
    LLMClient,
    LLMError,
    LLMRequest,
    LLMResponse,
    PermanentLLMError,
    TransientLLMError,
    Usage,
)
from .resilience import CallRunner, Limits, RetryPolicy

__all__ = [
    "CallRunner",
    "GeminiClient",
    "LLMClient",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "Limits",
    "OpenAIClient",
    "PermanentLLMError",
    "RetryPolicy",
    "TransientLLMError",
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
