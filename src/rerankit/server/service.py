"""What runs a request inside the service: the pipelines (each on resources of its own,
loaded in the background: :mod:`.pipeline`) with their deadlines and micro-batched
embeddings, behind admission (:mod:`.admission`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from dataclasses import replace
from typing import Any

from .._threads import Waits, in_thread, waits
from ..errors import (
    InputError,
    MissingDependencyError,
    ModelLoadError,
    ServiceError,
    failure_cause,
)
from ..llm.resilience import rate_limit_wait
from ..normalize import ranked_unit_scores, served_scales
from ..rerankers.base import input_checked
from ..rerankers.cascade import ANSWER_DEPTH, FINISHED_STAGES, Pipeline
from ..rerankers.deadline import deadline_warning
from ..types import RerankResult, check_top_k
from .admission import Admission
from .answers import Answers
from .batching import MicroBatching, request_hooks
from .cache_report import log_cache
from .formats.base import Call, check_count
from .metrics import Metrics
from .pipeline import FIRST_RETRY_SECONDS, ServedPipeline, run_abandoning
from .request_timeout import request_timeout
from .settings import ServerSettings
from .shared_cache import SharedCache
from .shedding import no_slot, shed, too_big, too_late
from .state import PipelineState, summary
from .tokens import by_tokens, gather, tokens_of

__all__ = ["FIRST_RETRY_SECONDS", "Admission", "PipelineState", "Service"]

logger = logging.getLogger(__name__)

#: the longest Retry-After (seconds) a request that the LLM provider's rate limit failed is
#: answered with (429), whatever the provider asked: the cohere SDK waits at most 60 s
RATE_LIMIT_WAIT_CAP = 60


class _Slot:
    """An admission slot of pipeline ``name`` released exactly once: when the request's
    work ends, or ``grace`` seconds after its deadline if the work is stuck in a thread that
    cannot be stopped (the thread runs on; the slot is free for others)."""

    def __init__(self, service: Service, name: str, running: dict[Any, float]) -> None:
        self.service, self.name, self.running = service, name, running
        self.released = False
        self.freed_at = 0.0  # when freed before its work ended

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        self.running.pop(self, None)
        service = self.service
        task = asyncio.ensure_future(service.admission.release(self.name))
        service._releasing.add(task)
        task.add_done_callback(service._releasing.discard)


class Service:
    """The pipelines by name, admission, metrics and batching: one rerank per request."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.metrics = Metrics(settings.timeout, tuple(settings.pipelines or ()))
        share = settings.pipeline_share()
        self.admission = Admission(
            settings.max_concurrency, settings.max_queue, self.metrics, share
        )
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
        #: each pipeline with its own thread pool: two threads per slot it may hold (a
        #: request may count tokens beside its scoring)
        self.pipelines = {
            name: ServedPipeline(name, spec, settings, self.metrics, threads=2 * share)
            for name, spec in (settings.pipelines or {}).items()
        }
        for pipeline in self.pipelines.values():
            pipeline.build()  # a mistake in a spec stops the service here
        self.answers = Answers(settings, self.metrics)  # off unless answer_cache
        self.shared_cache = SharedCache(settings, self.metrics)  # [cache] url's server
        self.metrics.watch_readiness(
            lambda: {n: p.ready for n, p in self.pipelines.items()},
            lambda: {n: p.ready and p.state.healthy for n, p in self.pipelines.items()},
        )
        self.ready = asyncio.Event()  # set once every pipeline's first attempt has ended
        self.stopping = False  # a stop began: /ready says so (requests may still be served)
        self.warm_up_seconds = 0.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._releasing: set[asyncio.Future] = set()  # strong references until each ran
        #: each pipeline's tokenizer, found once (by the pipeline object's id)
        self._tokens: dict[int, tuple[Any, Any]] = {}

    def named(self, name: str | None, family: str | None = None) -> ServedPipeline:
        """The pipeline ``name`` (or an alias, or None: the default) names, ready or not;
        404 listing them when there is none, offering the request's API ``family`` first."""
        name = self.settings.resolve(name)
        if name not in self.pipelines:
            why = self.settings.not_found(name, self.pipelines, family)
            raise ServiceError(404, why, code="unknown_model")
        return self.pipelines[name]

    def pipeline(self, name: str | None, family: str | None = None) -> ServedPipeline:
        """The ready pipeline ``name`` (or the default): 404 if none, 503 loading or failed."""
        pipeline = self.named(name, family)
        if not pipeline.ready:
            raise pipeline.unavailable()
        return pipeline

    def _by_tokens(self, call: Call, reranker: Any) -> tuple[list[Any], list[int] | None]:
        """``call``'s documents cut to its token cap and (``max_chunks``) split into chunks,
        tokenised once with the pipeline's tokenizer; the cuts, splits and billed units are
        recorded on ``call``. Returns the documents to score and each chunk's input index."""
        known = self._tokens.get(id(reranker))
        if known is None or known[0] is not reranker:  # looked up once per pipeline
            known = self._tokens[id(reranker)] = (reranker, tokens_of(reranker))
        return by_tokens(call, known[1])

    def loaded(self, name: str) -> bool:
        """Whether pipeline ``name`` is ready (loaded and warmed up)."""
        return self.pipelines[name].ready

    def describe_state(self, name: str) -> dict[str, Any]:
        """Where pipeline ``name`` stands, as ``/ready`` and ``/info`` say it."""
        return self.pipelines[name].state.describe(self.settings.retry_max_seconds)

    def describe_scores(self, name: str) -> dict[str, Any]:
        """What pipeline ``name``'s scores mean (None until it is loaded)."""
        reranker = self.pipelines[name].reranker
        if reranker is None:
            return {"scores": None}
        out: dict[str, Any] = {
            **served_scales(reranker.score_scale),  # relevance_score's, TEI's raw_scores'
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
        """Start every pipeline's loader at once (each on its own thread: a slow one delays
        no other) and wait until each first attempt has ended; then warm-up is done
        (``ready`` is set). A pipeline that failed answers 503 at once and is retried in the
        background with backoff; one that is ready serves meanwhile."""
        self.loop = asyncio.get_running_loop()
        start = time.perf_counter()
        said = asyncio.to_thread(log_cache, self.settings)  # one PING of a shared server
        for pipeline in self.pipelines.values():
            if not pipeline.ready:  # (ready already when the app starts again)
                pipeline.start_loading()
        await asyncio.gather(said, *(p.settled.wait() for p in self.pipelines.values()))
        self.warm_up_seconds = time.perf_counter() - start
        failed = sorted(n for n, p in self.pipelines.items() if not p.ready)
        if failed:
            logger.warning(
                "rerankit service warmed up in %.1f s; pipelines that failed: %s",
                self.warm_up_seconds,
                ", ".join(failed),
            )
        else:
            logger.info("rerankit service ready: warm-up took %.1f s", self.warm_up_seconds)
        self.ready.set()

    def stop_retries(self) -> None:
        for pipeline in self.pipelines.values():
            pipeline.close()

    def stop_being_ready(self) -> None:
        """``/ready`` answers 503 ``stopping`` from now on; requests are still served (the
        drain period after SIGTERM: see :mod:`.shutdown`)."""
        self.stopping = True

    def begin_shutdown(self) -> None:
        """From any thread (a signal handler): stop being ready, and answer every queued
        and new request 503 while the running ones finish (:meth:`.Admission.drain`)."""
        self.stopping = True
        loop = self.loop
        if loop is None or loop.is_closed():
            return

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

    def _free_later(self, task: asyncio.Future, slot: _Slot, deadline: float) -> None:
        """Nobody waits for ``task`` any more (it was cancelled: it stops at its next
        await): free its slot ``stuck_grace`` seconds after the deadline if it is still
        running then (work inside a thread cannot be stopped)."""
        grace = max(0.0, deadline + self.settings.stuck_grace - time.monotonic())

        def free() -> None:
            if not task.done() and not slot.released:
                logger.warning("work past its deadline still runs in a thread; slot freed")
                slot.freed_at = time.monotonic()
                slot.release()

        asyncio.get_running_loop().call_later(grace, free)

    def _shed(self, pipeline: ServedPipeline, call: Call, deadline: float) -> None:
        """Refuse at once a request that would only wait in the queue to miss its
        deadline (:func:`.shedding.shed`): no work, and no queue place, is spent on it."""
        timeout, asked = request_timeout(call.timeout, self.settings.timeout)
        refused = shed(pipeline, self.admission, len(call.documents), deadline, timeout, asked)
        if refused is not None:
            if refused.status != 413:  # (a 413: too big for any deadline, not shed)
                self.metrics.shed.labels(pipeline.name).inc()
            raise refused

    async def run(self, endpoint: str, call: Call, arrival: float | None = None) -> RerankResult:
        """Rerank ``call`` within one deadline: ``timeout`` seconds (or the call's own) from
        ``arrival`` (``time.monotonic()``), covering the wait for a slot and the work. A
        request to a pipeline that is not ready, or still queued at its deadline, gets 503
        without running. Once it is answered, none of its work starts."""
        return await self.compute(self.check(endpoint, call), call, arrival)

    def check(self, endpoint: str, call: Call) -> ServedPipeline:
        """The ready pipeline ``call`` names, once the call is found valid (else a 400, 404
        or 503); its documents are counted. (Every request is counted as it is answered,
        by :mod:`.middleware`, valid or not.)"""
        settings = self.settings
        pipeline = self.pipeline(call.model, call.family)
        if not call.query.strip():
            raise ServiceError(400, "query must not be empty", code="invalid_request")
        if not call.documents:
            raise ServiceError(400, "documents must not be empty", code="invalid_request")
        check_count(len(call.documents), settings)
        try:
            check_top_k(call.top_n, "top_n")
        except ValueError as exc:
            raise ServiceError(400, str(exc), code="invalid_request") from exc
        self.metrics.batch_documents.labels(pipeline.name).observe(len(call.documents))
        return pipeline

    async def compute(
        self, pipeline: ServedPipeline, call: Call, arrival: float | None = None
    ) -> RerankResult:
        """:meth:`run` for a call :meth:`check` passed."""
        if not pipeline.ready:  # it failed since (the answer cache awaits in between)
            raise pipeline.unavailable()
        pipeline.refuse_if_failing()
        timeout, _ = request_timeout(call.timeout, self.settings.timeout)
        deadline = (time.monotonic() if arrival is None else arrival) + timeout
        self._shed(pipeline, call, deadline)
        abandoned = threading.Event()
        try:
            with pipeline.scope(deadline, abandoned, Waits()):
                return await self._run(pipeline, call, deadline, abandoned)
        except BaseException:  # nothing of it that has not started starts now
            abandoned.set()
            raise

    async def _run(
        self, pipeline: ServedPipeline, call: Call, deadline: float, abandoned: threading.Event
    ) -> RerankResult:
        reranker = pipeline.reranker
        docs, owners = call.documents, None
        billing = None  # counting tokens only: beside the scoring, which does not need it
        if call.max_tokens is not None or call.max_chunks is not None:
            counting = in_thread(self._by_tokens, call, reranker)
            docs, owners = await self._tokens_for(pipeline, counting)
        elif call.bill:
            billing = asyncio.ensure_future(in_thread(self._by_tokens, call, reranker))
        try:
            result = await self._score(pipeline, call, docs, owners, deadline, abandoned)
        except BaseException:  # no answer: its count is not needed
            if billing is not None:
                billing.cancel()
                billing.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise
        if billing is not None:
            await self._tokens_for(pipeline, billing)
        return result

    def _unavailable(self, pipeline: ServedPipeline, exc: BaseException) -> ServiceError:
        """A model the pipeline needs cannot be loaded: it is marked failed (and loaded
        again in the background); the request gets its 503."""
        pipeline.failed(str(exc), by_request=True)
        return pipeline.unavailable()

    async def _tokens_for(self, pipeline: ServedPipeline, counting: Any) -> Any:
        try:
            return await counting
        except (MissingDependencyError, ModelLoadError) as exc:
            raise self._unavailable(pipeline, exc) from exc

    async def _score(
        self,
        pipeline: ServedPipeline,
        call: Call,
        docs: Any,
        owners: Any,
        deadline: float,
        abandoned: threading.Event,
    ) -> RerankResult:
        name, (timeout, asked) = pipeline.name, request_timeout(call.timeout, self.settings.timeout)
        queued = time.monotonic()
        try:
            await asyncio.wait_for(self.admission.acquire(name), max(deadline - queued, 0))
        except asyncio.TimeoutError as exc:
            raise no_slot(name, timeout) from exc
        expected = (pipeline.per_document or 0.0) * len(docs)  # (chunks, when split)
        refused = too_big(name, pipeline.per_document, len(docs), timeout, asked)
        refused = refused or too_late(name, expected, deadline, timeout)
        if refused is not None:  # it would only be cancelled half-way
            await self.admission.release(name)
            raise refused
        # Work past its deadline, or whose client has gone, is cancelled: it stops at its
        # next await, and work not started on a thread (or waiting for a micro-batch) is
        # dropped (the request's ``abandoned`` is set). The slot is released when the task
        # ends.
        started = time.monotonic()
        self.metrics.queue_time.labels(name).observe(started - queued)
        # every document is ranked and top_n cuts the answer afterwards: relative scores
        # are min-max normalised over every document of the request (never rising with
        # rank: a cascade's documents left behind score below those kept), and whether a call's
        # scores are relative is known only once it ran (a hybrid fusing the retriever's
        # scores, a pipeline whose documents were last scored on different scales)
        # chunks share their document's id: gather checks the documents' own ids instead
        checked = input_checked() if owners is not None else contextlib.nullcontext()
        # a cascade's scale is that of the documents the answer holds
        context: dict[str, Any] = {ANSWER_DEPTH: call.top_n} if owners is None else {}
        finished: list[tuple[str, Any]] = []  # a cascade's stages that ended (see there)
        if isinstance(pipeline.reranker, Pipeline):
            context[FINISHED_STAGES] = finished
        with request_hooks(self.batching, abandoned), checked:  # the task copies them
            task = asyncio.get_running_loop().create_task(
                pipeline.reranker.arerank(call.query, docs, context=context or None),
                name=f"rerankit-request:{name}",
            )
        slot = _Slot(self, name, pipeline.running_since)
        pipeline.running_since[slot] = started  # its age counts in shedding until released
        task.add_done_callback(lambda t: self._finished(t, slot))
        late = False  # answered at the deadline with the stages that had ended
        try:
            result = await run_abandoning(task, deadline - time.monotonic(), abandoned, name)
        except asyncio.TimeoutError as exc:  # it ran and got no answer in time: 504, which
            self._free_later(task, slot, deadline)  # a balancer does not try elsewhere
            if not finished:
                raise pipeline.out_of_time(started - queued + waits().seconds(), timeout) from exc
            result, late = self._at_deadline(name, finished[-1], timeout), True
        except asyncio.CancelledError:  # the client went away
            self._free_later(task, slot, deadline)
            raise
        except InputError as exc:  # a document's error names it (in the request's list)
            raise ServiceError(400, exc.located(), code="invalid_request") from exc
        except (MissingDependencyError, ModelLoadError) as exc:
            raise self._unavailable(pipeline, exc) from exc
        except ServiceError:
            raise
        except Exception as exc:
            logger.exception("rerank failed")
            pipeline.request_failed(f"internal error: {type(exc).__name__}: {exc}")
            said = f"internal error: {type(exc).__name__}"
            raise ServiceError(500, said, code="internal_error") from exc
        self.metrics.llm_usage(name, result.usage)  # (before an unusable result's error)
        if owners is not None:  # chunks scored: each document by its best
            result = gather(result, owners, call.documents, None)
        if result.score_scale == "relative":
            unit = ranked_unit_scores([r.score for r in result])  # falling with rank
            call.relevance.update({r.index: float(u) for r, u in zip(result, unit, strict=True)})
        call.pipeline_cuts.update(  # every document's, before top_n drops some
            (r.index, cut)
            for r in result
            if (cut := [f for f in r.flags if f.startswith("truncated:")])
        )
        if call.top_n is not None:
            result = result.top_k(call.top_n)
        what = result.unusable
        if what is not None and time.monotonic() >= deadline:  # its calls ran out of time
            raise pipeline.out_of_time(started - queued + waits().seconds(), timeout)
        if what is not None:  # said in one line (every warning in the log at debug level)
            why = summary(what, list(result.warnings))
            wait = rate_limit_wait([r.flags for r in result], result.warnings)
            if wait is not None and not result.failed:  # the provider is up, just limiting:
                after = str(min(max(1, math.ceil(wait)), RATE_LIMIT_WAIT_CAP))  # not failing
                logger.debug("pipeline %r: rate-limited: %s", name, "; ".join(result.warnings))
                raise ServiceError(
                    429,
                    f"pipeline {name!r}: {why}",
                    {"Retry-After": after},
                    code="provider_rate_limited",
                )
            pipeline.request_failed(why, f"{what}: {'; '.join(result.warnings)}")
            status = 500 if result.failed else 502  # else every LLM judgment failed: provider
            raise ServiceError(
                status,
                f"pipeline {name!r}: {why}",
                code="scoring_failed" if result.failed else "provider_failed",
            )
        pipeline.answered(failure_cause(result.warnings) if result.degraded else None)
        if result.degraded:
            self.metrics.degraded_answers.labels(name).inc()
        ended = time.monotonic()
        self.metrics.inference_time.labels(name).observe(ended - started)
        if not late:  # (a stalled stage's time would make shedding refuse requests)
            pipeline.record(ended - started, len(docs))  # per text scored
        self.metrics.documents.labels(name).inc(len(call.documents))
        call.timings.update(queue=started - queued, inference=ended - started)
        return result

    def _at_deadline(self, name: str, last: tuple[str, Any], timeout: float) -> RerankResult:
        """The answer of cascade ``name`` whose deadline (``timeout`` s) came while a stage ran:
        ``last`` (FINISHED_STAGES' last: that stage, and the earlier ones' answer), degraded."""
        stage, ended = last[0], last[1]()
        why = deadline_warning(stage, timeout)  # as a Python rerank says it
        logger.warning("pipeline %r: %s", name, why)
        return replace(ended, degraded=True, warnings=(why, *ended.warnings))
