"""How the service stops on a signal.

SIGTERM (what Kubernetes, systemd and ``docker stop`` send) starts a drain period of
``shutdown_delay`` seconds: ``/ready`` answers 503 ``stopping`` while every request, new
connections included, is still served, so that a load balancer (or Kubernetes' endpoints)
stops routing here before the listener closes. Then the listener closes, queued requests
get 503 with ``Retry-After``, and running ones finish within ``graceful_timeout``.

SIGINT (Ctrl-C), or a second signal during the drain period, stops at once: no one is
routing to a terminal session, and whoever sends the second signal wants it over.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["StopOnSignal"]

logger = logging.getLogger(__name__)


class StopOnSignal:
    """The handler of SIGINT and SIGTERM for one service process: ``stop(sig, frame)`` is
    the server's own handler (uvicorn's ``handle_exit``), called once the drain period is
    over, at once for SIGINT, and again for every later signal (a second Ctrl-C then forces
    uvicorn's exit, as it does without rerankit)."""

    def __init__(self, service: Any, delay: float, stop: Callable[[int, Any], None]) -> None:
        self.service, self.delay, self.stop = service, delay, stop
        self.draining = False  # the drain period has begun
        self.stopped = False  # the stop has begun (the server's handler was called)

    def __call__(self, sig: int, frame: Any) -> None:
        if self.stopped:
            self.stop(sig, frame)
            return
        loop = self.service.loop  # (None until the app has started)
        if (
            sig == signal.SIGTERM
            and self.delay > 0
            and not self.draining
            and loop is not None
            and not loop.is_closed()
        ):
            self.draining = True
            self.service.stop_being_ready()
            logger.info(
                "rerankit service: SIGTERM; /ready says stopping, requests are served for "
                "%g s more (shutdown_delay), then the service stops",
                self.delay,
            )
            loop.call_soon_threadsafe(loop.call_later, self.delay, self._stop, sig, None)
            return
        self._stop(sig, frame)

    def _stop(self, sig: int, frame: Any) -> None:
        if self.stopped:  # a second signal ended the drain period before its timer
            return
        self.stopped = True
        self.service.begin_shutdown()
        self.stop(sig, frame)
