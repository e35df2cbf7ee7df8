"""The rerank endpoints, one per wire format (:mod:`rerankit.server.formats`), and the
OpenAPI document with the Bearer key scheme."""

from __future__ import annotations

import time
from typing import Any

from fastapi import Request
from fastapi.openapi.utils import get_openapi

from ..errors import InputError, ServiceError
from .experiments import Experiments
from .feedback import FeedbackLog
from .formats import FORMATS
from .http import ErrorBody, SafeJSONResponse, parse, until_disconnect
from .service import Service
from .settings import ServerSettings
from .tracing import traced

__all__ = ["add_rerank_routes", "set_openapi"]


def add_rerank_routes(
    app: Any,
    service: Service,
    settings: ServerSettings,
    tracer: Any,
    feedback: FeedbackLog | None = None,
) -> None:
    """``POST`` one route per wire format; with ``feedback``, each answer with an ``id`` is
    logged (and may be an experiment: :mod:`.experiments`)."""
    metrics = service.metrics
    experiments = Experiments(service, settings) if feedback is not None else None

    def route(fmt: Any) -> Any:
        logged = experiments is not None and "id" in getattr(fmt.Response, "model_fields", {})

        async def handle(request: Request) -> Any:
            arrival = getattr(request.state, "arrival", None) or time.monotonic()
            body = await parse(request, fmt.Request, settings)
            try:
                call = fmt.call(body, settings)
            except InputError as exc:
                raise ServiceError(400, str(exc)) from exc
            request.state.model = settings.resolve(call.model)  # errors are counted by it
            run = experiments.run if logged and experiments is not None else service.run
            work = lambda: until_disconnect(  # noqa: E731
                request, run(fmt.path, call, arrival), metrics
            )
            if tracer is None:
                result = await work()
            else:
                result = await traced(
                    tracer, request.headers, fmt.path, call, request.state.model, work
                )
            result, shown = result if logged else (result, {})
            headers = {  # as Text Embeddings Inference sends them, in milliseconds
                "x-total-time": f"{1000 * (time.monotonic() - arrival):.1f}",
                "x-queue-time": f"{1000 * call.timings.get('queue', 0.0):.1f}",
                "x-inference-time": f"{1000 * call.timings.get('inference', 0.0):.1f}",
            }
            headers["x-rerankit-scores"] = result.score_scale
            if result.degraded:  # SDK users rarely read meta: the header says it too
                headers["x-rerankit-degraded"] = "true"
            for header, which in (("truncated", call.cuts), ("chunked", call.splits)):
                if which:  # said in meta too, where the format has one (TEI has not)
                    headers[f"x-rerankit-{header}"] = ",".join(map(str, sorted(which)))
            answer = fmt.respond(body, call, result)
            if logged and feedback is not None:
                served_by = request.state.model
                feedback.impression(answer, call.documents, call.query, served_by, **shown)
                if shown:  # its scores are not in decreasing order: say why
                    how = "interleaved" if "interleaving" in shown else "explored"
                    answer["meta"].setdefault("rerankit", {})["order"] = how
            return SafeJSONResponse(answer, headers=headers)

        schema = fmt.Request.model_json_schema()
        statuses = (400, 401, 404, 408, 413, 422, 429, 431, 500)
        errors = {status: {"model": ErrorBody} for status in statuses}
        app.post(
            fmt.path,
            response_model=fmt.Response,
            responses={**errors, 502: {"model": ErrorBody}, 503: {"model": ErrorBody}},
            openapi_extra={
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": schema}},
                }
            },
        )(handle)

    for fmt in FORMATS:
        route(fmt)


def set_openapi(app: Any, settings: ServerSettings) -> None:
    """The OpenAPI document of ``app`` with the Bearer scheme on the routes behind keys."""

    def openapi() -> dict[str, Any]:
        """The schema, with the Bearer key scheme the API expects (when keys are set)."""
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            if settings.api_keys:
                open_paths = {"/health", "/ready"} | (
                    {"/metrics"} if settings.metrics_public else set()
                )
                for path, operations in schema["paths"].items():
                    if path not in open_paths:
                        for operation in operations.values():
                            operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
