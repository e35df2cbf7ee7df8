"""The service's Prometheus metrics (every answer counted once by status and timed; queue
and inference time; documents per request; embedding micro-batches; abandoned requests; the
answer cache, and the cache calls that failed)."""

from __future__ import annotations

from typing import Any

from .._optional import require
from ..cache import error_counts

__all__ = ["Metrics"]


class _CacheErrors:
    """``rerankit_cache_errors_total{cache=...}``: read from
    :func:`rerankit.cache.error_counts` when scraped."""

    def __init__(self) -> None:
        from prometheus_client.core import CounterMetricFamily  # (after require: the extra)

        self.family = CounterMetricFamily

    def collect(self) -> Any:
        family = self.family(
            "rerankit_cache_errors",
            "Cache calls that went without the cache because it failed (unreachable, slow, "
            "full, locked), by cache, since the process started",
            labels=["cache"],
        )
        for kind, count in error_counts().items():
            family.add_metric([kind], count)
        yield family


class Metrics:
    def __init__(self) -> None:
        prom = require("prometheus_client", "rerankit serve")
        self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter(
            "rerankit_requests_total",
            "Rerank requests",
            ["endpoint", "model"],
            registry=self.registry,
        )
        self.errors = prom.Counter(
            "rerankit_errors_total",
            "Failed requests by status and pipeline (model is empty outside rerank requests; "
            "readiness and liveness probes are not counted)",
            ["status", "model"],
            registry=self.registry,
        )
        self.latency = prom.Histogram(
            "rerankit_request_seconds",
            "Request latency by endpoint",
            ["endpoint"],
            registry=self.registry,
        )
        self.queue = prom.Gauge(
            "rerankit_queue_depth", "Requests waiting for a slot", registry=self.registry
        )
        self.in_flight = prom.Gauge(
            "rerankit_in_flight", "Requests being reranked", registry=self.registry
        )
        self.documents = prom.Counter(
            "rerankit_documents_scored_total", "Documents scored", registry=self.registry
        )
        self.queue_time = prom.Histogram(
            "rerankit_queue_seconds", "Time waiting for a slot", registry=self.registry
        )
        self.inference_time = prom.Histogram(
            "rerankit_inference_seconds", "Time reranking", ["model"], registry=self.registry
        )
        self.abandoned = prom.Counter(
            "rerankit_abandoned_total",
            "Requests dropped because the client disconnected before the answer",
            registry=self.registry,
        )
        self.batch_documents = prom.Histogram(
            "rerankit_request_documents",
            "Documents per request",
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
            "Requests refused before queueing: the queue ahead would outlast their deadline",
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
            "Times a pipeline failed to load or warm up",
            ["model"],
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
        self._prom = prom

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
