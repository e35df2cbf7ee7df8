"""The provider protocol: one request in, text and token counts out; errors sorted into
those worth retrying and those that are not."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "KEYS_OPTIONAL",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Usage",
]

#: True while building scorers that will send nothing (``rerankit label --dry-run``'s
#: estimate): a declared LLM scorer then needs no API key
KEYS_OPTIONAL: ContextVar[bool] = ContextVar("rerankit_llm_keys_optional", default=False)


@dataclass(frozen=True)
class LLMRequest:
    """One generation: a system instruction, a user prompt, and optionally the JSON schema
    the answer must follow (sent as the provider's structured-output setting)."""

    prompt: str
    system: str | None = None
    json_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    temperature: float = 0.0
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class LLMResponse:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@runtime_checkable
class LLMClient(Protocol):
    """What rerankit needs of a provider. ``generate`` raises
    :class:`~rerankit.errors.TransientProviderError` or
    :class:`~rerankit.errors.PermanentProviderError`; retries, timeouts and concurrency are
    the caller's."""

    provider: str
    model: str

    async def generate(self, request: LLMRequest, *, timeout: float) -> LLMResponse: ...


@dataclass
class Usage:
    """What a rerank cost: provider calls (retries included), retries, cache hits,
    ``failures`` and tokens. A failure is a call (with its retries) that left a document it
    was asked about without a judgment: it failed after its retries, or its answer held no
    readable judgment for that document (those documents are flagged ``llm_failed``, with
    ``llm_failed:<kind>``; a listwise window's unreadable answer also ``llm_unreadable``,
    its older name); a listwise answer repaired into an order (``llm_repaired``) is
    read, not failed."""

    calls: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    _fields: tuple[str, ...] = field(
        default=("calls", "retries", "cache_hits", "failures", "input_tokens", "output_tokens"),
        init=False,
        repr=False,
    )

    def add(self, other: Usage) -> None:
        for name in self._fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self._fields}
