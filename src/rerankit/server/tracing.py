"""OpenTelemetry tracing of the service (extra ``otel``): one span per rerank request and one
per stage and scorer of its pipeline.

Configured as any OpenTelemetry SDK is, by the standard environment variables:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) turns it on and
says where spans go (OTLP over HTTP/protobuf; ``OTEL_TRACES_EXPORTER=console`` prints them
instead), ``OTEL_SERVICE_NAME`` names the service (default ``rerankit``),
``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG`` sample, ``OTEL_RESOURCE_ATTRIBUTES``
adds attributes and ``OTEL_SDK_DISABLED=true`` turns it off. A tracer provider the process
already set (``opentelemetry-instrument``, your own code) is used as it is. Without the extra,
or with nothing configured, no tracer exists and nothing is done per request.

Each request is one trace, joined to the caller's through a ``traceparent`` header: FastAPI
(from 0.16x, which traces requests itself once a tracer provider is set up) makes the HTTP
span, kind SERVER, named ``POST /v2/rerank``; rerankit's ``rerank <pipeline>`` span is its
child (kind INTERNAL), with the stages and scorers under it. Where no HTTP span is current
(an older FastAPI), rerankit's span is the SERVER span, joined to the caller's trace
itself. Probes and scrapes (``/health``, ``/ready``, ``/metrics``) are not traced, and
FastAPI's operation spans (dependency resolution, the endpoint call) are off: rerankit's
own say more. The rerank span carries the attributes proposed for GenAI rerank operations
(``gen_ai.operation.name = "rerank"``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.rerank.candidate.count``, ``gen_ai.rerank.top_n``, ``gen_ai.usage.input_tokens``)
and rerankit's own (``rerankit.pipeline``, ``rerankit.score_scale``, ``rerankit.degraded``,
``rerankit.queue_seconds``, ``rerankit.inference_seconds``, ``rerankit.truncated``,
``rerankit.chunked``).
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from .. import __version__
from .._optional import install_hint
from ..errors import ServiceError
from ..spans import TRACER

__all__ = ["UNTRACED", "fastapi_telemetry", "request_attributes", "setup_tracer", "traced"]

logger = logging.getLogger(__name__)

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
#: paths not traced: probes and scrapes, which come every few seconds and say nothing
UNTRACED = frozenset({"/health", "/ready", "/metrics"})


def fastapi_telemetry(provider: Any = None) -> dict[str, Any]:
    """The keyword arguments that set up FastAPI's own telemetry for the service (none for
    a FastAPI without it): probes and scrapes untraced, no operation spans, and the tracer
    provider the service was given (else the process's)."""
    import fastapi

    if "telemetry" not in inspect.signature(fastapi.FastAPI.__init__).parameters:
        return {}
    config: dict[str, Any] = {
        "exclude": lambda scope: scope.get("path") in UNTRACED,
        "operation_spans": False,
    }
    if provider is not None:
        config["tracer_provider"] = provider
    return {"telemetry": config}


def setup_tracer(provider: Any = None) -> Any | None:
    """The service's tracer: from ``provider`` when given; else None when OpenTelemetry is
    absent, disabled or not set up (no provider set by the process, no exporter named by
    the environment)."""

    if provider is not None:
        return provider.get_tracer("rerankit", __version__)
    if importlib.util.find_spec("opentelemetry") is None:
        return None
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        exporter = _exporter()
        if exporter is None:
            return None
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME") or "rerankit"}
        )
        provider = TracerProvider(resource=resource)  # reads OTEL_TRACES_SAMPLER itself
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        logger.info("rerankit service: tracing to %s", type(exporter).__name__)
    return trace.get_tracer("rerankit", __version__)


def _exporter() -> Any | None:
    """The span exporter the environment names (None: none)."""
    names = [
        n.strip().lower()
        for n in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")
        if n.strip()
    ]
    if "console" in names:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if "none" in names or not ("otlp" in names or any(os.environ.get(e) for e in _ENDPOINTS)):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        logger.warning(
            "tracing is configured but the OTLP exporter is missing: %s", install_hint("otel")
        )
        return None
    return OTLPSpanExporter()  # endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*


def request_attributes(call: Any, pipeline: str | None, result: Any | None) -> dict[str, Any]:
    """A request span's attributes from its call and (once answered) its result."""
    out: dict[str, Any] = {
        "gen_ai.operation.name": "rerank",
        "gen_ai.provider.name": "rerankit",
        "gen_ai.request.model": call.model or pipeline or "",
        "gen_ai.rerank.candidate.count": len(call.documents),
        "rerankit.pipeline": pipeline or "",
    }
    if call.top_n is not None:
        out["gen_ai.rerank.top_n"] = call.top_n
    if result is None:
        return out
    out["rerankit.score_scale"] = result.score_scale
    out["rerankit.degraded"] = bool(result.degraded)
    for key in ("queue", "inference"):
        if key in call.timings:
            out[f"rerankit.{key}_seconds"] = round(call.timings[key], 6)
    if "input_tokens" in call.usage:
        out["gen_ai.usage.input_tokens"] = call.usage["input_tokens"]
    cut = call.cut_documents()  # the service's cuts and the pipeline's (max_passages, ...)
    if cut:
        out["rerankit.truncated"] = len(cut)
    if call.splits:
        out["rerankit.chunked"] = len(call.splits)
    return out


async def traced(
    tracer: Any,
    headers: Any,
    route: str,
    call: Any,
    pipeline: str | None,
    work: Callable[[], Awaitable[Any]],
    answered: Callable[[Any], dict[str, Any]] | None = None,
) -> Any:
    """``await work()`` inside a request span (and with :data:`rerankit.spans.TRACER` set,
    so the pipeline's stages and scorers get spans of their own under it): a child of the
    HTTP server span when one is current (FastAPI's), else the SERVER span itself, joined to
    the trace ``headers`` name. Once it returns, the span takes ``answered(what it
    returned)`` as attributes, by default :func:`request_attributes` of it as the request's
    result."""
    from opentelemetry import trace
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind, Status, StatusCode

    if trace.get_current_span().get_span_context().is_valid:  # the HTTP span: under it
        parent, kind = None, SpanKind.INTERNAL
    else:
        parent, kind = extract(dict(headers)), SpanKind.SERVER

    attributes = {
        **request_attributes(call, pipeline, None),
        "http.request.method": "POST",
        "http.route": route,
    }
    with tracer.start_as_current_span(
        f"rerank {pipeline}", context=parent, kind=kind, attributes=attributes
    ) as span:
        token = TRACER.set(tracer)
        try:
            result = await work()
        except ServiceError as exc:
            span.set_attribute("http.response.status_code", exc.status)
            span.set_attribute("error.type", str(exc.status))
            span.set_status(Status(StatusCode.ERROR, exc.message))
            raise
        finally:
            TRACER.reset(token)
        described = answered(result) if answered else request_attributes(call, pipeline, result)
        span.set_attributes(described)
        span.set_attribute("http.response.status_code", 200)
        return result
