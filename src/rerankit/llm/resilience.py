"""Timeouts, retries with backoff, a concurrency cap and a request-rate limit around a client.

Only transient failures are retried (rate limits, server errors, connection errors,
timeouts). The wait before retry n is ``multiplier * 2**n`` seconds clamped to
``[min_wait, max_wait]`` (tenacity's exponential wait), or the provider's Retry-After when that
is longer (still capped at ``max_wait``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass

from .._optional import require
from .base import LLMClient, LLMRequest, LLMResponse, TransientLLMError, Usage

__all__ = ["CallRunner", "RateLimiter", "RetryPolicy"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all (first call included); backoff ``multiplier``, ``min_wait``,
    ``max_wait`` in seconds; ``timeout``: seconds allowed for each call."""

    attempts: int = 3
    multiplier: float = 1.0
    min_wait: float = 2.0
    max_wait: float = 30.0
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {self.timeout}")
        if not 0 <= self.min_wait <= self.max_wait:
            raise ValueError("need 0 <= min_wait <= max_wait")


class RateLimiter:
    """At most ``per_minute`` call starts in any ``window``-second span (60 by default)."""

    def __init__(self, per_minute: float, window: float = 60.0) -> None:
        if per_minute <= 0:
            raise ValueError(f"requests_per_minute must be > 0, got {per_minute}")
        self.per_minute, self.window = per_minute, window
        self._starts: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = time.monotonic()
                while self._starts and now - self._starts[0] >= self.window:
                    self._starts.popleft()
                if len(self._starts) < self.per_minute:
                    self._starts.append(now)
                    return
                await asyncio.sleep(self.window - (now - self._starts[0]))


class CallRunner:
    """Runs requests on ``client`` with the policy, at most ``max_concurrency`` at a time and
    (optionally) at most ``requests_per_minute`` started per minute. Counts into a Usage."""

    def __init__(
        self,
        client: LLMClient,
        policy: RetryPolicy | None = None,
        *,
        max_concurrency: int = 16,
        requests_per_minute: float | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.client = client
        self.policy = policy or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.requests_per_minute = requests_per_minute
        # asyncio primitives belong to one event loop: made per loop, on first use.
        self._per_loop: dict[int, tuple[asyncio.Semaphore, RateLimiter | None]] = {}

    def _limits(self) -> tuple[asyncio.Semaphore, RateLimiter | None]:
        key = id(asyncio.get_running_loop())
        if key not in self._per_loop:
            limiter = RateLimiter(self.requests_per_minute) if self.requests_per_minute else None
            self._per_loop = {key: (asyncio.Semaphore(self.max_concurrency), limiter)}
        return self._per_loop[key]

    def _wait(self, state) -> float:  # tenacity wait callable
        tenacity = require("tenacity", "LLM rerankers")
        p = self.policy
        base = tenacity.wait_exponential(multiplier=p.multiplier, min=p.min_wait, max=p.max_wait)(
            state
        )
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        return min(max(base, after), p.max_wait) if after else base

    async def _attempt(self, request: LLMRequest, usage: Usage) -> LLMResponse:
        semaphore, limiter = self._limits()
        async with semaphore:
            if limiter is not None:
                await limiter.acquire()
            usage.calls += 1
            timeout = self.policy.timeout
            try:
                response = await asyncio.wait_for(
                    self.client.generate(request, timeout=timeout), timeout + 1.0
                )
            except asyncio.TimeoutError as exc:
                raise TransientLLMError(f"no answer within {timeout:g} s") from exc
        usage.input_tokens += response.input_tokens
        usage.output_tokens += response.output_tokens
        return response

    async def call(self, request: LLMRequest, usage: Usage) -> LLMResponse:
        """The response, after retrying transient failures; raises the last error."""
        tenacity = require("tenacity", "LLM rerankers")

        def count_retry(state) -> None:
            usage.retries += 1
            logger.info(
                "%s call failed (%s); retry %d in %.1f s",
                self.client.provider,
                state.outcome.exception(),
                state.attempt_number,
                state.next_action.sleep if state.next_action else 0.0,
            )

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(TransientLLMError),
            stop=tenacity.stop_after_attempt(self.policy.attempts),
            wait=self._wait,
            before_sleep=count_retry,
            reraise=True,
        )
        try:
            return await retrying(self._attempt, request, usage)
        except Exception:
            usage.failures += 1
            raise
