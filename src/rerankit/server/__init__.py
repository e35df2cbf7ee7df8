"""rerankit's HTTP service (extra ``server``): ``rerankit serve``."""

import contextlib
import logging
import signal
import threading
from typing import Any

from .._optional import require
from .background import RunningService, start
from .building import build_pipeline, build_pipelines
from .llm_deadline import deadline_warnings
from .logs import check_log_format
from .settings import ServerSettings
from .shutdown import CUT_MARGIN, StopOnSignal, cut_warning

__all__ = [
    "RunningService",
    "ServerSettings",
    "build_pipeline",
    "build_pipelines",
    "create_app",
    "deadline_warnings",
    "serve",
    "start",
]

logger = logging.getLogger(__name__)


def create_app(settings: ServerSettings | None = None, *, tracer_provider: Any = None):
    """The service's FastAPI app. ``tracer_provider``: an OpenTelemetry ``TracerProvider``
    to trace to (default: the process's own, when one is set up; see
    :mod:`rerankit.server.tracing`)."""
    from .app import create_app as make

    return make(settings, tracer_provider=tracer_provider)


def serve(
    settings: ServerSettings | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    graceful_seconds: float | None = None,
    workers: int = 1,
    log_level: str = "info",
    log_format: str = "text",
) -> None:
    """Run the service with uvicorn until SIGINT or SIGTERM. On SIGTERM ``/ready`` answers
    503 ``stopping`` at once while requests are still served for the settings'
    ``shutdown_delay`` seconds (so a load balancer stops routing here first); then the
    service stops accepting connections, answers queued requests 503, finishes the running
    ones (up to ``graceful_seconds``, default the settings' ``graceful_timeout``; those
    still running then are answered 503, shutting down, and counted in the log), and a
    graceful stop returns normally (the process exits 0, not 143). SIGINT (Ctrl-C), or a
    second signal, skips what is left of the delay (see :mod:`rerankit.server.shutdown`).
    A ``deadline`` longer than the graceful timeout is warned of: a stop can cut requests
    that are within their deadline.

    ``workers=N`` runs N processes on one socket, each with its own models; the SQLite
    caches are shared (LLM judgments under the cache directory, and embeddings when
    ``RERANKIT_EMBEDDING_CACHE`` names a file: a vector one worker computed is read by the
    others); a worker that dies is replaced; each worker logs rerankit's lines to stderr
    as this process does, when its root logger has a handler (``rerankit serve`` sets one
    up). ``log_level``: uvicorn's (``debug``, ``info``, ``warning``, ``error``; its access
    log lines are ``info``). ``log_format``: uvicorn's lines, and a worker's rerankit
    lines, as text (the default) or one JSON object per line (``json``; see
    :mod:`rerankit.server.logs`); this process's own rerankit lines are its root logger's
    handler's (``rerankit serve --log-format json`` sets that up too)."""

    from .connections import uvicorn_config

    uvicorn = require("uvicorn", "rerankit serve")
    check_log_format(log_format)
    settings = settings or ServerSettings()
    grace = settings.graceful_timeout if graceful_seconds is None else graceful_seconds
    cut = cut_warning(settings.timeout, grace)
    if cut is not None:
        logger.warning("rerankit service: %s", cut)
    if workers > 1:
        from .workers import serve_workers

        serve_workers(
            settings,
            host=host,
            port=port,
            graceful_seconds=grace,
            workers=workers,
            log_level=log_level,
            log_format=log_format,
        )
        return

    app = create_app(settings)

    class _Server(uvicorn.Server):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.on_signal = StopOnSignal(
                app.state.service, settings.shutdown_delay, super().handle_exit, grace
            )

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.on_signal(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self):  # as uvicorn's, without re-raising the signal at the end
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            signals = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    config = uvicorn_config(  # uvicorn's own cancel is the backstop of rerankit's cut
        app,
        settings,
        log_format,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=grace + CUT_MARGIN,
    )
    _Server(config).run()
