"""Admission to the service's work: a fixed number of slots, a bounded queue behind them
(a request beyond it is refused at once with 429), a share of both that no single pipeline
may exceed (so a pipeline whose requests are stuck leaves room for the others), and
draining at shutdown (queued requests are answered 503 while the running ones finish; the
requests in flight are kept, :class:`~.shutdown.InFlight`, so that those still running at
the end of the graceful timeout are answered 503 too)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter

from .._words import counted
from ..errors import ServiceError
from .metrics import Metrics
from .shutdown import InFlight

__all__ = ["Admission", "isolation_warning", "stopping"]

logger = logging.getLogger(__name__)


def isolation_warning(slots: int, share: int, pipelines: int) -> str | None:
    """What the service (and ``rerankit check``) warns of when ``pipelines`` (2 or more)
    share ``slots`` and one of them may hold ``share`` of them, all of them
    (``max_concurrency = 1``, or ``max_concurrency_per_pipeline`` equal to it): none is
    kept from the others' load; None otherwise."""
    share = min(share or slots, slots)
    if pipelines < 2 or share < slots:
        return None
    return (
        f"{pipelines} pipelines, and one may hold every slot "
        f"(max_concurrency {slots}, max_concurrency_per_pipeline {share}): a pipeline "
        "whose requests fill them leaves none to the others; give max_concurrency 2 or "
        "more and max_concurrency_per_pipeline 0 (3 of every 4 slots) or less than it"
    )


def stopping() -> ServiceError:
    """The 503 of a request the service will not finish because it stops (queued, or cut
    at the end of the graceful timeout)."""
    return ServiceError(
        503,
        "the service is shutting down; retry on another instance",
        {"Retry-After": "1"},
        code="shutting_down",
    )


class Admission:
    """At most ``slots`` requests run, at most ``share`` of them for one pipeline; at most
    ``queue`` wait, at most ``queue_share`` (``queue`` in the proportion ``share / slots``)
    for one pipeline; the rest are refused. Once draining (shutdown), waiting and new
    requests get 503. ``in_flight``: every request being answered, queued or not."""

    def __init__(self, slots: int, queue: int, metrics: Metrics, share: int | None = None):
        self.slots, self.queue, self.metrics = slots, queue, metrics
        self.share = min(share or slots, slots)
        self.queue_share = math.ceil(queue * self.share / slots)
        self.running = 0
        self.waiting = 0
        self.running_by: Counter[str] = Counter()
        self.waiting_by: Counter[str] = Counter()
        self.draining = False
        self.refused = 0  # requests answered 503 because the service stops
        self.in_flight = InFlight()
        self._cond: asyncio.Condition | None = None

    def can_start(self, pipeline: str = "") -> bool:
        """Whether a request for ``pipeline`` would run at once."""
        return self.running < self.slots and self.running_by[pipeline] < self.share

    async def drain(self) -> None:
        """Refuse what waits and what comes: each gets 503 (running requests finish). How
        many were refused is said once the service has stopped (:meth:`said_stopped`)."""
        self.draining = True
        # in flight but neither queued nor holding a slot: a body still arriving, an answer
        # cache lookup, a probe; each finishes, or gets 503 if it still needs a slot
        others = len(self.in_flight) - self.waiting - self.running
        logger.info(
            "rerankit service stopping: %s 503, %d running may finish%s; "
            "requests that still arrive (before the listener closes, or on connections still "
            "open) get 503 too",
            counted(self.waiting, "queued request") + (" gets" if self.waiting == 1 else " get"),
            self.running,
            f", {others} other in flight (not yet queued: 503 if it needs a slot)"
            if others > 0
            else "",
        )
        if self._cond is not None:
            async with self._cond:
                self._cond.notify_all()

    async def acquire(self, pipeline: str = "") -> None:
        """A slot for a request of ``pipeline``: at once, after a wait in the queue, or a
        429 when the queue (or the pipeline's share of it) is full."""
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            if self.draining:
                self.refused += 1
                raise stopping()
            if not self.can_start(pipeline):
                self._check_queue(pipeline)
                self.waiting += 1
                self.waiting_by[pipeline] += 1
                self.metrics.queue.labels(pipeline).set(self.waiting_by[pipeline])
                try:
                    await self._cond.wait_for(lambda: self.can_start(pipeline) or self.draining)
                finally:
                    self.waiting -= 1
                    self.waiting_by[pipeline] -= 1
                    self.metrics.queue.labels(pipeline).set(self.waiting_by[pipeline])
                if self.draining:
                    self.refused += 1
                    raise stopping()
            self.running += 1
            self.running_by[pipeline] += 1
            self.metrics.in_flight.labels(pipeline).set(self.running_by[pipeline])

    def said_stopped(self) -> None:
        """Log, once the service has stopped after a drain, how many requests were answered
        503 because it stopped: those queued when it began, and those that came later on
        connections still open (counted as each is refused; the drain's own line counts
        only the first)."""
        if self.draining:
            logger.info(
                "rerankit service stopped: %s answered 503 while stopping "
                "(queued, or arrived after the stop began)",
                counted(self.refused, "request"),
            )

    def _check_queue(self, pipeline: str) -> None:
        if self.waiting >= self.queue:  # the limits hit, named as the settings file does
            raise ServiceError(
                429,
                (f"pipeline {pipeline!r}: " if pipeline else "")
                + f"the service is at capacity: {counted(self.running, 'request')} running "
                f"(max_concurrency {self.slots}) and {self.waiting} queued (max_queue "
                f"{self.queue}); retry shortly",
                {"Retry-After": "1"},
                code="queue_full",
            )
        if self.waiting_by[pipeline] >= self.queue_share:
            raise ServiceError(
                429,
                f"pipeline {pipeline!r} has {self.waiting_by[pipeline]} requests queued, its "
                "share of the queue; retry shortly",
                {"Retry-After": "1"},
                code="queue_full",
            )

    async def release(self, pipeline: str = "") -> None:
        assert self._cond is not None
        async with self._cond:
            self.running -= 1
            self.running_by[pipeline] -= 1
            self.metrics.in_flight.labels(pipeline).set(self.running_by[pipeline])
            # every waiter looks again: the one that can run may be of another pipeline
            self._cond.notify_all()
