"""Connection hygiene for the service under uvicorn: a connection must finish sending its
request's headers within ``header_timeout`` seconds (and its body within ``body_timeout``,
enforced where the body is read), idle keep-alive connections close after
``keep_alive_seconds``, at most ``max_connections`` are served at once (beyond that, new
requests get uvicorn's plain-text 503: counted in ``rerankit_connections_refused_total``
and said in a WARNING that names the setting, at most once a minute), and headers larger
than ``max_header_bytes`` are refused."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .._words import counted
from .logs import uvicorn_log_config

__all__ = ["REFUSED_LOG_SECONDS", "Refusals", "refused", "refused_count", "uvicorn_config"]

logger = logging.getLogger(__name__)

#: seconds between two WARNINGs on requests refused over ``max_connections``
REFUSED_LOG_SECONDS = 60.0


class Refusals:
    """The requests this process refused over ``max_connections``: their count, and a
    WARNING naming the setting for the first, then at most one a minute with the count
    since the last (uvicorn's own line, `Exceeded concurrency limit.`, names none)."""

    def __init__(self) -> None:
        self.total = 0
        self._unsaid = 0
        self._said_at: float | None = None
        self._lock = threading.Lock()

    def refused(self, max_connections: int) -> None:
        with self._lock:
            self.total += 1
            self._unsaid += 1
            now = time.monotonic()
            if self._said_at is not None and now - self._said_at < REFUSED_LOG_SECONDS:
                return
            count, self._unsaid, self._said_at = self._unsaid, 0, now
        logger.warning(
            "%s refused with 503 `Service Unavailable` since the last such line: "
            "max_connections = %d connections were open in this process; raise [server] "
            "max_connections if the replica has room for more (CPU, memory, ulimit -n), or "
            "add replicas (counted in rerankit_connections_refused_total; said at most once "
            "a minute)",
            counted(count, "request"),
            max_connections,
        )


#: this process's refusals (uvicorn serves in one event loop per process)
REFUSALS = Refusals()


def refused(max_connections: int) -> None:
    """Count one request refused over ``max_connections``, and say it (at most once a
    minute)."""
    REFUSALS.refused(max_connections)


def refused_count() -> int:
    """Requests this process refused over ``max_connections`` since it started."""
    return REFUSALS.total


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
