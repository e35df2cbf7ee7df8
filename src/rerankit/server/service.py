"""What runs a request inside the service: admission (slots, a bounded queue, draining at
shutdown) and the pipelines with their deadlines, warm-up and micro-batched embeddings."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from ..errors import InputError, MissingDependencyError, ModelLoadError, ServiceError
from ..scorers.embedding import ENCODE_HOOK
from ..types import RerankResult, check_top_k
from .batching import ABANDONED, MicroBatching
from .formats.base import Call
from .metrics import Metrics
from .settings import ServerSettings

__all__ = ["Admission", "Service"]

logger = logging.getLogger(__name__)


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


class Service:
    """The pipelines by name, admission, metrics and batching: one rerank per request."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.admission = Admission(settings.max_concurrency, settings.max_queue, self.metrics)
        self.batching = (
            MicroBatching(
                max_items=settings.batch_max_items,
                max_wait_ms=settings.batch_max_wait_ms,
                max_batch_tokens=settings.batch_max_tokens or None,
                on_batch=self.metrics.encode_batch,
            )
            if settings.batching
            else None
        )
        self._pipelines: dict[str, Any] = {}
        self.ready = asyncio.Event()
        self.warm_up_seconds = 0.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._releasing: set[asyncio.Future] = set()  # strong references until each ran
        #: seconds of work per document, by pipeline (a moving average of answered requests):
        #: a request granted a slot with less time left than that is answered 503 at once
        self._per_document: dict[str, float] = {}

    def pipeline(self, name: str | None) -> Any:
        from ..api import load

        name = name or self.settings.default
        if name not in self.settings.pipelines:
            available = ", ".join(sorted(self.settings.pipelines))
            raise ServiceError(404, f"model {name!r} not found; available: {available}")
        if name not in self._pipelines:
            try:
                self._pipelines[name] = load(self.settings.pipelines[name])
            except (ValueError, TypeError) as exc:
                raise ServiceError(500, f"pipeline {name!r} is misconfigured: {exc}") from exc
        return self._pipelines[name]

    def loaded(self, name: str) -> bool:
        """Whether pipeline ``name`` has been built."""
        return name in self._pipelines

    def describe_scores(self, name: str) -> dict[str, Any]:
        """What pipeline ``name``'s scores mean (None until it is loaded)."""
        reranker = self._pipelines.get(name)
        if reranker is None:
            return {"scores": None}
        out: dict[str, Any] = {
            "scores": reranker.score_scale,
            "pairwise": reranker.score_scale != "relative",
        }
        if getattr(reranker, "use_first_stage", False):  # the hybrid reading a retriever score
            out["scores_with_first_stage_field"] = "relative"
        backends = {  # where each local model runs: torch, onnx or onnx-int8
            s.name: s.backend + (f"-{s.quantize}" if s.quantize else "")
            for s in reranker.scorers()
            if hasattr(s, "backend")
        }
        if backends:
            out["backends"] = backends
        return out

    async def warm_up(self) -> None:
        """Load every pipeline and rerank one small batch with each, then mark the service
        ready. A pipeline that fails here is logged; its requests will say why."""
        self.loop = asyncio.get_running_loop()
        start = time.perf_counter()
        for name in self.settings.pipelines:
            try:
                reranker = self.pipeline(name)
                await reranker.arerank("warm up", ["a warm-up document", "another one"])
            except Exception as exc:
                logger.warning("warm-up of pipeline %r failed: %s", name, exc)
        self.warm_up_seconds = time.perf_counter() - start
        logger.info("rerankit service ready: warm-up took %.1f s", self.warm_up_seconds)
        self.ready.set()

    def begin_shutdown(self) -> None:
        """From any thread (a signal handler): stop being ready, and answer every queued
        and new request 503 while the running ones finish."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        logger.info("rerankit service stopping: queued requests get 503")

        def start() -> None:
            self.ready.clear()
            task = asyncio.ensure_future(self.admission.drain())
            self._releasing.add(task)
            task.add_done_callback(self._releasing.discard)

        loop.call_soon_threadsafe(start)

    def _finished(self, task: asyncio.Future) -> None:
        if not task.cancelled():
            task.exception()  # retrieved, so a failure after a timeout answer is not re-reported
        release = asyncio.ensure_future(self.admission.release())
        self._releasing.add(release)
        release.add_done_callback(self._releasing.discard)

    async def run(self, endpoint: str, call: Call, arrival: float | None = None) -> RerankResult:
        """Rerank ``call`` within one deadline: ``timeout`` seconds from ``arrival`` (the
        request's arrival, ``time.monotonic()``), covering the wait for a slot and the work.
        A request still queued at its deadline gets 503 without running."""
        settings = self.settings
        deadline = (arrival if arrival is not None else time.monotonic()) + settings.timeout
        name = call.model or settings.default
        reranker = self.pipeline(name)
        if not call.query.strip():
            raise ServiceError(400, "query must not be empty")
        if not call.documents:
            raise ServiceError(400, "documents must not be empty")
        if len(call.documents) > settings.max_documents:
            raise ServiceError(
                400, f"{len(call.documents)} documents; the limit is {settings.max_documents}"
            )
        try:
            check_top_k(call.top_n, "top_n")
        except ValueError as exc:
            raise ServiceError(400, str(exc)) from exc
        self.metrics.requests.labels(endpoint, name).inc()
        self.metrics.batch_documents.observe(len(call.documents))
        queued = time.monotonic()
        try:
            await asyncio.wait_for(self.admission.acquire(), max(deadline - time.monotonic(), 0))
        except asyncio.TimeoutError as exc:
            raise ServiceError(
                503, f"no slot free within the {settings.timeout:g} s deadline; not run"
            ) from exc
        expected = self._per_document.get(name, 0.0) * len(call.documents)
        if deadline - time.monotonic() < expected:  # it would only be cancelled half-way
            await self.admission.release()
            raise ServiceError(
                503,
                f"not run: about {expected:.1f} s of work would not finish within the "
                f"{settings.timeout:g} s deadline",
            )
        # Work past its deadline, or whose client has gone, is cancelled: it stops at its
        # next await, and embedding work waiting for a micro-batch is dropped (ABANDONED).
        # The slot is released when the task ends.
        started = time.monotonic()
        self.metrics.queue_time.observe(started - queued)
        abandoned = threading.Event()
        tokens = (ENCODE_HOOK.set(self.batching), ABANDONED.set(abandoned))
        try:
            task = asyncio.ensure_future(
                reranker.arerank(call.query, call.documents, top_k=call.top_n)
            )
        finally:
            ENCODE_HOOK.reset(tokens[0])
            ABANDONED.reset(tokens[1])
        task.add_done_callback(self._finished)
        try:
            result = await asyncio.wait_for(
                asyncio.shield(task), max(deadline - time.monotonic(), 0.0)
            )
        except asyncio.TimeoutError as exc:
            abandoned.set()
            task.cancel()
            raise ServiceError(
                503, f"no answer within the {settings.timeout:g} s deadline"
            ) from exc
        except asyncio.CancelledError:  # the client went away
            abandoned.set()
            task.cancel()
            raise
        except InputError as exc:
            raise ServiceError(400, str(exc)) from exc
        except (MissingDependencyError, ModelLoadError) as exc:
            raise ServiceError(503, f"pipeline {name!r} is unavailable: {exc}") from exc
        except ServiceError:
            raise
        except Exception as exc:
            logger.exception("rerank failed")
            raise ServiceError(500, f"internal error: {type(exc).__name__}") from exc
        what = result.unusable
        if what is not None:
            status = 500 if result.failed else 502  # else every LLM judgment failed: provider
            raise ServiceError(status, f"pipeline {name!r}: {what}: {'; '.join(result.warnings)}")
        finished = time.monotonic()
        self.metrics.inference_time.labels(name).observe(finished - started)
        per_document = (finished - started) / len(call.documents)  # a moving average
        known = self._per_document.get(name)
        self._per_document[name] = (
            per_document if known is None else 0.8 * known + 0.2 * per_document
        )
        self.metrics.documents.inc(len(call.documents))
        call.timings.update(queue=started - queued, inference=finished - started)
        return result
