"""How the service stops on a signal.

SIGTERM (what Kubernetes, systemd and ``docker stop`` send) starts a drain period of
``shutdown_delay`` seconds: ``/ready`` answers 503 ``stopping`` while every request, new
connections included, is still served, so that a load balancer (or Kubernetes' endpoints)
stops routing here before the listener closes. Then the listener closes, queued requests
get 503 with ``Retry-After``, and running ones finish within ``graceful_timeout``; those
still running then are cut (:class:`InFlight`): each is answered the same JSON 503, which a
load balancer retries on another instance, and the log says how many. uvicorn's own cancel,
a plain-text 500 with a traceback per request, comes :data:`CUT_MARGIN` seconds later, for
what a cut could not end.

SIGINT (Ctrl-C), or a second signal during the drain period, stops at once: no one is
routing to a terminal session, and whoever sends the second signal wants it over.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._words import counted

__all__ = ["CUT_MARGIN", "InFlight", "StopOnSignal", "cut_warning", "exit_quickly"]

logger = logging.getLogger(__name__)

#: seconds between rerankit's cut of the requests still running at ``graceful_timeout`` and
#: uvicorn's own cancel of what is left (its ``timeout_graceful_shutdown``)
CUT_MARGIN = 1.0


@dataclass(eq=False)
class _Request:
    task: asyncio.Task
    answering: bool = False  # its answer has begun: nothing else can be sent
    cut: bool = False


class InFlight:
    """The requests being answered: :meth:`cut` ends those that have not begun their answer
    (the middleware answers each 503, shutting down)."""

    def __init__(self) -> None:
        self._requests: set[_Request] = set()

    def __len__(self) -> int:
        return len(self._requests)

    def enter(self) -> _Request:
        """The request the current task answers, tracked until :meth:`leave`."""
        request = _Request(asyncio.current_task())  # type: ignore[arg-type]
        self._requests.add(request)
        return request

    def leave(self, request: _Request) -> None:
        self._requests.discard(request)

    def cut(self, grace: float) -> int:
        """Cancel every request still running that has not begun its answer (the end of
        ``grace``, the graceful timeout, seconds); how many, said in the log."""
        cut = [r for r in self._requests if not r.answering and not r.task.done()]
        for request in cut:
            request.cut = True
            request.task.cancel()
        if cut:
            logger.warning(
                "rerankit service: %s still running after graceful_timeout "
                "(%g s) cut: answered 503, the service is shutting down",
                counted(len(cut), "request"),
                grace,
            )
        return len(cut)


class StopOnSignal:
    """The handler of SIGINT and SIGTERM for one service process: ``stop(sig, frame)`` is
    the server's own handler (uvicorn's ``handle_exit``), called once the drain period is
    over, at once for SIGINT, and again for every later signal (a second Ctrl-C then forces
    uvicorn's exit, as it does without rerankit). ``grace``: the seconds running requests
    get once the stop has begun; then those left are cut (:class:`InFlight`)."""

    def __init__(
        self,
        service: Any,
        delay: float,
        stop: Callable[[int, Any], None],
        grace: float | None = None,
    ) -> None:
        self.service, self.delay, self.stop, self.grace = service, delay, stop, grace
        self.draining = False  # the drain period has begun
        self.stopped = False  # the stop has begun (the server's handler was called)

    def __call__(self, sig: int, frame: Any) -> None:
        # Python runs a signal handler in whatever context the main thread is in: a
        # request's, when the signal arrives while one runs on the event loop; its id would
        # then suffix this stop's lines, and those of the callbacks scheduled here (which
        # copy the context). The stop belongs to no request: an empty context.
        contextvars.Context().run(self._on_signal, sig, frame)

    def _on_signal(self, sig: int, frame: Any) -> None:
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
        if loop is not None:  # SIGINT, a second signal, or no delay: said as the delay is
            name = signal.Signals(sig).name
            if self.delay > 0:
                logger.info("rerankit service: %s; stopping now, without shutdown_delay", name)
            else:
                logger.info("rerankit service: %s; stopping now (shutdown_delay is 0)", name)
        self._stop(sig, frame)

    def _stop(self, sig: int, frame: Any) -> None:
        if self.stopped:  # a second signal ended the drain period before its timer
            return
        self.stopped = True
        self.service.begin_shutdown()
        loop = self.service.loop
        if self.grace is not None and loop is not None and not loop.is_closed():
            cut = self.service.admission.in_flight.cut
            loop.call_soon_threadsafe(loop.call_later, self.grace, cut, self.grace)
        self.stop(sig, frame)


def exit_quickly() -> None:
    """Once the service has stopped: keep the objects it leaves (its models above all) out
    of the interpreter's last garbage collection, which took seconds between the last log
    line and the exit with a torch model (the files are closed and flushed by then; the
    memory goes with the process)."""
    gc.freeze()


def cut_warning(timeout: float, grace: float) -> str | None:
    """What ``serve`` warns of at start (and ``rerankit check`` reports) when requests may
    run longer (``timeout``) than a stop lets them finish (``grace``, the graceful timeout);
    None when they may not."""
    if timeout <= grace:
        return None
    return (
        f"deadline ({timeout:g} s) is longer than graceful_timeout ({grace:g} s): on a stop, "
        f"requests still running after {grace:g} s are answered 503 (shutting down)"
    )
