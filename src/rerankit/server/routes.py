"""The rerank endpoints, one per wire format (:mod:`rerankit.server.formats`), and the
OpenAPI document with the Bearer key scheme."""

from __future__ import annotations

import time
from typing import Any

from fastapi import Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response

from ..errors import InputError, ServiceError
from .answers import Answer, mark, stamp
from .formats import FORMATS
from .http import ErrorBody, parse, render, until_disconnect
from .service import Service
from .settings import ServerSettings
from .tracing import request_attributes, traced

__all__ = ["add_rerank_routes", "set_openapi"]


def add_rerank_routes(app: Any, service: Service, settings: ServerSettings, tracer: Any) -> None:
    """``POST`` one route per wire format; answers from the answer cache where it is on
    (see :mod:`.answers`)."""
    metrics, answers = service.metrics, service.answers

    def route(fmt: Any) -> Any:
        async def computed(request: Request, body: Any, call: Any, pipeline: Any) -> Answer:
            """The answer computed for ``call``: its body and the headers describing it."""
            result = await service.compute(pipeline, call, request.state.arrival)
            request.state.result = result  # (for the request span: the request computed it)
            content = fmt.respond(body, call, result)
            headers = {"x-rerankit-scores": result.score_scale}
            if result.degraded:  # SDK users rarely read meta: the header says it too
                headers["x-rerankit-degraded"] = "true"
            for header, which in (("truncated", call.cuts), ("chunked", call.splits)):
                if which:  # said in meta too, where the format has one (TEI has not)
                    headers[f"x-rerankit-{header}"] = ",".join(map(str, sorted(which)))
            cached = request.state.answer_key is not None
            return Answer(
                render(mark(content) if cached else content), headers, not result.degraded
            )

        async def handle(request: Request) -> Any:
            arrival = getattr(request.state, "arrival", None) or time.monotonic()
            request.state.arrival = arrival
            body = await parse(request, fmt.Request, settings)
            try:
                call = fmt.call(body, settings)
            except InputError as exc:
                raise ServiceError(400, str(exc)) from exc
            request.state.model = settings.resolve(call.model)  # errors are counted by it
            request.state.result = None

            async def respond() -> tuple[Answer, str | None]:
                """The answer and where it came from (None: no answer cache)."""
                pipeline = service.check(fmt.path, call)
                key = answers.key(fmt.path, body, pipeline.fingerprint, request.headers)
                request.state.answer_key = key
                compute = lambda: computed(request, body, call, pipeline)  # noqa: E731
                if key is None:
                    return await until_disconnect(request, compute(), metrics), None
                deadline = arrival + settings.timeout
                work = answers.answer(key, pipeline.name, deadline, compute)
                return await until_disconnect(request, work, metrics)

            def answered(out: tuple[Answer, str | None]) -> dict[str, Any]:
                described = request_attributes(call, request.state.model, request.state.result)
                return {**described, **({"rerankit.cache": out[1]} if out[1] else {})}

            if tracer is None:
                answer, source = await respond()
            else:  # the span covers the checks and the answer cache too
                model = request.state.model
                work = traced(tracer, request.headers, fmt.path, call, model, respond, answered)
                answer, source = await work
            headers = {  # as Text Embeddings Inference sends them, in milliseconds
                "x-total-time": f"{1000 * (time.monotonic() - arrival):.1f}",
                "x-queue-time": f"{1000 * call.timings.get('queue', 0.0):.1f}",
                "x-inference-time": f"{1000 * call.timings.get('inference', 0.0):.1f}",
                **answer.headers,
            }
            if source is not None:  # hit, shared or miss
                headers["x-rerankit-cache"] = source
            body_sent = stamp(answer.body, source)
            return Response(body_sent, media_type="application/json", headers=headers)

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
