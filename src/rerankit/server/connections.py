"""Connection hygiene for the service under uvicorn: a connection must finish sending its
request's headers within ``header_timeout`` seconds (and its body within ``body_timeout``,
enforced where the body is read), idle keep-alive connections close after
``keep_alive_seconds``, at most ``max_connections`` are served at once (beyond that, new
requests get 503), and headers larger than ``max_header_bytes`` are refused."""

from __future__ import annotations

from typing import Any

from .logs import uvicorn_log_config

__all__ = ["uvicorn_config"]


def uvicorn_config(app: Any, settings: Any, log_format: str = "text", **options: Any) -> Any:
    """A ``uvicorn.Config`` for ``app`` with the settings' connection limits, uvicorn's
    lines in ``log_format`` (``text`` or ``json``; in every worker too: the configuration
    travels with it)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        http="rerankit.server.h11_protocol:HeaderTimeoutProtocol",
        timeout_keep_alive=settings.keep_alive_seconds,
        # uvicorn counts the connection it answers among those open: N + 1 serves N
        limit_concurrency=settings.max_connections + 1,
        h11_max_incomplete_event_size=settings.max_header_bytes,
        **{"log_config": uvicorn_log_config(log_format), **options},  # timed lines (see .logs)
    )
    config.rerankit_header_timeout = settings.header_timeout  # read by the protocol
    return config
