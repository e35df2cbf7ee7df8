"""Connection hygiene for the service under uvicorn: a connection must finish sending its
request's headers within ``header_timeout`` seconds (and its body within ``body_timeout``,
enforced where the body is read), idle keep-alive connections close after
``keep_alive_seconds``, at most ``max_connections`` are served at once (beyond that, new
requests get 503), and headers larger than ``max_header_bytes`` are refused."""

from __future__ import annotations

from typing import Any

__all__ = ["uvicorn_config"]


def _protocol(header_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request headers do not arrive in
    time (uvicorn itself waits for them forever: a client that sends part of its headers
    and stops would hold its connection and file descriptor)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        _header_timer: Any = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_late)

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
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None:  # a request's headers arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets the same time

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Protocol


def uvicorn_config(app: Any, settings: Any, **options: Any) -> Any:
    """A ``uvicorn.Config`` for ``app`` with the settings' connection limits."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=_protocol(settings.header_timeout),
        timeout_keep_alive=settings.keep_alive_seconds,
        limit_concurrency=settings.max_connections,
        h11_max_incomplete_event_size=settings.max_header_bytes,
        **options,
    )
