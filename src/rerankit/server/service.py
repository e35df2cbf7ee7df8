"""What runs a request inside the service: the pipelines with their deadlines, warm-up,
background retries and micro-batched embeddings, behind admission (:mod:`.admission`)."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from typing import Any

from .._threads import in_thread
from ..api import load
from ..errors import (
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelLoadError,
    ServiceError,
)
from ..types import RerankResult, check_top_k
from .admission import Admission
from .batching import MicroBatching, request_hooks
from .formats.base import Call
from .metrics import Metrics
from .settings import ServerSettings
from .state import PipelineState
from .tokens import by_tokens, gather, tokens_of

__all__ = ["Admission", "PipelineState", "Service"]

#: the first background retry of a pipeline that failed to load waits this long; each
#: further one twice as long, up to ``retry_max_seconds``
FIRST_RETRY_SECONDS = 5.0

logger = logging.getLogger(__name__)


class _Slot:
    """An admission slot released exactly once: when the request's work ends, or
    ``grace`` seconds after its deadline if the work is stuck in a thread that cannot be
    stopped (the thread runs on; the slot is free for others)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.released = False
        self.freed_at = 0.0  # when freed before its work ended

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        service = self.service
        task = asyncio.ensure_future(service.admission.release())
        service._releasing.add(task)
        task.add_done_callback(service._releasing.discard)


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
                pairs=settings.batch_pairs,
                max_pairs=settings.batch_max_pairs,
                on_pairs=self.metrics.pair_batch,
            )
            if settings.batching
            else None
        )
        self._pipelines: dict[str, Any] = {}
        self.states = {name: PipelineState() for name in settings.pipelines}
        self._retries: dict[str, asyncio.Task] = {}
        self.ready = asyncio.Event()  # set once warm-up has finished (see readiness())
        self.warm_up_seconds = 0.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._releasing: set[asyncio.Future] = set()  # strong references until each ran
        #: seconds of work per document, by pipeline (a moving average of answered requests):
        #: a request granted a slot with less time left than that is answered 503 at once
        self._per_document: dict[str, float] = {}
        self._service_time = 0.0  # seconds per request (a moving average), for shedding
        #: each pipeline's tokenizer, found once (by the pipeline object's id)
        self._tokens: dict[int, tuple[Any, Any]] = {}
        self._build_all()

    def _build_all(self) -> None:
        """Build every declared pipeline now (models load later, at warm-up): a mistake in
        a spec stops the service at start with a ConfigError naming the pipeline, stage and
        key. A pipeline whose build fails otherwise (a missing package) is left to warm-up,
        which marks it failed and says why."""

        for name, spec in self.settings.pipelines.items():
            try:
                self._pipelines[name] = load(spec)
            except (ConfigError, ValueError, TypeError) as exc:
                raise ConfigError(str(exc), where=f"pipeline {name!r}") from exc
            except Exception as exc:  # built again (and reported) when it warms up
                logger.debug("pipeline %r not built at start: %s", name, exc)

    def pipeline(self, name: str | None, *, warming: bool = False) -> Any:

        name = self.settings.resolve(name)
        if name not in self.settings.pipelines:
            available = ", ".join(sorted(self.settings.pipelines))
            raise ServiceError(404, f"model {name!r} not found; available: {available}")
        state = self.states[name]
        if state.status == "failed" and not warming:
            wait = max(1, round(state.retry_in() or 1))
            raise ServiceError(
                503,
                f"pipeline {name!r} is unavailable: {state.error} (retried in the background; "
                f"next try in {wait} s)",
                {"Retry-After": str(wait)},
            )
        if name not in self._pipelines:
            try:
                self._pipelines[name] = load(self.settings.pipelines[name])
            except (ValueError, TypeError) as exc:
                raise ServiceError(500, f"pipeline {name!r} is misconfigured: {exc}") from exc
        return self._pipelines[name]

    def _by_tokens(self, call: Call, reranker: Any) -> tuple[list[Any], list[int] | None]:
        """``call``'s documents cut to its token cap and (``max_chunks``) split into chunks,
        tokenised once with the pipeline's tokenizer; the cuts, splits and billed units are
        recorded on ``call``. Returns the documents to score and, for chunks, the input
        index of each."""
        known = self._tokens.get(id(reranker))
        if known is None or known[0] is not reranker:  # looked up once per pipeline
            known = self._tokens[id(reranker)] = (reranker, tokens_of(reranker))
        return by_tokens(call, known[1])

    def loaded(self, name: str) -> bool:
        """Whether pipeline ``name`` has warmed up (or served a request) and not failed."""
        return self.states[name].status == "ready" or (
            self.states[name].status == "loading" and name in self._pipelines
        )

    def describe_scores(self, name: str) -> dict[str, Any]:
        """What pipeline ``name``'s scores mean (None until it is loaded)."""
        reranker = self._pipelines.get(name)
        if reranker is None:
            return {"scores": None}
        out: dict[str, Any] = {
            "scores": reranker.score_scale,
            "pairwise": reranker.score_scale != "relative",
        }
        if getattr(reranker, "fuses_first_stage", False):  # a hybrid fusing a retriever score
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
        """Load every pipeline and rerank one small batch with each; then warm-up is done
        (``ready`` is set) and :meth:`readiness` says whether the service is ready. A
        pipeline that fails is marked failed with its error, answers 503 at once, and is
        retried in the background with backoff."""
        self.loop = asyncio.get_running_loop()
        start = time.perf_counter()
        for name in self.settings.pipelines:
            await self._warm(name)
        self.warm_up_seconds = time.perf_counter() - start
        failed = sorted(n for n, st in self.states.items() if st.status == "failed")
        if failed:
            logger.warning(
                "rerankit service warmed up in %.1f s; pipelines that failed: %s",
                self.warm_up_seconds,
                ", ".join(failed),
            )
        else:
            logger.info("rerankit service ready: warm-up took %.1f s", self.warm_up_seconds)
        self.ready.set()

    async def _warm(self, name: str) -> bool:
        """Build pipeline ``name`` afresh if it failed before, and rerank a small batch."""
        state = self.states[name]
        if state.status == "failed":
            self._pipelines.pop(name, None)  # a fresh build: nothing half-loaded is kept
        try:
            reranker = self.pipeline(name, warming=True)
            result = await reranker.arerank("warm up", ["a warm-up document", "another one"])
            if result.unusable is not None:
                raise RuntimeError(f"{result.unusable}: {'; '.join(result.warnings)}")
            if result.degraded:  # a strategy failed: the pipeline is not what was declared
                raise RuntimeError("; ".join(result.warnings) or "degraded")
        except Exception as exc:
            message = exc.message if isinstance(exc, ServiceError) else f"{exc}"
            self.mark_failed(name, message or type(exc).__name__)
            return False
        state.status, state.error, state.failures, state.retry_at = "ready", None, 0, None
        logger.info("pipeline %r ready", name)
        return True

    def mark_failed(self, name: str, error: str) -> None:
        """Pipeline ``name`` cannot run: its requests get 503 at once, and a background
        retry (never holding a request slot) is scheduled with exponential backoff."""
        state = self.states[name]
        state.status, state.error = "failed", error
        state.failures += 1
        delay = min(
            FIRST_RETRY_SECONDS * 2 ** (state.failures - 1), self.settings.retry_max_seconds
        )
        state.retry_at = time.monotonic() + delay
        self.metrics.pipeline_failures.labels(name).inc()
        logger.warning("pipeline %r failed: %s (retry in %.0f s)", name, error, delay)
        running = self._retries.get(name)
        if running is None or running.done():
            self._retries[name] = asyncio.get_running_loop().create_task(self._retry(name, delay))

    async def _retry(self, name: str, delay: float) -> None:
        while self.states[name].status == "failed":
            await asyncio.sleep(delay)
            if await self._warm(name):
                return
            delay = self.states[name].retry_in() or delay

    def stop_retries(self) -> None:
        for task in self._retries.values():
            task.cancel()

    def readiness(self) -> tuple[int, dict[str, Any]]:
        """The ``/ready`` answer: 503 while warming up, stopping, or (``ready_when="all"``)
        while any pipeline failed, naming them with their errors; 200 otherwise."""
        if self.admission.draining:
            return 503, {"status": "stopping"}
        states = {n: st.describe() for n, st in self.states.items()}
        if not self.ready.is_set():
            return 503, {"status": "loading", "pipelines": states}
        failed = {n: st.error for n, st in self.states.items() if st.status == "failed"}
        ok = [n for n, st in self.states.items() if st.status == "ready"]
        if (self.settings.ready_when == "all" and failed) or not ok:
            return 503, {"status": "failed", "failed": failed, "pipelines": states}
        body: dict[str, Any] = {
            "status": "ready",
            "warm_up_seconds": round(self.warm_up_seconds, 3),
        }
        if failed:  # ready_when = "any"
            body["failed"] = failed
        return 200, body

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

    def _finished(self, task: asyncio.Future, slot: _Slot) -> None:
        if not task.cancelled():
            task.exception()  # retrieved, so a failure after a timeout answer is not re-reported
        if slot.released:  # its slot was freed at deadline + grace: it ran that much longer
            self.metrics.stuck_seconds.observe(max(0.0, time.monotonic() - slot.freed_at))
        slot.release()

    def _abandon(
        self, task: asyncio.Future, abandoned: threading.Event, slot: _Slot, deadline: float
    ) -> None:
        """Nobody waits for ``task`` any more: cancel it (it stops at its next await), and
        free its slot ``stuck_grace`` seconds after the deadline if it is still running
        then (work inside a thread cannot be stopped)."""
        abandoned.set()
        task.cancel()
        grace = max(0.0, deadline + self.settings.stuck_grace - time.monotonic())

        def free() -> None:
            if not task.done() and not slot.released:
                logger.warning("work past its deadline still runs in a thread; slot freed")
                slot.freed_at = time.monotonic()
                slot.release()

        asyncio.get_running_loop().call_later(grace, free)

    def _shed(self, name: str, documents: int, deadline: float) -> None:
        """Refuse at once (503, ``Retry-After`` when the queue should have drained) a request
        that would only wait in the queue to miss its deadline: the requests ahead of it,
        at the recent time per request over the slots, plus its own expected work, do not
        fit in the time it has left. No work, and no queue place, is spent on it."""
        admission = self.admission
        if admission.running < admission.slots or not self._service_time:
            return
        wait = (admission.waiting + 1) * self._service_time / admission.slots
        work = self._per_document.get(name, 0.0) * documents
        if wait + work > deadline - time.monotonic():
            self.metrics.shed.inc()
            raise ServiceError(
                503,
                f"not queued: about {wait:.1f} s of queue ahead and {work:.1f} s of work "
                f"would not finish within the {self.settings.timeout:g} s deadline",
                {"Retry-After": str(max(1, math.ceil(wait)))},
            )

    async def run(self, endpoint: str, call: Call, arrival: float | None = None) -> RerankResult:
        """Rerank ``call`` within one deadline: ``timeout`` seconds from ``arrival`` (the
        request's arrival, ``time.monotonic()``), covering the wait for a slot and the work.
        A request still queued at its deadline gets 503 without running."""
        settings = self.settings
        deadline = (arrival if arrival is not None else time.monotonic()) + settings.timeout
        name = settings.resolve(call.model)
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
        self._shed(name, len(call.documents), deadline)
        docs, owners = call.documents, None
        billing = None  # counting tokens only: beside the scoring, which does not need it
        if call.max_tokens is not None or call.max_chunks is not None:
            docs, owners = await self._tokens_for(name, in_thread(self._by_tokens, call, reranker))
        elif call.bill:
            billing = asyncio.ensure_future(in_thread(self._by_tokens, call, reranker))
        try:
            result = await self._score(name, call, reranker, docs, owners, deadline)
        except BaseException:  # no answer: its count is not needed
            if billing is not None:
                billing.cancel()
                billing.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise
        if billing is not None:
            await self._tokens_for(name, billing)
        return result

    async def _tokens_for(self, name: str, counting: Any) -> Any:
        try:
            return await counting
        except (MissingDependencyError, ModelLoadError) as exc:
            self.mark_failed(name, str(exc))
            raise ServiceError(
                503, f"pipeline {name!r} is unavailable: {exc}", {"Retry-After": "5"}
            ) from exc

    async def _score(
        self, name: str, call: Call, reranker: Any, docs: Any, owners: Any, deadline: float
    ) -> RerankResult:
        settings = self.settings
        queued = time.monotonic()
        try:
            await asyncio.wait_for(self.admission.acquire(), max(deadline - time.monotonic(), 0))
        except asyncio.TimeoutError as exc:
            raise ServiceError(
                503,
                f"no slot free within the {settings.timeout:g} s deadline; not run",
                {"Retry-After": "1"},
            ) from exc
        expected = self._per_document.get(name, 0.0) * len(call.documents)
        if deadline - time.monotonic() < expected:  # it would only be cancelled half-way
            await self.admission.release()
            raise ServiceError(
                503,
                f"not run: about {expected:.1f} s of work would not finish within the "
                f"{settings.timeout:g} s deadline",
                {"Retry-After": "1"},
            )
        # Work past its deadline, or whose client has gone, is cancelled: it stops at its
        # next await, and embedding work waiting for a micro-batch is dropped (ABANDONED).
        # The slot is released when the task ends.
        started = time.monotonic()
        self.metrics.queue_time.observe(started - queued)
        abandoned = threading.Event()
        with request_hooks(self.batching, abandoned):  # the task copies them
            task = asyncio.ensure_future(
                reranker.arerank(call.query, docs, top_k=call.top_n if owners is None else None)
            )
        slot = _Slot(self)
        task.add_done_callback(lambda t: self._finished(t, slot))
        try:
            result = await asyncio.wait_for(
                asyncio.shield(task), max(deadline - time.monotonic(), 0.0)
            )
        except asyncio.TimeoutError as exc:
            self._abandon(task, abandoned, slot, deadline)
            raise ServiceError(
                503,
                f"no answer within the {settings.timeout:g} s deadline",
                {"Retry-After": "1"},
            ) from exc
        except asyncio.CancelledError:  # the client went away
            self._abandon(task, abandoned, slot, deadline)
            raise
        except InputError as exc:
            raise ServiceError(400, str(exc)) from exc
        except (MissingDependencyError, ModelLoadError) as exc:
            self.mark_failed(name, str(exc))
            raise ServiceError(
                503, f"pipeline {name!r} is unavailable: {exc}", {"Retry-After": "5"}
            ) from exc
        except ServiceError:
            raise
        except Exception as exc:
            logger.exception("rerank failed")
            raise ServiceError(500, f"internal error: {type(exc).__name__}") from exc
        if owners is not None:  # chunks scored: each document by its best
            result = gather(result, owners, call.documents, call.top_n)
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
        took = finished - started
        self._service_time = (
            took if not self._service_time else 0.8 * self._service_time + 0.2 * took
        )
        self.metrics.documents.inc(len(call.documents))
        call.timings.update(queue=started - queued, inference=finished - started)
        return result
