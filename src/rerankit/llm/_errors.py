"""Turning provider SDK errors into rerankit's transient / permanent errors; SDK clients
per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

from .base import LLMError, PermanentLLMError, TransientLLMError

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One SDK client per running event loop, closed when that loop shuts down.

    Async SDK clients keep connection pools tied to the loop they first ran on, and
    ``rerank()`` runs each call on a fresh loop. The client is held by an async generator
    of its loop, which ``asyncio.run`` finalises before closing the loop: the generator's
    ``finally`` closes the client while the loop can still run the clean-up.
    """

    def __init__(self, make: Callable[[], T], close: Callable[[T], Awaitable[Any]]) -> None:
        self._make, self._close = make, close
        self._loop: object | None = None
        self._value: T | None = None
        self._holder: AsyncGenerator[T, None] | None = None

    async def _hold(self, value: T) -> AsyncGenerator[T, None]:
        try:
            yield value
            await asyncio.Event().wait()  # parked until the loop finalises the generator
        finally:
            with contextlib.suppress(Exception):
                await self._close(value)

    async def get(self) -> T:
        loop = asyncio.get_running_loop()
        if self._value is None or self._loop is not loop:
            value = self._make()
            holder = self._hold(value)
            await holder.__anext__()
            self._value, self._loop, self._holder = value, loop, holder
        return self._value


_TRANSIENT_STATUS = {408, 409, 425, 429}


def retry_after_seconds(headers: Any) -> float | None:
    """The Retry-After header (seconds or an HTTP date) in seconds, if present."""
    if headers is None:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def from_status(provider: str, status: int, message: str, headers: Any = None) -> LLMError:
    text = f"{provider} answered HTTP {status}: {message}"
    if status in _TRANSIENT_STATUS or status >= 500:
        return TransientLLMError(text, status=status, retry_after=retry_after_seconds(headers))
    return PermanentLLMError(text, status=status)


def from_transport(provider: str, exc: BaseException) -> LLMError:
    """Connection errors and timeouts are transient; anything else is reported as is."""
    name = type(exc).__name__
    if isinstance(exc, (OSError, TimeoutError)) or "Timeout" in name or "Connect" in name:
        return TransientLLMError(f"{provider}: {name}: {exc}")
    return LLMError(f"{provider}: unexpected {name}: {exc}")
