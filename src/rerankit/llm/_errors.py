"""Turning provider SDK errors into rerankit's transient / permanent errors, each message
naming where the call went (:func:`where`); SDK clients per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

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


def shown_address(url: str) -> str:
    """``url`` as a message shows it: without a ``user:password@``, a query or a fragment
    (any of them may hold a key) and without a trailing ``/``."""
    parts = urlsplit(str(url).strip())
    if not parts.netloc:  # no scheme: the text as given, cut at any query and credentials
        return str(url).strip().split("?")[0].split("#")[0].rpartition("@")[2].rstrip("/")
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def where(client: Any) -> str:
    """Where ``client``'s calls go, for a message: ``openai at http://host:8000/v1 (model
    'm')``; the provider's own address when no ``base_url`` was given (the client's
    ``address``), and no address for a client that names none."""
    url = getattr(client, "address", None) or getattr(client, "base_url", None)
    at = f" at {shown_address(url)}" if url else ""
    return f"{getattr(client, 'provider', 'LLM')}{at} (model {getattr(client, 'model', '?')!r})"


def with_where(client: Any, exc: BaseException) -> str:
    """``exc``'s message beginning with :func:`where` (it does when a rerankit client raised
    it; another client's may not)."""
    text, site = str(exc), where(client)
    return text if text.startswith(site) else f"{site}: {text}"


_TRANSIENT_STATUS = {408, 409, 425, 429}
#: how the openai SDK begins an error answer's message: "Error code: 503 - ..."
_SDK_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")


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


def from_status(where: str, status: int, message: str, headers: Any = None) -> ProviderError:
    """An HTTP error answer, retried (429, 408, 409, 425, 5xx) or not; ``where`` is
    :func:`where`'s text."""
    message = _SDK_STATUS_PREFIX.sub("", message, count=1)  # the status is said already
    text = f"{where} answered HTTP {status}: {message}"
    if status in _TRANSIENT_STATUS or status >= 500:
        return TransientProviderError(text, status=status, retry_after=retry_after_seconds(headers))
    return PermanentProviderError(text, status=status)


def not_json(where: str, body: str, content_type: str | None = None) -> ProviderError:
    """A 200 answer whose body is not the provider's JSON, kind ``unreadable``; the message
    names the server (``where``), the content type when known and how the body starts.

    * A body that starts as JSON (``{`` or ``[``) but does not parse was cut off (a proxy's
      or a worker's connection closed mid-answer) or is malformed: said so, and retried as a
      transient failure, since the next answer is usually whole (the openai SDK does not
      retry it: it parses the body after its retries).
    * Anything else (a proxy's HTML error page, a web app at a ``base_url`` that is not the
      API) would come back the same: not retried, with a question about ``base_url``."""
    got = f"Content-Type {content_type}" if content_type else ""
    start = " ".join(body.split())[:120]
    if body.lstrip().startswith(("{", "[")):
        size = f"{len(body.encode('utf-8', 'replace'))} bytes"
        return TransientProviderError(
            f"{where}: the server's answer was cut off or is not valid JSON "
            f"({', '.join(filter(None, (got, size)))}): {start!r}",
            kind="unreadable",
        )
    return PermanentProviderError(
        f"{where}: the server did not answer JSON{f' ({got})' if got else ''}: {start!r}; "
        "is base_url the address of its API?",
        kind="unreadable",
    )


def from_transport(where: str, exc: BaseException, timeout: float) -> ProviderError:
    """Connection errors and timeouts are transient (kinds ``connection`` and ``timeout``);
    anything else is reported as is (kind ``error``). The message says what happened in
    words (``connection refused``, ``no answer within 30 s``), not the SDK's class names."""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return TransientProviderError(f"{where}: {_transport_cause(exc, timeout)}", kind="timeout")
    if isinstance(exc, OSError) or "Connect" in name:
        return TransientProviderError(
            f"{where}: {_transport_cause(exc, timeout)}", kind="connection"
        )
    return ProviderError(f"{where}: unexpected {name}: {exc}")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, outermost first (an SDK's error wraps the HTTP
    library's, which wraps the socket's)."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 16:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _transport_cause(exc: BaseException, timeout: float) -> str:
    """What a connection error or timeout was, in words, from the innermost error that says."""
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return f"the host name does not resolve ({e.strerror or e})"
        if isinstance(e, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(e, ssl.SSLError) and not isinstance(
            e, (ssl.SSLWantReadError, ssl.SSLWantWriteError)
        ):
            return f"TLS failed ({e.reason or e})"
    names = [type(e).__name__ for e in chain]
    if any("ConnectTimeout" in n for n in names):
        return f"no connection within {timeout:g} s"
    if any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in chain):
        return f"no answer within {timeout:g} s"
    for e in reversed(chain):  # the innermost error with something to say
        said = (e.strerror if isinstance(e, OSError) else None) or str(e)
        if said and not isinstance(e, asyncio.CancelledError):
            return f"connection failed ({said})"
    return f"connection failed ({type(exc).__name__})"
