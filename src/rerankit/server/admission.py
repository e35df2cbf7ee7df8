"""Admission to the service's work: a fixed number of slots, a bounded queue behind them
(a request beyond it is refused at once with 429), and draining at shutdown (queued
requests are answered 503 while the running ones finish)."""

from __future__ import annotations

import asyncio

from ..errors import ServiceError
from .metrics import Metrics

__all__ = ["Admission"]


class Admission:
    """At most ``slots`` requests run; at most ``queue`` wait; the rest are refused. Once
    draining (shutdown), waiting and new requests get 503."""

    def __init__(self, slots: int, queue: int, metrics: Metrics) -> None:
        self.slots, self.queue, self.metrics = slots, queue, metrics
        self.running = 0
        self.waiting = 0
        self.draining = False
        self._cond: asyncio.Condition | None = None

    @staticmethod
    def _stopping() -> ServiceError:
        return ServiceError(
            503, "the service is shutting down; retry on another instance", {"Retry-After": "1"}
        )

    async def drain(self) -> None:
        """Refuse what waits and what comes: each gets 503 (running requests finish)."""
        self.draining = True
        if self._cond is not None:
            async with self._cond:
                self._cond.notify_all()

    async def acquire(self) -> None:
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            if self.draining:
                raise self._stopping()
            if self.running >= self.slots:
                if self.waiting >= self.queue:
                    raise ServiceError(
                        429, "the service is at capacity; retry shortly", {"Retry-After": "1"}
                    )
                self.waiting += 1
                self.metrics.queue.set(self.waiting)
                try:
                    await self._cond.wait_for(lambda: self.running < self.slots or self.draining)
                except asyncio.CancelledError:  # past its deadline: a wake-up goes on
                    self._cond.notify()
                    raise
                finally:
                    self.waiting -= 1
                    self.metrics.queue.set(self.waiting)
                if self.draining:
                    raise self._stopping()
            self.running += 1
            self.metrics.in_flight.set(self.running)

    async def release(self) -> None:
        assert self._cond is not None
        async with self._cond:
            self.running -= 1
            self.metrics.in_flight.set(self.running)
            self._cond.notify()
