"""``rerankit serve --workers N``: N uvicorn worker processes on one socket.

Each worker builds the service from the settings the parent hands over in an environment
variable, so every worker serves the same pipelines; uvicorn's supervisor replaces a worker
that dies. The embedding cache on disk (SQLite, WAL mode) is shared between them. A worker
is a new interpreter: it logs rerankit's lines to stderr (:data:`LOG_FORMAT`, or JSON lines
with ``log_format="json"``) at the level the parent's root logger has, when the parent's
root logger has a handler.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import threading
from typing import Any

from .logs import LOG_FORMAT, log_formatter
from .settings import ServerSettings
from .shutdown import CUT_MARGIN, StopOnSignal, exit_quickly

__all__ = ["LOG_FORMAT", "app_from_environment", "serve_workers"]

logger = logging.getLogger(__name__)

#: where the parent leaves the settings (as JSON) for its workers
SETTINGS_ENV = "RERANKIT_SERVE_SETTINGS"
#: where it leaves its root logger's level, when that logger has a handler
LOG_LEVEL_ENV = "RERANKIT_SERVE_LOG_LEVEL"
#: and the log format of the lines (``text`` or ``json``)
LOG_FORMAT_ENV = "RERANKIT_SERVE_LOG_FORMAT"


def app_from_environment() -> Any:
    """The service app for one worker (uvicorn calls this factory in each process)."""
    from .app import create_app

    level = os.environ.get(LOG_LEVEL_ENV)
    root = logging.getLogger()
    if level is not None and not root.handlers:
        # a process `serve` started, whose parent logs to stderr (it set LOG_LEVEL_ENV only
        # then): its lines go there too, as the parent's would; the library configures no
        # logging in a process it did not start
        log_format = os.environ.get(LOG_FORMAT_ENV, "text")
        handler = logging.StreamHandler()
        handler.setFormatter(log_formatter(log_format))
        root.addHandler(handler)
        root.setLevel(int(level))
        if log_format == "json":  # a warning's lines are a JSON line too, as the parent's
            logging.captureWarnings(True)
    settings = ServerSettings.from_mapping(json.loads(os.environ[SETTINGS_ENV]))
    app = create_app(settings)
    _stop_gracefully_on_signal(
        app.state.service, settings.shutdown_delay, settings.graceful_timeout
    )
    atexit.register(exit_quickly)  # (this worker's, once it has stopped)
    return app


def _stop_gracefully_on_signal(service: Any, delay: float, grace: float) -> None:
    """Put rerankit's stop (:class:`.shutdown.StopOnSignal`: the drain period on SIGTERM,
    then queued requests get 503) before uvicorn's own handler of SIGINT/SIGTERM (installed
    by the time uvicorn loads the app), in a worker as in a single process. The supervisor
    passes a stop on to its workers as SIGTERM, so each waits out the delay unless a
    SIGINT reaches it too (Ctrl-C in a terminal reaches every process of the group)."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def stop(signum: int, frame: Any) -> None:
        handler = previous[signum]
        if callable(handler):
            handler(signum, frame)

    on_signal = StopOnSignal(service, delay, stop, grace)
    for sig in previous:
        signal.signal(sig, on_signal)


def serve_workers(
    settings: ServerSettings,
    *,
    host: str,
    port: int,
    graceful_seconds: float,
    workers: int,
    log_level: str = "info",
    log_format: str = "text",
) -> None:
    """Serve ``settings`` from ``workers`` processes until SIGINT or SIGTERM."""
    from uvicorn.supervisors import Multiprocess

    from .connections import uvicorn_config

    mapping = settings.to_mapping()
    mapping["server"]["graceful_timeout"] = graceful_seconds  # the workers' own cut
    os.environ[SETTINGS_ENV] = json.dumps(mapping)
    root = logging.getLogger()
    if root.handlers:
        os.environ[LOG_LEVEL_ENV] = str(root.getEffectiveLevel())
        os.environ[LOG_FORMAT_ENV] = log_format
    else:  # nothing to pass on (rerankit's lines go nowhere here either)
        os.environ.pop(LOG_LEVEL_ENV, None)
        os.environ.pop(LOG_FORMAT_ENV, None)
    config = uvicorn_config(
        "rerankit.server.workers:app_from_environment",
        settings,
        log_format,
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=graceful_seconds + CUT_MARGIN,  # after rerankit's cut
    )
    logger.info(
        "rerankit service: %d worker processes on %s:%d; each worker keeps its own /metrics "
        "and /ready, and a scrape or probe reaches one of them (on Kubernetes: one worker "
        "per pod, more replicas); max_connections, max_concurrency and max_queue are each "
        "worker's too, so the service takes %d times each",
        workers,
        host,
        port,
        workers,
    )
    sock = config.bind_socket()
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
