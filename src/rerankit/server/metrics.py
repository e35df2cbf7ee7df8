"""The service's Prometheus metrics (every answer counted once and timed, by endpoint and
pipeline; errors by status; queue depth, requests in flight, queue and inference time,
readiness and health, by pipeline; documents per request; embedding micro-batches;
abandoned requests; LLM provider calls, failures and tokens, by pipeline; the answer
cache, and the cache calls that failed; requests refused over ``max_connections``), with
the version and what runs it (``rerankit_build_info``, ``python_info``) and the standard
process series of prometheus_client's ProcessCollector (memory, CPU, start time, open
files: read from /proc, absent where there is none), each of the process that answers the
scrape (one worker of ``serve --workers N``). docs/service.md's metrics table lists them
all, and a test compares it with a live scrape."""

from __future__ import annotations

import importlib.util
import platform
from collections.abc import Mapping
from typing import Any

from .. import __version__
from .._optional import require
from ..cache import error_counts, skipped_counts
from .connections import refused_count

__all__ = ["LATENCY_BUCKETS", "Metrics", "installed_backends"]

#: seconds: from a cached answer's milliseconds to well past the default 30 s deadline (a
#: request answered 504 at its deadline lands just above it); the service's own ``timeout``
#: and twice it are added, whatever they are
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)

#: the model runtimes ``rerankit_build_info{backends}`` names where installed: the extra
#: that brings each (``onnx``, ``torch``) and the modules it needs (looked up, not imported)
_BACKENDS = {"onnx": ("onnxruntime", "tokenizers"), "torch": ("torch", "sentence_transformers")}


def installed_backends() -> str:
    """The model runtimes installed here, comma-separated (``onnx,torch``; ``""``: neither,
    so only models that need no runtime, such as ``bm25`` and LLM judges, can run)."""
    found = [k for k, needs in _BACKENDS.items() if all(map(importlib.util.find_spec, needs))]
    return ",".join(found)


class _CacheErrors:
    """``rerankit_cache_errors_total{cache=...}`` and ``rerankit_cache_skipped_total``: read
    from :func:`rerankit.cache.error_counts` and :func:`rerankit.cache.skipped_counts` when
    scraped."""

    def __init__(self) -> None:
        from prometheus_client.core import CounterMetricFamily  # (after require: the extra)

        self.family = CounterMetricFamily

    def collect(self) -> Any:
        family = self.family(
            "rerankit_cache_errors",
            "Cache calls that tried the cache and failed (unreachable, slow, full, locked), "
            "so went without it, by cache, since the process started",
            labels=["cache"],
        )
        for kind, count in error_counts().items():
            family.add_metric([kind], count)
        yield family
        skipped = self.family(
            "rerankit_cache_skipped",
            "Cache calls that went without the cache without trying it: the Redis server is "
            "skipped for a second after each failure, by cache, since the process started",
            labels=["cache"],
        )
        for kind, count in skipped_counts().items():
            skipped.add_metric([kind], count)
        yield skipped


class _Refused:
    """``rerankit_connections_refused_total``: read from
    :func:`~rerankit.server.connections.refused_count` when scraped (uvicorn answers those
    requests itself: they never reach the app)."""

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily(
            "rerankit_connections_refused",
            "Requests answered with uvicorn's plain-text 503 because max_connections "
            "connections were open in this process (they never reach the service)",
        )
        family.add_metric([], refused_count())
        yield family


class _ByPipeline:
    """A gauge by pipeline (label ``model``) read from ``read()`` (name -> bool: 1 or 0)
    when scraped: ``rerankit_pipeline_ready`` and ``rerankit_pipeline_healthy``."""

    def __init__(self, name: str, documentation: str, read: Any) -> None:
        from prometheus_client.core import GaugeMetricFamily

        self.family, self.name, self.documentation, self.read = (
            GaugeMetricFamily,
            name,
            documentation,
            read,
        )

    def collect(self) -> Any:
        family = self.family(self.name, self.documentation, labels=["model"])
        for name, value in sorted(self.read().items()):
            family.add_metric([name], 1.0 if value else 0.0)
        yield family


class Metrics:
    """The service's metrics in a registry of their own. ``timeout``: the request deadline
    (its latency buckets reach past it); ``pipelines``: their names, so that every
    per-pipeline gauge starts at 0 for each."""

    def __init__(self, timeout: float = 30.0, pipelines: tuple[str, ...] = ()) -> None:
        prom = require("prometheus_client", "rerankit serve")
        self.registry = prom.CollectorRegistry()
        self.pipelines = frozenset(pipelines)
        seconds = sorted({*LATENCY_BUCKETS, float(timeout), 2.0 * timeout})
        self.requests = prom.Counter(
            "rerankit_requests_total",
            "Requests to the rerank endpoints, whatever their answer (invalid ones included), "
            "by endpoint and pipeline (model is empty when the request named no pipeline "
            "served, or could not be read)",
            ["endpoint", "model"],
            registry=self.registry,
        )
        self.errors = prom.Counter(
            "rerankit_errors_total",
            "Answers with a status of 400 or more, by status and pipeline (model is empty "
            "outside rerank requests; readiness and liveness probes are not counted)",
            ["status", "model"],
            registry=self.registry,
        )
        self.latency = prom.Histogram(
            "rerankit_request_seconds",
            "Time from a request's arrival to its answer, by endpoint (the route; unmatched "
            "for a path the service does not have) and pipeline (empty outside rerank "
            "requests)",
            ["endpoint", "model"],
            buckets=seconds,
            registry=self.registry,
        )
        self.queue = prom.Gauge(
            "rerankit_queue_depth",
            "Requests waiting for a slot, by pipeline",
            ["model"],
            registry=self.registry,
        )
        self.in_flight = prom.Gauge(
            "rerankit_in_flight",
            "Requests holding a slot (being reranked), by pipeline",
            ["model"],
            registry=self.registry,
        )
        self.documents = prom.Counter(
            "rerankit_documents_scored_total",
            "Documents of the requests a pipeline answered (not from the answer cache), by "
            "pipeline",
            ["model"],
            registry=self.registry,
        )
        self.queue_time = prom.Histogram(
            "rerankit_queue_seconds",
            "Time waiting for a slot, by pipeline",
            ["model"],
            buckets=seconds,
            registry=self.registry,
        )
        self.inference_time = prom.Histogram(
            "rerankit_inference_seconds",
            "Time reranking (from the slot to the result), by pipeline",
            ["model"],
            buckets=seconds,
            registry=self.registry,
        )
        self.abandoned = prom.Counter(
            "rerankit_abandoned_total",
            "Requests dropped because the client disconnected before the answer",
            registry=self.registry,
        )
        self.batch_documents = prom.Histogram(
            "rerankit_request_documents",
            "Documents per valid request, by pipeline",
            ["model"],
            buckets=(1, 5, 10, 20, 50, 100, 200, 500, 1000),
            registry=self.registry,
        )
        self.batch_texts = prom.Histogram(
            "rerankit_encode_batch_texts",
            "Texts per embedding micro-batch",
            buckets=(1, 8, 16, 32, 64, 128, 256, 512),
            registry=self.registry,
        )
        self.batch_tokens = prom.Histogram(
            "rerankit_encode_batch_tokens",
            "Tokens per embedding micro-batch (when a token budget is set)",
            buckets=(64, 256, 1024, 4096, 8192, 16384, 32768),
            registry=self.registry,
        )
        self.batch_pairs = prom.Histogram(
            "rerankit_pair_batch_pairs",
            "Cross-encoder pairs scored together (continuous batching)",
            buckets=(1, 16, 32, 64, 128, 256, 512, 1024, 2048),
            registry=self.registry,
        )
        self.shed = prom.Counter(
            "rerankit_shed_total",
            "Requests refused before queueing: the queue ahead would outlast their deadline, "
            "by pipeline",
            ["model"],
            registry=self.registry,
        )
        self.stuck_seconds = prom.Histogram(
            "rerankit_stuck_seconds",
            "How long work past its deadline ran on in a thread after its slot was freed",
            buckets=(0.1, 0.5, 1, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.pipeline_failures = prom.Counter(
            "rerankit_pipeline_failures_total",
            "Times a pipeline failed to load or warm up, a request found its model missing, "
            "or its requests began failing",
            ["model"],
            registry=self.registry,
        )
        self.degraded_answers = prom.Counter(
            "rerankit_degraded_answers_total",
            "Answers that were degraded (x-rerankit-degraded: a strategy, LLM judgments or a "
            "cascade stage failed or missed the deadline, and the answer fell back), by pipeline",
            ["model"],
            registry=self.registry,
        )
        self.llm_calls = prom.Counter(
            "rerankit_llm_calls",
            "Calls to an LLM provider (each attempt, retries and failed calls included), by "
            "pipeline, counted from the usage each rerank reports (what /v1/explain shows), "
            "its warm-up's included; not counted: the calls of a stage cut by the request's "
            "deadline (a 504, or a cascade answered with an earlier stage's order) and of a "
            "request whose client left, though the provider may bill them",
            ["model"],
            registry=self.registry,
        )
        self.llm_failures = prom.Counter(
            "rerankit_llm_failures",
            "LLM calls (with their retries) that left a document without a judgment (failed "
            "after their retries, or no readable judgment in the answer), by pipeline",
            ["model"],
            registry=self.registry,
        )
        self.llm_tokens = prom.Counter(
            "rerankit_llm_tokens",
            "Tokens the LLM provider reported, by pipeline and type (input, output), from the "
            "same usage as rerankit_llm_calls_total (not counted where it is not); a call "
            "that failed or timed out before an answer counts 0 tokens, though the provider "
            "may bill it",
            ["model", "type"],
            registry=self.registry,
        )
        self.answers = prom.Counter(
            "rerankit_answer_cache",
            "Requests to the answer cache by result: hit (read from the cache), shared (the "
            "answer of an identical request computed at the same time in this process), miss "
            "(computed)",
            ["model", "result"],
            registry=self.registry,
        )
        self.answer_bytes = prom.Counter(
            "rerankit_answer_cache_bytes",
            "Bytes of answer bodies read from (read) and written to (written) the answer cache",
            ["direction"],
            registry=self.registry,
        )
        self.registry.register(_CacheErrors())
        self.registry.register(_Refused())
        prom.Info(
            "rerankit_build",
            "Always 1: the rerankit version, the Python version and the model runtimes "
            "installed (backends: onnx, torch) of the process that answers the scrape",
            registry=self.registry,
        ).info(
            {
                "version": __version__,
                "python": platform.python_version(),
                "backends": installed_backends(),
            }
        )
        # the standard series every Prometheus client exports: process_* (where /proc is)
        # and python_info, of this process (a scrape reaches one worker of --workers N)
        prom.ProcessCollector(registry=self.registry)
        prom.PlatformCollector(registry=self.registry)
        self._prom = prom
        for name in self.pipelines:  # every pipeline's series from the start, at 0
            self.queue.labels(name).set(0)
            self.in_flight.labels(name).set(0)
            for family in (self.shed, self.documents, self.batch_documents, self.degraded_answers):
                family.labels(name)
            for family in (self.llm_calls, self.llm_failures):
                family.labels(name)
            for kind in ("input", "output"):
                self.llm_tokens.labels(name, kind)

    def watch_readiness(self, ready: Any, healthy: Any) -> None:
        """Export ``rerankit_pipeline_ready`` from ``ready()`` and
        ``rerankit_pipeline_healthy`` from ``healthy()`` (each: pipeline name -> bool)."""
        self.registry.register(
            _ByPipeline(
                "rerankit_pipeline_ready",
                "1 while the pipeline is ready (loaded and warmed up), 0 while it loads or failed",
                ready,
            )
        )
        self.registry.register(
            _ByPipeline(
                "rerankit_pipeline_healthy",
                "1 while the pipeline is ready and its requests are answered, 0 while it "
                "loads, failed, or is failing (its last requests in a row got no answer)",
                healthy,
            )
        )

    def answered(
        self, endpoint: str, model: str, status: int, seconds: float, *, rerank: bool, probe: bool
    ) -> None:
        """One answer: timed; counted as a request when it answered one to a rerank endpoint
        (``rerank``), and as an error by status unless it answered a ``probe`` (``/ready``'s
        503 is a state, not an error). A ``model`` that names no pipeline served is counted
        as ``""``: a client sending made-up names must not add series without end."""
        model = model if model in self.pipelines else ""
        if rerank:
            self.requests.labels(endpoint, model).inc()
        if status >= 400 and not probe:
            self.errors.labels(str(status), model).inc()
        self.latency.labels(endpoint, model).observe(seconds)

    def llm_usage(self, model: str, usage: Mapping[str, int]) -> None:
        """What one rerank of pipeline ``model`` cost at its LLM provider: ``usage`` as the
        result reports it (:attr:`rerankit.RerankResult.usage`; empty without an LLM stage)."""
        if usage.get("calls"):
            self.llm_calls.labels(model).inc(usage["calls"])
        if usage.get("failures"):
            self.llm_failures.labels(model).inc(usage["failures"])
        for kind in ("input", "output"):
            if usage.get(f"{kind}_tokens"):
                self.llm_tokens.labels(model, kind).inc(usage[f"{kind}_tokens"])

    def encode_batch(self, texts: int, tokens: int) -> None:
        """One micro-batch encoded (called from the batcher's thread)."""
        self.batch_texts.observe(texts)
        if tokens:
            self.batch_tokens.observe(tokens)

    def pair_batch(self, pairs: int, _tokens: int) -> None:
        """One batch of cross-encoder pairs scored (called from the batcher's thread)."""
        self.batch_pairs.observe(pairs)

    def render(self) -> tuple[bytes, str]:
        return self._prom.generate_latest(self.registry), self._prom.CONTENT_TYPE_LATEST
