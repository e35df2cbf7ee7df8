"""What the service says about itself: ``/health`` (liveness), ``/ready`` (readiness),
``/v1/models``, ``/info`` and ``/metrics`` (Prometheus)."""

from __future__ import annotations

import os
from typing import Any

from fastapi import Query
from fastapi.responses import Response

from .. import __version__
from .http import ErrorBody, SafeJSONResponse
from .readiness import ready_answer
from .service import Service
from .settings import ServerSettings
from .status_shapes import Health, Info, Models, NotReady, Ready

__all__ = ["MODEL_ENDPOINTS", "add_status_routes"]

#: what ``/v1/models`` says each pipeline answers, in Cohere's form (kinds of request, not
#: paths): ``rerank`` (``/v1/rerank``, ``/v2/rerank``, ``/rerank``) and rerankit's own
#: ``explain`` (``/v1/explain``)
MODEL_ENDPOINTS = ("rerank", "explain")


def _experiments(settings: ServerSettings) -> dict[str, Any]:
    """What ``/info`` says of the experiments on logged answers: the click log (its
    ``path``, what it stores of each document, how long records are kept, whether it
    takes feedback for answers it does not hold), the
    interleaving (the pair, the share of the first's requests, the method) and the
    exploration (the share of requests, the chance of each pair below the top 3); null
    where one is off."""
    log = settings.feedback
    pair = settings.interleave
    return {
        "feedback": None
        if log is None
        else {
            "path": str(log.path),
            "store": log.store,
            "retention_days": log.retention_days,
            "accept_unknown_ids": log.accept_unknown_ids,
        },
        "interleave": None
        if not pair
        else {
            "pipelines": list(pair),
            "share": settings.interleave_share,
            "method": settings.interleave_method,
        },
        "explore": None
        if not settings.explore
        else {"share": settings.explore, "pairs": settings.explore_pairs},
    }


def add_status_routes(app: Any, service: Service, settings: ServerSettings) -> None:
    """``/health``, ``/ready``, ``/v1/models``, ``/info`` and ``/metrics``."""
    metrics = service.metrics

    # each answer's shape is for the OpenAPI document only (response_model=None: the
    # answers are sent as built); 401, 405, 431 and 500 are the document's (:mod:`.openapi`)
    @app.get(
        "/health",
        summary="Liveness: the process answers",
        response_model=None,
        responses={200: {"model": Health, "description": "The process answers"}},
    )
    async def health() -> Any:
        """200 while the process answers, whatever its pipelines do (a liveness probe:
        restarting the process would not help a pipeline that failed to load), with the
        pipelines served and the default one. Needs no key."""
        return {"status": "ok", "models": sorted(settings.pipelines), "default": settings.default}

    @app.get(
        "/ready",
        summary="Readiness: of the service, or of one pipeline",
        response_model=None,
        responses={
            200: {"model": Ready, "description": "Ready (or, for one pipeline, `failing`)"},
            404: {"model": ErrorBody, "description": "No pipeline or alias of that name"},
            503: {"model": NotReady, "description": "Not ready, and why"},
        },
    )
    async def ready(
        model: str | None = Query(
            default=None, description="A pipeline or an alias: that pipeline's readiness"
        ),
    ) -> Any:
        """Readiness. Without `model`: 503 until every pipeline has loaded and run a warm-up
        batch, and while any pipeline has failed (naming them and their errors; with
        `ready_when = "any"`, 200 as soon as one pipeline is ready). With `?model=NAME` (a
        pipeline or an alias): 200 when that pipeline is ready, else 503 saying where it
        stands (`loading` or `failed`, its error and when to retry); 404 listing the
        pipelines and aliases for a name the service does not serve. A ready pipeline whose
        last requests all failed (`failing`: a provider down since) stays ready, and the
        200 says so (`failing`, with why and since when). 503 `stopping` once a
        stop began (during the drain period after SIGTERM too), and, with `[cache] required
        = true`, 503 while the shared cache cannot be used (its reason in a few words: `/info`
        names the server and the error). Needs no key."""
        status, body, headers = await ready_answer(service, model)
        if status == 503 and headers is None:  # (a pipeline's: what its requests are told)
            headers = {"Retry-After": "1"}
        return SafeJSONResponse(body, status_code=status, headers=headers)

    @app.get(
        "/v1/models",
        summary="The names a request's model can take",
        response_model=None,
        responses={200: {"model": Models, "description": "Every pipeline, then every alias"}},
    )
    async def models() -> Any:
        """Every pipeline and alias a request's `model` may name, with the endpoints that
        serve it, whether it is the default, what its scores mean (`scores`: the scale of
        `relevance_score`; `raw_scores`: the pipeline's own) and, for an alias, the pipeline
        it names (`alias_of`). Scores are null until the pipeline has loaded."""
        return {
            "models": [
                {
                    "name": n,
                    "endpoints": list(MODEL_ENDPOINTS),
                    "default": n == settings.default,
                    **service.describe_scores(n),
                }
                for n in sorted(settings.pipelines)
            ]
            + [  # other names clients may send (Cohere's model names, by default)
                {
                    "name": alias,
                    "endpoints": list(MODEL_ENDPOINTS),
                    "default": False,
                    "alias_of": target,
                    **service.describe_scores(target),
                }
                for alias, target in sorted((settings.aliases or {}).items())
            ]
        }

    @app.get(
        "/info",
        summary="What this service runs, and where it stands",
        response_model=None,
        responses={200: {"model": Info, "description": "The service's account of itself"}},
    )
    async def info() -> Any:
        """The version; each pipeline's spec, state (`ready`, `failing`: its last requests
        got no answer, with why, since when and when a request is next let through
        to try it; `loading`, `failed`, with its error,
        attempts and when it is retried) and what its scores mean; the limits
        (per pipeline too), micro-batching, the answer cache, the experiments on logged
        answers (interleaving and exploration, with the click log they need), whether the
        service is ready (as `/ready` would answer, its shared cache included; when not,
        `not_ready` says why, in full) and which process answered (`rerankit serve
        --workers`)."""
        # one PING: whether the server answers, and whether the replica is ready for it
        checked = await service.shared_cache.check()
        status, why, _ = await ready_answer(service, public=False, cache_checked=(checked,))
        return {
            "version": __version__,
            "default": settings.default,
            "pipelines": {
                name: {
                    "spec": spec if isinstance(spec, str) else dict(spec),
                    "loaded": service.loaded(name),
                    **service.describe_state(name),
                    **service.describe_scores(name),
                }
                for name, spec in settings.pipelines.items()
            },
            "limits": {
                "max_documents": settings.max_documents,
                "max_document_chars": settings.max_document_chars,
                "max_body_bytes": settings.max_body_bytes,
                "timeout": settings.timeout,
                "max_concurrency": settings.max_concurrency,
                "max_queue": settings.max_queue,
                # what one pipeline may hold of them (the rest stays for the others)
                "max_concurrency_per_pipeline": service.admission.share,
                "max_queue_per_pipeline": service.admission.queue_share,
            },
            "batching": {
                "enabled": settings.batching,
                "max_items": settings.batch_max_items,
                "max_tokens": settings.batch_max_tokens or None,
                "max_wait_ms": settings.batch_max_wait_ms,
                "pairs": settings.batch_pairs if settings.batching else "off",
                "max_pairs": settings.batch_max_pairs,
            },
            "cache": {
                **service.answers.describe(),
                "server": service.shared_cache.describe(checked),
            },
            "experiments": _experiments(settings),
            "ready": status == 200,
            **({} if status == 200 else {"not_ready": why}),
            "process": {"pid": os.getpid()},  # which worker answered (rerankit serve --workers)
        }

    @app.get(
        "/metrics",
        summary="Prometheus metrics",
        description="Every metric in Prometheus' text format (the HTTP service page lists "
        "them with their labels). Needs no key unless `metrics_public = false`.",
        response_class=Response,
        responses={
            200: {
                "content": {"text/plain": {"schema": {"type": "string"}}},
                "description": "Prometheus metrics",
            }
        },
    )
    async def prometheus() -> Any:
        await service.shared_cache.check()  # rerankit_cache_up as the server answers now
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)
