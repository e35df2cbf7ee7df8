"""uvicorn's h11 protocol with a deadline for a request's headers (named by import string in
the uvicorn config, so worker processes can load it): uvicorn itself waits for them forever,
and a client that sends part of its headers and stops would hold its connection and file
descriptor. The deadline is the config's ``rerankit_header_timeout`` (seconds). A request
uvicorn refuses over its ``limit_concurrency`` (``max_connections``) is counted and said by
:func:`rerankit.server.connections.refused`, at most once a minute: uvicorn's own line for
each (``Exceeded concurrency limit.``, one per request under overload) is left out."""

from __future__ import annotations

import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .connections import refused

__all__ = ["HeaderTimeoutProtocol"]

DEFAULT_HEADER_TIMEOUT = 10.0

#: what uvicorn logs for each request it refuses over ``limit_concurrency``
UVICORN_REFUSED = "Exceeded concurrency limit."


class _SaidOnce(logging.Filter):
    """Leaves out uvicorn's line for each refused request: the service counts them and
    says them, naming the setting to raise, at most once a minute."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != UVICORN_REFUSED


class HeaderTimeoutProtocol(H11Protocol):
    """Closes a connection whose request headers do not arrive in time."""

    _header_timer: Any = None

    def _arm(self) -> None:
        self._disarm()
        timeout = getattr(self.config, "rerankit_header_timeout", DEFAULT_HEADER_TIMEOUT)
        self._header_timer = self.loop.call_later(timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()  # no request started in time: nothing to answer

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not any(isinstance(f, _SaidOnce) for f in self.logger.filters):
            self.logger.addFilter(_SaidOnce())
        self._arm()

    def _over_limit(self) -> bool:
        """Whether uvicorn would answer a request arriving now with its 503 (its test)."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def handle_events(self) -> None:
        before, over = self.cycle, self._over_limit()
        super().handle_events()
        if self.cycle is not None:  # a request's headers arrived
            self._disarm()
            if over and self.cycle is not before:  # one request started, refused
                refused(self.limit_concurrency - 1)  # (max_connections + 1: see .connections)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request on this connection gets the same time

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
