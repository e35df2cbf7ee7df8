"""One declared pipeline as the service runs it, on resources of its own (a bulkhead): a
thread pool for its blocking calls, its share of the request slots (see
:mod:`.admission`), and its loader.

The loader makes one load attempt at a time, started by the service (never by a request):
the pipeline is built and its models loaded on a thread of its own that ends with the
attempt, then it reranks a warm-up batch within the request ``timeout``. A failed attempt is
retried after 5 s, then twice as long each time, up to ``retry_max_seconds``; one that
failed for a package that is not installed is not retried (no retry can mend it: install it
and restart the service), and ``/ready`` says so. Until the
pipeline is ready its requests are answered 503 at once, with a ``Retry-After`` taken from
the attempts' timing (see :meth:`~.state.PipelineState.retry_after`). However long an
attempt hangs (a hub that never answers), it holds no thread, slot or queue place that
another pipeline needs.

A ready pipeline whose requests then fail ``FAILING_AFTER`` times in a row (a provider that
stalls or refuses mid-day, or a local model too slow to answer within the deadline) is
``failing``: it still serves, since only an answered request
can tell it works again, but ``/info``, ``/ready``'s body, ``rerankit_pipeline_healthy``
and one log line say so (see :meth:`ServedPipeline.request_failed`). A request that
missed its deadline mostly waiting behind other requests (overload: see
:meth:`ServedPipeline.out_of_time`) does not count."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._threads import Waits, in_loading_thread, work_scope
from ..cache import pipeline_fingerprint
from ..errors import (
    ConfigError,
    InvalidDocumentError,
    MissingDependencyError,
    ServiceError,
    for_the_log,
)
from ..ordering import Rule
from ..rerankers.cascade import Pipeline
from ..scorers.local import load_models
from ..spec_toml import files_read_once
from .building import build_pipeline
from .logs import REQUEST_ID
from .metrics import Metrics
from .request_timeout import request_timeout
from .settings import ServerSettings
from .state import PipelineState, one_line, summary

__all__ = ["FIRST_RETRY_SECONDS", "ServedPipeline", "run_abandoning"]

#: the first retry of a pipeline that failed to load waits this long; each further one
#: twice as long, up to ``retry_max_seconds``
FIRST_RETRY_SECONDS = 5.0
WARM_UP = ("warm up", ["a warm-up document", "another one"])

logger = logging.getLogger(__name__)


async def run_abandoning(
    task: asyncio.Future, seconds: float, abandoned: threading.Event, name: str
) -> Any:
    """``task`` (pipeline ``name``'s work)'s result within ``seconds``; on a timeout
    (``asyncio.TimeoutError``) or cancellation of the caller, ``abandoned`` is set and the
    task cancelled, without waiting for work it has on a thread (which cannot be stopped:
    it ends on its own, and nothing of the task's starts after it). A task that ended
    cancelled while the caller was not (something it shared with another request, whose
    request was abandoned, was cancelled under it) is a 503 to retry: a ``CancelledError``
    would pass every error handler as if the request itself had been cut."""
    try:
        done, _ = await asyncio.wait({task}, timeout=max(seconds, 0.0))
    except BaseException:  # the caller was cancelled (its client left, or a shutdown)
        abandoned.set()
        task.cancel()
        raise
    if not done:
        abandoned.set()
        task.cancel()
        raise asyncio.TimeoutError
    if task.cancelled():  # nobody waits for what may still run of it
        abandoned.set()
        logger.warning("pipeline %r: a request's work was cancelled under it; answered 503", name)
        raise ServiceError(
            503,
            f"pipeline {name!r}: not answered: its work was cancelled, though the request was "
            "not (work it shared with an abandoned request); retry",
            {"Retry-After": "1"},
            code="work_cancelled",
        )
    return task.result()


class ServedPipeline:
    """Pipeline ``name`` (declared as ``spec``): its reranker once loaded, its
    :class:`~.state.PipelineState`, its own thread pool (``threads`` workers), and its
    loader (:meth:`start_loading`)."""

    def __init__(
        self, name: str, spec: Any, settings: ServerSettings, metrics: Metrics, threads: int
    ) -> None:
        self.name, self.spec, self.settings, self.metrics = name, spec, settings, metrics
        self.state = PipelineState()
        self.reranker: Any = None  # set once an attempt succeeded
        #: the answer cache's fingerprint of the loaded pipeline (None: answers not cached)
        self.fingerprint: str | None = None
        self.built: Any = None  # built at start (to check the spec), used by the first attempt
        #: the pipeline files ``built`` was built from, as read then (its fingerprint's too)
        self._read: dict[str, Any] = {}
        self._threads = threads
        self.executor = self._new_executor()
        self._loader: asyncio.Task | None = None
        self.settled = asyncio.Event()  # set once the first attempt has ended
        #: seconds of work per text scored and per request (moving averages), for shedding
        self.per_document: float | None = None
        self.service_time = 0.0
        self._texts = 0.0
        #: when each running request got its slot (by slot): their ages count in shedding
        self.running_since: dict[Any, float] = {}

    def build(self) -> None:
        """Build the pipeline now (models load later): a mistake in its spec stops the
        service at start with a ConfigError naming the pipeline, stage and key. A failure
        of another kind (a missing package) is left to the loader, which says why."""
        try:
            # [cache] reaches the scorers' caches; each file read once, for the fingerprint too
            with files_read_once() as self._read:
                self.built = build_pipeline(self.spec, self.settings)
        except (ConfigError, ValueError, TypeError) as exc:
            raise ConfigError(str(exc), where=f"pipeline {self.name!r}") from exc
        except Exception as exc:  # built again (and reported) when it loads
            logger.debug("pipeline %r not built at start: %s", self.name, exc)

    def scope(
        self,
        deadline: float | None,
        abandoned: threading.Event | None,
        waited: Waits | None = None,
    ) -> Any:
        """The context of this pipeline's work (see :func:`rerankit._threads.work_scope`)."""
        return work_scope(
            executor=self.executor, deadline=deadline, abandoned=abandoned, waited=waited
        )

    @property
    def ready(self) -> bool:
        return self.state.status == "ready" and self.reranker is not None

    def unavailable(self, shown_error: str | None = None) -> ServiceError:
        """The 503 a request gets while the pipeline is not ready (at once, with when to
        come back). ``shown_error``: said in place of the load error's text (an
        unauthenticated ``/ready?model=``'s, which may not show it)."""
        state = self.state
        error = state.error if shown_error is None else shown_error
        wait = state.retry_after(self.settings.retry_max_seconds) or 1
        running, next_in = state.loading_for(), state.retry_in()
        if running is not None:
            doing = f"attempt {state.attempts}, {running:.0f} s so far"
            now = f"loading again ({doing})" if state.error else f"loading ({doing})"
        elif next_in is not None:
            now = f"next load attempt in {next_in:.0f} s"
        else:
            now = "loading"
        if state.permanent:
            return ServiceError(
                503,
                f"pipeline {self.name!r} is unavailable: {error}; it is not retried "
                "(restart the service once it has what it needs)",
                code="pipeline_not_installed",  # with no Retry-After: no wait mends it
            )
        why = f"is unavailable: {error}; {now}" if state.error else f"is {now}"
        return ServiceError(
            503,
            f"pipeline {self.name!r} {why}; retry in {wait} s",
            {"Retry-After": str(wait)},
            code="pipeline_failed" if state.error else "pipeline_loading",
        )

    def start_loading(self, delay: float = 0.0) -> None:
        """Start the loader unless it runs: attempts (the first after ``delay`` s) until one
        succeeds."""
        if self._loader is not None and not self._loader.done():
            return
        # started by a request (a model it found gone) or not, its lines name no request
        outside = contextvars.copy_context()
        outside.run(REQUEST_ID.set, None)
        self._loader = outside.run(
            asyncio.get_running_loop().create_task,
            self._keep_loading(delay),
            name=f"rerankit-load:{self.name}",
        )

    async def _keep_loading(self, delay: float) -> None:
        while True:
            if delay > 0:
                await asyncio.sleep(delay)
            if await self._attempt() or self.state.permanent:
                return
            delay = self.state.retry_in() or 0.0

    async def _attempt(self) -> bool:
        """One load attempt: build and load on a thread of its own, then a warm-up batch."""
        self.state.begin()
        built, self.built = self.built, None  # a retry builds afresh: nothing half-loaded
        read, self._read = (self._read if built is not None else {}), {}  # and reads afresh
        try:
            reranker, fingerprint = await in_loading_thread(
                f"rerankit-load-{self.name}", self._load, built, read
            )
            fell_back = await self._warm_up(reranker)
        except Exception as exc:
            message = exc.message if isinstance(exc, ServiceError) else f"{exc}"
            self.failed(
                message or type(exc).__name__, missing=isinstance(exc, MissingDependencyError)
            )
        else:
            self.reranker, self.fingerprint = reranker, fingerprint
            self.state.succeeded()
            if fell_back is None:
                logger.info("pipeline %r ready", self.name)
            else:  # as a request would be answered now: degraded, shown in /info
                self.state.note_degraded(one_line(fell_back))
                logger.warning(
                    "pipeline %r ready, but its warm-up answer fell back to an earlier "
                    "stage (%s): its answers are degraded until that stage answers",
                    self.name,
                    for_the_log(one_line(fell_back)),  # a provider's text: not in the log
                )
        self.settled.set()
        return self.ready

    def _load(self, built: Any, read: dict[str, Any]) -> tuple[Any, str | None]:
        """The pipeline (``built``, else built now) with its models loaded, and its
        fingerprint, taken from the pipeline files as they were read to build it
        (``read``: see :func:`~rerankit.spec_toml.files_read_once`)."""
        with files_read_once(read):
            if built is None:
                built = build_pipeline(self.spec, self.settings)
            load_models(built)
            return built, self._fingerprint(built)

    def _fingerprint(self, reranker: Any) -> str | None:
        """What identifies this pipeline's answers (see
        :func:`~rerankit.cache.pipeline_fingerprint`), when they are cached."""
        if not self.settings.answer_cache:
            return None
        try:
            return pipeline_fingerprint(self.spec, reranker)
        except (TypeError, ValueError) as exc:  # a spec given as objects, not plain data
            logger.warning("pipeline %r: its answers are not cached: %s", self.name, exc)
            return None

    async def _warm_up(self, reranker: Any) -> str | None:
        """Rerank a small batch (:data:`WARM_UP`: two texts, no fields) as a request would,
        within the request ``timeout``: an error when it gives no usable answer (but for an
        :class:`~rerankit.errors.InvalidDocumentError`, a scorer refusing those documents
        for a field they lack, which is logged: real requests decide), or a degraded one (a
        strategy failed), but for a cascade whose later stage failed and which answered with
        an earlier stage's order, as it answers requests while its provider is down: that
        one serves, and why it fell back is returned (else None)."""
        timeout = self.settings.timeout
        abandoned = threading.Event()
        with self.scope(time.monotonic() + timeout, abandoned):
            task = asyncio.get_running_loop().create_task(
                reranker.arerank(*WARM_UP), name=f"rerankit-load:{self.name}:warm-up"
            )
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            result = await run_abandoning(task, timeout, abandoned, self.name)
        except asyncio.TimeoutError:
            raise RuntimeError(f"the warm-up batch got no answer within {timeout:g} s") from None
        except InvalidDocumentError as exc:  # about the warm-up's documents, not the models
            logger.warning(
                "pipeline %r: its warm-up documents carry only a text, no fields, and it "
                "refused them (%s); its models are loaded, so it is ready and each request "
                "decides (one without the field gets this error)",
                self.name,
                exc,
            )
            return None
        self.metrics.llm_usage(self.name, result.usage)  # its calls are billed too
        if result.unusable is None and result.degraded and _fell_back(reranker, result):
            return summary("the warm-up answer fell back", list(result.warnings))
        if result.unusable is not None or result.degraded:  # degraded: a strategy failed
            what = result.unusable or "the warm-up answer was degraded"
            logger.debug("pipeline %r warm-up: %s", self.name, "; ".join(result.warnings))
            raise RuntimeError(summary(what, list(result.warnings)))
        return None

    def failed(self, error: str, *, by_request: bool = False, missing: bool = False) -> None:
        """The pipeline cannot run: its requests get 503 at once, and the loader tries again
        after the backoff (a failure reported by a request starts it; one reported by a
        request after the pipeline stopped being ready changes nothing), or, when a package
        it needs is ``missing``, never. ``error`` is said in one line (the whole of it in the
        log at debug level)."""
        state = self.state
        if by_request and state.status != "ready":
            return
        if one_line(error) != error:
            logger.debug("pipeline %r failed: %s", self.name, error)
            error = one_line(error)
        if missing:
            state.failed(error, None)
            self.reranker = None
            self.metrics.pipeline_failures.labels(self.name).inc()
            logger.error(
                "pipeline %r cannot load: %s (not retried: restart the service once it has what "
                "it needs)",
                self.name,
                error,
            )
            return
        delay = min(FIRST_RETRY_SECONDS * 2**state.failures, self.settings.retry_max_seconds)
        state.failed(error, delay)
        self.reranker = None
        self.metrics.pipeline_failures.labels(self.name).inc()
        logger.warning("pipeline %r failed: %s (retry in %.0f s)", self.name, error, delay)
        self.start_loading(delay)  # (a no-op from the loader itself, which goes on)

    def request_failed(self, why: str, detail: str | None = None) -> None:
        """A request the pipeline ran got no answer (``why``, in one line; ``detail``, the
        whole of it, is logged at debug level): the ``FAILING_AFTER``-th in a row turns the
        pipeline ``failing``, said once in the log and counted in
        ``rerankit_pipeline_failures_total``."""
        state = self.state
        logger.debug("pipeline %r: a request got no answer: %s", self.name, detail or why)
        why = one_line(why)
        probe = self.settings.failing_probe_seconds
        if state.request_failed(why, probe):
            self.metrics.pipeline_failures.labels(self.name).inc()
            logger.warning(
                "pipeline %r is failing: its last %d requests got no answer (the last: %s); %s, "
                "and says so in /info until a request is answered",
                self.name,
                state.streak,
                for_the_log(why),
                f"its requests get 503 at once but for one every {probe:g} s let through to try it"
                if probe > 0
                else "it still runs every request",
            )

    def out_of_time(self, waited: float, timeout: float | None = None) -> ServiceError:
        """The 504 of a request that got no answer by its deadline (which a balancer does
        not retry elsewhere): the service's ``timeout``, or the shorter ``timeout`` its
        ``x-rerankit-timeout`` header set. It counts towards ``failing`` unless it spent at
        least half its deadline (``waited`` seconds) waiting behind other requests: for a
        slot, for a thread, for the model thread that every local model shares, for a
        micro-batch. That is overload (requests too many or too large for the timeout), not
        a broken pipeline; its own work running past the deadline (a stalled provider, a
        model too slow for the timeout) still counts, but for a client's shorter deadline:
        that is the client's budget, not the pipeline's failure."""
        timeout, asked = request_timeout(timeout, self.settings.timeout)
        why = f"no answer within the {timeout:g} s deadline"
        why += " its x-rerankit-timeout header set" if asked else ""
        if waited < timeout / 2:
            if not asked:
                self.request_failed(why)
            return ServiceError(
                504,
                f"pipeline {self.name!r}: {why}",
                {"Retry-After": "1"},
                code="deadline_exceeded",
                details={"timeout": timeout},
            )
        logger.debug(
            "pipeline %r: a request waited %.1f s behind others: %s", self.name, waited, why
        )
        # (the waits it adds up can overlap, and a stuck request runs ``stuck_grace`` past)
        said = "all of it" if waited >= timeout else f"{waited:.1f} s of it"
        return ServiceError(
            504,
            f"pipeline {self.name!r}: {why}; it waited {said} behind other requests (the "
            "service is overloaded: send fewer or smaller requests)",
            {"Retry-After": "1"},
            code="deadline_exceeded_overloaded",
            details={"timeout": timeout},
        )

    def refuse_if_failing(self) -> None:
        """Raise the 503 a request gets at once while the pipeline is ``failing`` and the
        next try is not due (``failing_probe_seconds``): one request is let through that
        often, and the first answered ends the failing state."""
        wait = self.state.refuse_for(self.settings.failing_probe_seconds)
        if wait is None:
            return
        after = max(1, math.ceil(wait))
        raise ServiceError(
            503,
            f"pipeline {self.name!r} is failing: {self.state.failing}; the next request is let "
            f"through to try it in {after} s",
            {"Retry-After": str(after)},
            code="pipeline_failing",
        )

    def answered(self, degraded: str | None = None) -> None:
        """A request was answered (``degraded``: why its answer was, in one line): a
        ``failing`` pipeline is healthy again (logged once); degraded answers in a row show in
        ``/info`` until one is not."""
        state = self.state
        state.note_degraded(None if degraded is None else one_line(degraded))
        if state.streak == 0:
            return
        failed, since = state.failed_requests, state.failing_since
        if state.answered() and since is not None:
            logger.info(
                "pipeline %r answers again, after %d failed requests over %.0f s",
                self.name,
                failed,
                time.time() - since,
            )

    def record(self, took: float, texts: int) -> None:
        """An answered request's time and the texts it scored (documents, or their chunks),
        for the moving averages shedding reads. The time per text is the average time over
        the average texts, so a request's fixed cost, which weighs most in small requests,
        does not make a large one look slower than it is."""
        self.service_time = took if not self.service_time else 0.8 * self.service_time + 0.2 * took
        self._texts = texts if not self._texts else 0.8 * self._texts + 0.2 * texts
        self.per_document = self.service_time / self._texts

    def close(self) -> None:
        """Stop the loader and drop calls that have not started (running ones end alone);
        the pipeline can start again (a host may run the app's lifespan more than once)."""
        if self._loader is not None:
            self._loader.cancel()
            self._loader = None
        if not self.settled.is_set():  # a later start waits on a fresh event (its loop's)
            self.settled = asyncio.Event()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._new_executor()

    def _new_executor(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(self._threads, thread_name_prefix=f"rerankit-{self.name}")


def _fell_back(reranker: Any, result: Any) -> bool:
    """Whether a cascade's result stands on an earlier stage's order because its last
    scoring stage scored nothing (an LLM judge whose provider is down)."""
    if not isinstance(reranker, Pipeline) or result.ranked_by is None:
        return False
    scoring = [s.name for s in reranker.stages if not isinstance(s.step, Rule)]
    return bool(scoring) and result.ranked_by != scoring[-1]
