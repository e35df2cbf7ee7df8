"""The service in the background of your own process (a notebook, a test, an app that also
serves rerankit's HTTP API): :func:`start` runs it on a thread and gives back a
:class:`RunningService` that knows its address and stops it. :func:`rerankit.server.serve`
is the blocking form, stopped by SIGINT or SIGTERM, which a caller cannot send its own
process without stopping itself."""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from .._optional import require
from ..errors import RerankitError
from .connections import uvicorn_config
from .logs import check_log_format
from .settings import ServerSettings
from .shutdown import CUT_MARGIN

__all__ = ["RunningService", "start"]

logger = logging.getLogger(__name__)


class RunningService:
    """The service :func:`start` runs on a thread: ``url`` (``http://HOST:PORT``, the port
    the system chose when ``start`` was given ``port=0``), ``port``, ``host``; ``stop()``
    ends it; ``wait_ready()`` waits until every pipeline has loaded. Also a context
    manager, which stops it on leaving."""

    def __init__(self, server: Any, thread: threading.Thread, host: str, port: int) -> None:
        self._server, self._thread = server, thread
        self.host, self.port = host, port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"

    @property
    def running(self) -> bool:
        """Whether the service's thread still runs."""
        return self._thread.is_alive()

    def wait_ready(self, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until ``/ready`` answers 200 (every pipeline loaded, or one with the
        settings' ``ready_when = "any"``) and return its answer; a
        :class:`~rerankit.errors.RerankitError` with ``/ready``'s last answer when it has
        not within ``timeout`` seconds (a pipeline that cannot load says why there)."""
        end, last = time.monotonic() + timeout, None
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/ready", timeout=5) as answer:
                    return json.loads(answer.read())
            except urllib.error.HTTPError as exc:  # 503: loading, failing or stopping
                last = exc.read().decode("utf-8", "replace")
            except OSError as exc:
                last = str(exc)
            if not self.running:
                raise RerankitError(f"the service at {self.url} has stopped: {last}")
            if time.monotonic() >= end:
                raise RerankitError(
                    f"the service at {self.url} is not ready after {timeout:g} s: {last}"
                )
            time.sleep(0.05)

    def stop(self, timeout: float | None = None) -> None:
        """Stop the service: it stops accepting connections, lets running requests finish
        (up to the settings' ``graceful_timeout``) and unloads; returns once it has
        stopped, or after ``timeout`` seconds. Stopping a stopped service does nothing."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> RunningService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"RunningService({self.url!r}, {state})"


def start(
    settings: ServerSettings | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    log_format: str = "text",
    timeout: float = 60.0,
) -> RunningService:
    """Run the service on a background thread of this process and return once it accepts
    connections (its pipelines may still be loading: :meth:`RunningService.wait_ready`).
    ``port=0`` (the default) takes a free port, read back as ``.port`` and ``.url``;
    ``log_level``: uvicorn's lines (``warning`` by default, so a notebook shows no access
    line per request; ``info`` as ``rerankit serve`` logs). One process, one worker, no
    signal handlers: ``.stop()`` stops it (``serve(workers=N)`` for more processes).
    A :class:`~rerankit.errors.RerankitError` when it cannot start (a port in use, say)."""
    uvicorn = require("uvicorn", "rerankit.server.start")
    check_log_format(log_format)
    settings = settings or ServerSettings()
    from .app import create_app

    config = uvicorn_config(
        create_app(settings),
        settings,
        log_format,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=settings.graceful_timeout + CUT_MARGIN,
    )
    server = uvicorn.Server(config)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            server.run()
        except BaseException as exc:  # uvicorn exits (SystemExit) when it cannot bind
            failed.append(exc)

    thread = threading.Thread(target=run, name="rerankit-service", daemon=True)
    thread.start()
    end = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive():
            why = f": {failed[0]!r}" if failed and not isinstance(failed[0], SystemExit) else ""
            raise RerankitError(
                f"the service did not start on {host}:{port}{why} (a port in use? uvicorn's "
                "log says why; port=0 takes a free one)"
            )
        if time.monotonic() >= end:
            server.should_exit = True
            raise RerankitError(f"the service did not start on {host}:{port} within {timeout:g} s")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    logger.info("rerankit service started in the background on %s:%s", host, bound)
    return RunningService(server, thread, host, bound)
