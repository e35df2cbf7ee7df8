"""Timeouts, retries with backoff, a concurrency cap and a request-rate limit around a client.

Only transient failures are retried (rate limits, server errors, connection errors,
timeouts). The wait before retry n is ``multiplier * 2**n`` seconds clamped to
``[min_wait, max_wait]`` (tenacity's exponential wait), or the provider's Retry-After when that
is longer (still capped at ``max_wait``).

Inside the service each call also ends by its request's deadline (see
:func:`rerankit._threads.time_left`): the provider's connect and read timeouts are no longer
than what is left, no retry waits past it, and no call starts after it.

A retry is logged at INFO once per batch (the first retry counted into a
:class:`~rerankit.llm.Usage`: one ``rerank()`` of a scorer, one request of the service),
naming where the call went and why it failed; every retry is logged at DEBUG with the SDK's
own error, and ``usage["retries"]`` counts them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from numbers import Real

from .._optional import require
from .._threads import time_left
from ..errors import ProviderError, TransientProviderError
from ._errors import where, with_where
from .base import LLMClient, LLMRequest, LLMResponse, Usage
from .keywords import RATE_HINTS, checked_keywords

__all__ = [
    "CallRunner",
    "ConcurrencyLimit",
    "Limits",
    "RateLimiter",
    "RetryPolicy",
    "rate_limit_wait",
]

logger = logging.getLogger(__name__)


#: how a failed call's message says the provider's Retry-After of its last answer, and how
#: :func:`rate_limit_wait` reads it back
_ASKED_TO_WAIT = "its last answer said Retry-After: {:g} s"
_ASKED = re.compile(r"its last answer said Retry-After: (\d+(?:\.\d+)?) s")


def rate_limit_wait(flags: Sequence[Sequence[str]], warnings: Sequence[str]) -> float | None:
    """When every failed judgment among documents' ``flags`` failed on the provider's
    rate limit (``llm_failed:rate_limit``): the longest wait its last answers asked for
    (their Retry-After, said in ``warnings``; 0.0 when none said one). None when some
    judgment failed otherwise, or none failed: the provider is not just limiting."""
    failed = [f for f in flags if "llm_failed" in f]
    if not failed or any("llm_failed:rate_limit" not in f for f in failed):
        return None
    return max((float(m[1]) for w in warnings for m in _ASKED.finditer(w)), default=0.0)


_RETRIES_HINT = "attempts counts every call, the first included: RetryPolicy(attempts=...)"
_LIMITS_HINT = (
    "it is the scorer's (LLMPointwiseScorer(client, {key}=...)) or a shared "
    "Limits' (Limits({key}=...))"
)


@checked_keywords(
    {
        "retries": _RETRIES_HINT,
        "max_retries": _RETRIES_HINT,
        **{k: _LIMITS_HINT.format(key=k) for k in ("max_concurrency", "requests_per_minute")},
    },
    word="field",
)
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
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise TypeError(f"attempts must be an integer, got {self.attempts!r}")
        for name in ("multiplier", "min_wait", "max_wait", "timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real):
                raise TypeError(f"{name} must be a number of seconds, got {value!r}")
            if not math.isfinite(value):  # a nan or infinite timeout would never end a call
                raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {self.timeout}")
        if self.multiplier <= 0:
            raise ValueError(f"multiplier must be > 0, got {self.multiplier}")
        if not 0 <= self.min_wait <= self.max_wait:
            raise ValueError(
                f"need 0 <= min_wait <= max_wait, got min_wait {self.min_wait} and max_wait "
                f"{self.max_wait}"
            )

    def waits(self) -> list[float]:
        """The backoff waits between the attempts, in seconds (``attempts - 1`` of them,
        tenacity's exponential wait as :class:`CallRunner` uses it; a provider's Retry-After
        can stretch each up to ``max_wait``)."""
        return [
            max(self.min_wait, min(self.multiplier * 2.0 ** min(n, 64), self.max_wait))
            for n in range(self.attempts - 1)
        ]

    def longest_call(self) -> float:
        """The seconds one call can take when every attempt runs out of time: ``attempts x
        timeout`` plus :meth:`waits` (docs/scorers.md, "What bounds a whole rerank")."""
        return self.attempts * self.timeout + sum(self.waits())


class RateLimiter:
    """Call starts spaced at least ``window / per_minute`` seconds apart (so at most
    ``per_minute`` start in any ``window``-second span, 60 by default).

    Thread-safe and not tied to an event loop: every loop and thread that shares the object
    shares the limit, so it holds for a long-lived process (repeated ``rerank()`` calls,
    several threads, an async service)."""

    def __init__(self, per_minute: float, window: float = 60.0) -> None:
        if isinstance(per_minute, bool) or not isinstance(per_minute, Real):
            raise TypeError(f"requests_per_minute must be a number, got {per_minute!r}")
        if not 0 < per_minute < math.inf:
            raise ValueError(f"requests_per_minute must be > 0 and finite, got {per_minute}")
        self.per_minute, self.window = per_minute, window
        self.interval = window / per_minute
        self._next = 0.0  # monotonic time the next call may start
        self._lock = threading.Lock()

    def _reserve(self) -> float:
        """Book the next start; the seconds to wait for it."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
            return start - now

    async def acquire(self) -> None:
        wait = self._reserve()
        if wait > 0:
            await asyncio.sleep(wait)


class ConcurrencyLimit:
    """At most ``limit`` holders at a time, across every event loop and thread (an asyncio
    semaphore belongs to one loop; this one does not). Waiters are served in arrival order."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"max_concurrency must be an integer, got {limit!r}")
        if limit < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {limit}")
        self.limit = limit
        self.in_use = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.in_use < self.limit and not self._waiters:
                self.in_use += 1
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]  # resolved when a holder hands its slot over
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiters:  # never handed a slot
                    self._waiters.remove(waiter)
                    raise
            self.release()  # a slot arrived as we were cancelled: pass it on
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                if future.done() or loop.is_closed():
                    continue
                loop.call_soon_threadsafe(self._hand_over, future)
                return  # the slot moves to the waiter: in_use is unchanged
            self.in_use -= 1

    def _hand_over(self, future: asyncio.Future) -> None:
        # A waiter cancelled meanwhile passes the slot on itself (see acquire), exactly once.
        if not future.done():
            future.set_result(None)


@checked_keywords(
    {
        **RATE_HINTS,
        **dict.fromkeys(
            ("attempts", "timeout", "min_wait", "max_wait", "multiplier"),
            "it is a RetryPolicy's: LLMPointwiseScorer(client, retry=RetryPolicy(...))",
        ),
    }
)
class Limits:
    """A concurrency bound and an optional request rate, shared by every call that uses the
    object: across ``rerank()`` calls, event loops and threads. Pass one ``Limits`` to
    several scorers (``limits=``) to share it between them too."""

    def __init__(self, max_concurrency: int = 16, requests_per_minute: float | None = None):
        self.concurrency = ConcurrencyLimit(max_concurrency)
        self.rate = RateLimiter(requests_per_minute) if requests_per_minute else None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a concurrency slot (and a rate slot) while the body runs."""
        await self.concurrency.acquire()
        try:
            if self.rate is not None:
                await self.rate.acquire()
            yield
        finally:
            self.concurrency.release()


class CallRunner:
    """Runs requests on ``client`` with the policy, at most ``max_concurrency`` (16 by
    default) at a time and (optionally) at most ``requests_per_minute`` started per minute,
    or under a shared :class:`Limits` instead (giving both is a ValueError); the limits hold
    across calls, event loops and threads. Counts into a Usage."""

    def __init__(
        self,
        client: LLMClient,
        policy: RetryPolicy | None = None,
        *,
        max_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        pairs = (("max_concurrency", max_concurrency), ("requests_per_minute", requests_per_minute))
        given = [k for k, v in pairs if v is not None]
        if limits is not None and given:
            raise ValueError(
                f"give limits= or {' and '.join(given)}=, not both: a Limits carries its own "
                f"(Limits(max_concurrency=..., requests_per_minute=...)), shared by whoever "
                f"holds it"
            )
        self.client = client
        self.policy = policy or RetryPolicy()
        self.limits = limits or Limits(
            16 if max_concurrency is None else max_concurrency, requests_per_minute
        )

    @property
    def where(self) -> str:
        """Where the calls go, for a message about an answer: the provider, its address and
        the model (``openai at http://host:8000/v1 (model 'm')``), never a key."""
        return where(self.client)

    def _wait(self, state) -> float:  # tenacity wait callable
        tenacity = require("tenacity", "LLM rerankers")
        p = self.policy
        base = tenacity.wait_exponential(multiplier=p.multiplier, min=p.min_wait, max=p.max_wait)(
            state
        )
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        return min(max(base, after), p.max_wait) if after else base

    def _out_of_time(self, state) -> bool:  # tenacity stop callable
        """Whether the deadline of the work this call is for passes before the next try."""
        left = time_left()
        return left is not None and left <= self._wait(state)

    async def _attempt(
        self, request: LLMRequest, usage: Usage, made: list[int] | None = None
    ) -> LLMResponse:
        async with self.limits.slot():
            timeout, left = self.policy.timeout, time_left()
            if left is not None:  # the request's deadline bounds the call
                if left <= 0:
                    raise TransientProviderError(
                        f"{where(self.client)}: not called: its request's deadline has passed",
                        kind="timeout",
                    )
                timeout = min(timeout, left)
            usage.calls += 1
            if made is not None:  # the attempts this call made (one not made is not counted)
                made[0] += 1
            try:
                response = await asyncio.wait_for(
                    self.client.generate(request, timeout=timeout),
                    timeout + (1.0 if left is None else 0.0),
                )
            except asyncio.TimeoutError as exc:
                raise TransientProviderError(
                    f"{where(self.client)}: no answer within {timeout:.3g} s", kind="timeout"
                ) from exc
        usage.input_tokens += response.input_tokens
        usage.output_tokens += response.output_tokens
        return response

    def _log_retry(self, state, *, first_of_batch: bool) -> None:
        """A retry at INFO when it is the first of its batch, else at DEBUG (a batch of N
        documents against a provider that is down would say the same thing N times per
        retry); always at DEBUG with the SDK's error that caused it."""
        exc = state.outcome.exception()
        wait = state.next_action.sleep if state.next_action else 0.0
        if first_of_batch:  # an HTTP answer's text may quote the request: at debug only
            status = getattr(exc, "status", None)
            said = f"{where(self.client)} answered HTTP {status} (its text at debug level)"
            logger.info(
                "%s; retry %d in %.1f s (this batch's first retry; the others are logged at "
                "debug level)",
                said if status is not None else with_where(self.client, exc),
                state.attempt_number,
                wait,
            )
        cause = exc.__cause__ or exc.__context__
        logger.debug(
            "%s; retry %d in %.1f s%s",
            with_where(self.client, exc),
            state.attempt_number,
            wait,
            f" (from {type(cause).__name__}: {cause})" if cause is not None else "",
        )

    async def call(self, request: LLMRequest, usage: Usage) -> LLMResponse:
        """The response, after retrying transient failures; raises the last error."""
        tenacity = require("tenacity", "LLM rerankers")

        def count_retry(state) -> None:
            usage.retries += 1
            self._log_retry(state, first_of_batch=usage.retries == 1)

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(TransientProviderError),
            stop=tenacity.stop_after_attempt(self.policy.attempts) | self._out_of_time,
            wait=self._wait,
            before_sleep=count_retry,
            reraise=True,
        )
        made = [0]
        try:
            return await retrying(self._attempt, request, usage, made)
        except Exception as exc:
            usage.failures += 1
            if isinstance(exc, ProviderError) and made[0]:
                exc.args = (f"{exc} ({self._tries(exc, made[0])})",)
            raise

    def _tries(self, exc: ProviderError, made: int) -> str:
        """How many attempts a failed call made, and why no more, for its message."""
        said = f"after {made} attempt{'s' if made != 1 else ''}"
        if not isinstance(exc, TransientProviderError):
            return f"{said}, not retried: this failure is not transient"
        if made < self.policy.attempts:
            said += f" of {self.policy.attempts}: its deadline left no time for another"
        if exc.retry_after is not None:  # what a caller may wait before asking again
            said += "; " + _ASKED_TO_WAIT.format(round(exc.retry_after, 1))
        return said
