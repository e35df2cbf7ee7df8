"""The HTTP service: a thin FastAPI app over rerankit pipelines.

Endpoints: one per wire format in :mod:`rerankit.server.formats` (Cohere ``/v1/rerank`` and
``/v2/rerank``, TEI ``/rerank``, rerankit's ``/v1/explain``), ``GET /health``, ``GET
/ready``, ``GET /info``, ``GET /v1/models``, ``GET /metrics`` (Prometheus), the OpenAPI docs
at ``/docs`` and the playground page at ``/playground``. Errors are JSON ``{"message":
...}`` with Cohere's status codes. What runs a request (admission, deadlines, warm-up) is
:mod:`rerankit.server.service`; the metrics are :mod:`rerankit.server.metrics`.

Relevance scores are in [0, 1] and, for pipelines whose scores depend only on the (query,
document) pair, mean the same in every request: the default ``hybrid`` (given texts) gives
a calibrated estimate of P(relevant); ``embedding`` gives the cosine (negative as 0); a
cross-encoder's logit goes through the sigmoid. Pipelines whose scores are relative to the
request (``bm25`` over the candidates, min-max or rank fusion, a caller's first-stage
score) are min-max normalised per request and say so: ``meta.rerankit.scores`` (and the
``x-rerankit-scores`` header) is ``relative``, and ``/v1/models`` and ``/info`` list each
pipeline's scale. TEI's ``raw_scores`` returns the pipeline's own scores instead.
"""

import asyncio
import contextlib
import hmac
import json
import logging
import os
import time
from importlib import resources
from typing import Any

from .._optional import require
from ..errors import InputError, ServiceError
from . import playground
from .formats import FORMATS
from .service import Service
from .settings import ServerSettings
from .tracing import setup_tracer, traced

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


#: pydantic's wording for the request models' constraints, said plainly
_PLAIN_MESSAGES = {
    "string_pattern_mismatch": "must not be empty or only whitespace",
    "too_short": "must not be empty",
    "greater_than_equal": "must be a positive integer",
}


def create_app(settings: ServerSettings | None = None, *, tracer_provider: Any = None) -> Any:
    """The FastAPI application (extra ``server``); traced to ``tracer_provider`` when given
    (see :mod:`rerankit.server.tracing`)."""
    fastapi = require("fastapi", "rerankit serve")
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ValidationError

    class ErrorBody(BaseModel):
        """Every error answer."""

        message: str

    from starlette.exceptions import HTTPException

    class SafeJSONResponse(JSONResponse):
        """JSON that cannot fail to encode: non-ASCII is escaped (a lone surrogate in an
        echoed document becomes ``\\ud800``, not a UnicodeEncodeError)."""

        def render(self, content: Any) -> bytes:
            return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    settings = settings or ServerSettings()
    service = Service(settings)
    tracer = setup_tracer(tracer_provider)  # None unless OpenTelemetry is set up
    metrics = service.metrics

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        warm = asyncio.ensure_future(service.warm_up())
        yield
        warm.cancel()
        service.stop_retries()

    app = fastapi.FastAPI(
        title="rerankit",
        description="Reranking with Cohere- and TEI-compatible endpoints.",
        version=__import__("rerankit").__version__,
        default_response_class=SafeJSONResponse,
        lifespan=lifespan,
        docs_url=None,  # served below from local files: FastAPI's own page loads a CDN
        redoc_url=None,
    )

    def error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
        return SafeJSONResponse({"message": message}, status_code=status, headers=headers)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Any, exc: ServiceError) -> Any:
        return error(exc.status, exc.message, exc.headers)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Any, exc: HTTPException) -> Any:  # 404, 405, ...
        return error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Any, exc: RequestValidationError) -> Any:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return error(422, f"invalid request: {where}: {first.get('msg', exc)}")

    @app.middleware("http")
    async def _guard(request: Any, call_next: Any) -> Any:
        path = request.url.path
        header_bytes = sum(len(k) + len(v) + 4 for k, v in request.headers.raw)
        if header_bytes > settings.max_header_bytes:  # (uvicorn caps incomplete ones)
            return error(431, f"request headers over {settings.max_header_bytes} bytes")
        if request.method == "POST":
            size = request.headers.get("content-length")
            if size is not None and size.isdigit() and int(size) > settings.max_body_bytes:
                return error(413, f"request body over {settings.max_body_bytes} bytes")
        needs_key = (
            path not in ("/health", "/ready", "/docs", "/openapi.json", "/playground")
            and not path.startswith(("/docs/assets/", "/playground/"))
            and not (path == "/metrics" and settings.metrics_public)
        )
        if needs_key and settings.api_keys:
            header = request.headers.get("authorization", "")
            token = header[7:].strip() if header.lower().startswith("bearer ") else ""
            if not any(hmac.compare_digest(token.encode(), k.encode()) for k in settings.api_keys):
                return error(
                    401,
                    "invalid or missing API key (send 'Authorization: Bearer <key>')",
                    {"WWW-Authenticate": 'Bearer realm="rerankit"'},
                )
        return await call_next(request)

    @app.middleware("http")
    async def _account(request: Any, call_next: Any) -> Any:
        """Outermost: every answer, a crash's JSON 500 included, is counted once by status
        and timed."""
        start = time.perf_counter()
        request.state.arrival = time.monotonic()  # the deadline counts from here
        try:
            response = await call_next(request)
        except Exception:
            logger.exception("unhandled error on %s", request.url.path)
            response = error(500, "internal error")
        status = response.status_code
        if status in (429, 503) and "retry-after" not in response.headers:
            response.headers["Retry-After"] = "1"  # every refusal says when to come back
        # probes answer a state, not an error: /ready's 503 while loading is not counted
        if status >= 400 and request.url.path not in ("/ready", "/health"):
            model = getattr(request.state, "model", "")
            metrics.errors.labels(str(status), model).inc()
        metrics.latency.labels(request.url.path).observe(time.perf_counter() - start)
        return response

    async def read_body(request: Any) -> bytes:
        """The body, refused with 413 as soon as it passes the limit (a chunked body has
        no Content-Length to check up front, so the count is kept while it streams)."""
        chunks, size = [], 0
        stream = request.stream().__aiter__()
        until = time.monotonic() + settings.body_timeout  # the whole body, not per chunk
        while True:
            try:
                chunk = await asyncio.wait_for(stream.__anext__(), until - time.monotonic())
            except StopAsyncIteration:
                break
            except asyncio.TimeoutError as exc:
                raise ServiceError(
                    408,
                    f"the request body did not arrive within {settings.body_timeout:g} s",
                    {"Connection": "close"},
                ) from exc
            size += len(chunk)
            if size > settings.max_body_bytes:
                raise ServiceError(413, f"request body over {settings.max_body_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def parse(request: Any, model: type) -> Any:
        # Parsed by hand: some clients (the cohere SDK among them) send JSON without a
        # Content-Type header.
        raw = await read_body(request)
        try:
            data = json.loads(raw or b"null")
        except ValueError as exc:
            raise ServiceError(400, f"the body is not JSON: {exc}") from exc
        except RecursionError as exc:  # nesting deeper than the parser goes
            raise ServiceError(400, "the body is nested too deeply") from exc
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            message = _PLAIN_MESSAGES.get(first.get("type", ""), first.get("msg"))
            raise ServiceError(422, f"invalid request: {where}: {message}") from exc

    async def client_gone(request: Any) -> None:
        """Returns when the client disconnects (the body is read, so the next message the
        server sends the app is the disconnect)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass

    async def until_disconnect(request: Any, work: Any) -> Any:
        """Run ``work``; if the client goes first, cancel it: a request still queued leaves
        the queue without running, a running one stops at its next await (work already on
        a thread finishes its current step; batched embedding work not yet started is
        dropped)."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(client_gone(request))
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            metrics.abandoned.inc()
            raise ServiceError(499, "the client closed the connection; the request was dropped")
        return task.result()

    def route(fmt: Any) -> Any:
        async def handle(request: fastapi.Request) -> Any:
            arrival = getattr(request.state, "arrival", None) or time.monotonic()
            body = await parse(request, fmt.Request)
            try:
                call = fmt.call(body, settings)
            except InputError as exc:
                raise ServiceError(400, str(exc)) from exc
            request.state.model = settings.resolve(call.model)  # errors are counted by it
            work = lambda: until_disconnect(request, service.run(fmt.path, call, arrival))  # noqa: E731
            if tracer is None:
                result = await work()
            else:
                result = await traced(
                    tracer, request.headers, fmt.path, call, request.state.model, work
                )
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
            return SafeJSONResponse(fmt.respond(body, call, result), headers=headers)

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

    def openapi() -> dict[str, Any]:
        """The schema, with the Bearer key scheme the API expects (when keys are set)."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

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

    swagger_assets = {  # Swagger UI 5 (Apache-2.0), shipped by the fastapi-swagger package
        "swagger-ui-bundle.js": "application/javascript",
        "swagger-ui.css": "text/css",
        "favicon-32x32.png": "image/png",
    }

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        """The API's Swagger UI, every asset served by this service (works offline)."""
        from fastapi.openapi.docs import get_swagger_ui_html

        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="rerankit API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Any:

        if name not in swagger_assets:
            raise ServiceError(404, f"no asset {name!r}")
        try:
            data = resources.files("fastapi_swagger.resources").joinpath(name).read_bytes()
        except (ImportError, OSError) as exc:
            raise ServiceError(
                404, "Swagger UI assets need the 'fastapi-swagger' package (extra 'server')"
            ) from exc
        return Response(data, media_type=swagger_assets[name])

    @app.get("/playground", include_in_schema=False)
    async def playground_page() -> Any:
        """The playground page (public like /docs; its API calls carry the key)."""
        return playground_file("index.html")

    @app.get("/playground/{name}", include_in_schema=False)
    async def playground_asset(name: str) -> Any:
        return playground_file(name)

    def playground_file(name: str) -> Any:

        try:
            data = playground.asset(name)
        except KeyError:
            raise ServiceError(404, f"no playground file {name!r}") from None
        headers = {
            "Content-Security-Policy": playground.CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        }
        return Response(data, media_type=playground.ASSETS[name], headers=headers)

    @app.get("/health")
    async def health() -> Any:
        """Liveness: the process answers."""
        return {"status": "ok", "models": sorted(settings.pipelines), "default": settings.default}

    @app.get("/ready")
    async def ready() -> Any:
        """Readiness: 503 until every pipeline has loaded and run a warm-up batch, and while
        any pipeline has failed (naming them and their errors; ``ready_when = "any"``: 200
        once one pipeline is ready); 503 while stopping."""
        status, body = service.readiness()
        return SafeJSONResponse(body, status_code=status)

    # endpoints behind the API keys say so in the schema (401), as the rerank routes do
    protected = {401: {"model": ErrorBody}} if settings.api_keys else {}

    @app.get("/v1/models", responses=protected)
    async def models() -> Any:
        return {
            "models": [
                {
                    "name": n,
                    "endpoints": ["rerank"],
                    "default": n == settings.default,
                    **service.describe_scores(n),
                }
                for n in sorted(settings.pipelines)
            ]
            + [  # other names clients may send (Cohere's model names, by default)
                {
                    "name": alias,
                    "endpoints": ["rerank"],
                    "default": False,
                    "alias_of": target,
                    **service.describe_scores(target),
                }
                for alias, target in sorted((settings.aliases or {}).items())
            ]
        }

    @app.get("/info", responses=protected)
    async def info() -> Any:
        """What this service runs: version, pipelines (and whether each is loaded), limits."""
        return {
            "version": __import__("rerankit").__version__,
            "default": settings.default,
            "pipelines": {
                name: {
                    "spec": spec if isinstance(spec, str) else dict(spec),
                    "loaded": service.loaded(name),
                    **service.states[name].describe(),
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
            },
            "batching": {
                "enabled": settings.batching,
                "max_items": settings.batch_max_items,
                "max_tokens": settings.batch_max_tokens or None,
                "max_wait_ms": settings.batch_max_wait_ms,
            },
            "ready": service.readiness()[0] == 200,
            "process": {"pid": os.getpid()},  # which worker answered (rerankit serve --workers)
        }

    @app.get(
        "/metrics",
        response_class=Response,
        responses={
            200: {"content": {"text/plain": {}}, "description": "Prometheus metrics"},
            **({} if settings.metrics_public else protected),
        },
    )
    async def prometheus() -> Any:
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    if settings.api_keys:
        logger.info("rerankit service: %d API key(s) configured", len(settings.api_keys))
    else:
        logger.warning(
            "rerankit service: no API keys configured; the service is open to "
            "anyone who can reach it"
        )
    app.state.settings = settings
    app.state.admission = service.admission
    app.state.service = service
    app.state.tracer = tracer
    return app
