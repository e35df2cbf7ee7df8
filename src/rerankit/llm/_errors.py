"""Turning provider SDK errors into rerankit's transient / permanent errors; SDK clients
per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

from ..errors import PermanentProviderError, ProviderError, TransientProviderError

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One SDK client per running event loop, closed when that loop shuts down.

    Async SDK clients keep connection pools tied to the loop they first ran on; ``rerank()``
    runs each call on a loop of its own, and several threads may run loops at once. Each
    loop gets its own client, held by an async generator of that loop, which
    ``asyncio.run`` finalises before closing the loop: the generator's ``finally`` closes
    the client while the loop can still run the clean-up. A client is never replaced while
    its loop runs (one loop's client is never closed under another loop's calls).
    """

    def __init__(self, make: Callable[[], T], close: Callable[[T], Awaitable[Any]]) -> None:
        self._make, self._close = make, close
        # loop -> (client, the generator holding it); entries go when their loop is collected
        self._clients: weakref.WeakKeyDictionary[Any, tuple[T, AsyncGenerator[T, None]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    async def _hold(self, value: T) -> AsyncGenerator[T, None]:
        try:
            yield value
            await asyncio.Event().wait()  # parked until the loop finalises the generator
        finally:
            with contextlib.suppress(Exception):
                await self._close(value)

    async def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(loop)
        if entry is None:  # only this loop's own thread makes its client
            value = self._make()
            holder = self._hold(value)
            await holder.__anext__()
            entry = (value, holder)
            with self._lock:
                self._clients[loop] = entry
        return entry[0]


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


def from_status(provider: str, status: int, message: str, headers: Any = None) -> ProviderError:
    text = f"{provider} answered HTTP {status}: {message}"
    if status in _TRANSIENT_STATUS or status >= 500:
        return TransientProviderError(text, status=status, retry_after=retry_after_seconds(headers))
    return PermanentProviderError(text, status=status)


def not_json(provider: str, url: str, body: str, content_type: str | None = None) -> ProviderError:
    """A 200 answer whose body is not the provider's JSON (a proxy's error page, or the HTML
    of a web app at a ``base_url`` that is not the API): kind ``unreadable``, not retried;
    the message names the server, the content type when known and how the body starts."""
    got = f" (Content-Type {content_type})" if content_type else ""
    start = " ".join(body.split())[:120]
    return PermanentProviderError(
        f"{provider}: the server at {url} did not answer JSON{got}: {start!r}; is base_url "
        "the address of its API?",
        kind="unreadable",
    )


def from_transport(provider: str, exc: BaseException) -> ProviderError:
    """Connection errors and timeouts are transient (kinds ``connection`` and ``timeout``);
    anything else is reported as is (kind ``error``)."""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return TransientProviderError(f"{provider}: {name}: {exc}", kind="timeout")
    if isinstance(exc, OSError) or "Connect" in name:
        return TransientProviderError(f"{provider}: {name}: {exc}", kind="connection")
    return ProviderError(f"{provider}: unexpected {name}: {exc}")
