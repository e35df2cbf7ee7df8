"""What the LLM scorers share: the runner, the judgment cache, the usage counter."""

from __future__ import annotations

from typing import Any

from ..cache import JudgmentCache, judgment_cache
from ..llm.base import LLMClient
from ..llm.resilience import CallRunner, RetryPolicy


class LLMScorerBase:
    name: str
    prompt_version: str

    def __init__(
        self,
        client: LLMClient,
        *,
        cache: Any,
        retry: RetryPolicy | None,
        max_concurrency: int,
        requests_per_minute: float | None,
        max_output_tokens: int | None,
    ) -> None:
        if not isinstance(client, LLMClient):
            raise TypeError(f"{client!r} is not an LLM client (needs provider, model, generate)")
        self.client = client
        self.runner = CallRunner(
            client,
            retry,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
        )
        self.cache: JudgmentCache | None = judgment_cache(cache)
        self.max_output_tokens = max_output_tokens

    def cache_key(self, **parts: Any) -> str:
        return JudgmentCache.key(
            provider=self.client.provider,
            model=self.client.model,
            template=self.prompt_version,
            **parts,
        )
