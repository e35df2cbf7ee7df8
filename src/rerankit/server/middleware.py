"""What every request passes through: the error handlers (every error is JSON
``{"message": ..., "code": ...}``, on TEI's ``/rerank`` with its ``error`` and
``error_type`` too; every 429 and 503 says when to come back, but for a cause no wait
mends: :func:`.http.error`), the guard (header and body size, API keys) and the
accounting (each answer counted once by status and timed)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException

from ..errors import ServiceError
from .admission import stopping
from .formats import FORMATS
from .http import body_too_large, error, invalid, said
from .logs import REQUEST_ID, request_id
from .metrics import Metrics
from .opt_out import HEADER, OPTED_OUT, opted_out
from .settings import ServerSettings
from .shutdown import InFlight

__all__ = ["install"]

logger = logging.getLogger(__name__)

#: the rerank endpoints: every POST to one is counted in ``rerankit_requests_total``
RERANK_PATHS = frozenset(fmt.path for fmt in FORMATS)
#: paths that need no API key
OPEN_PATHS = ("/health", "/ready", "/docs", "/openapi.json", "/playground")
OPEN_PREFIXES = ("/docs/assets/", "/playground/")


def install(app: Any, settings: ServerSettings, metrics: Metrics, in_flight: InFlight) -> None:
    """The error handlers and middleware of ``app``; every request is kept in
    ``in_flight`` while it is answered."""

    @app.exception_handler(ServiceError)
    async def _service_error(request: Any, exc: ServiceError) -> Any:
        return said(exc, request.url.path)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Any, exc: HTTPException) -> Any:  # 404, 405, ...
        path = request.url.path
        return error(exc.status_code, str(exc.detail), getattr(exc, "headers", None), path)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Any, exc: RequestValidationError) -> Any:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return said(invalid(where, str(first.get("msg", exc))), request.url.path)

    app.add_middleware(_OptOut)  # inside the guard: a refused request is not read
    app.add_middleware(_Guard, settings=settings)
    # added last: outermost. The routes' paths are read at the first answer (the routes
    # are added after the middleware)
    paths = lambda: {getattr(r, "path", "") for r in app.routes}  # noqa: E731
    app.add_middleware(_Account, metrics=metrics, paths=paths, in_flight=in_flight)
    app.add_middleware(_RequestId)  # outermost: _Account's lines name the request too


class _RequestId:
    """Every answer's ``X-Request-Id``: the caller's when sane, else a new one
    (:func:`.logs.request_id`), kept in ``REQUEST_ID`` while the request is answered (so
    rerankit's lines, and uvicorn's access line, written inside ``send``, name it) and in
    the scope's ``state["request_id"]``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        sent = next((v for k, v in scope["headers"] if k.lower() == b"x-request-id"), None)
        rid = request_id(None if sent is None else sent.decode("latin-1"))
        scope.setdefault("state", {})["request_id"] = rid

        async def answer(message: Any) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Request-Id"] = rid
            await send(message)

        token = REQUEST_ID.set(rid)
        try:
            await self.app(scope, receive, answer)
        finally:
            REQUEST_ID.reset(token)


class _OptOut:
    """``x-rerankit-experiment: off`` kept in :data:`.opt_out.OPTED_OUT` while the request
    is answered (see :mod:`.opt_out`); a value it does not take is a 400."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        sent = Headers(scope=scope).get(HEADER)
        try:
            off = opted_out(sent)
        except ServiceError as exc:
            return await said(exc, scope["path"])(scope, receive, send)
        token = OPTED_OUT.set(off)
        try:
            await self.app(scope, receive, send)
        finally:
            OPTED_OUT.reset(token)


class _Guard:
    """Header and body size, then the API key, before any work (plain ASGI: Starlette's
    ``BaseHTTPMiddleware`` costs a task group and a memory stream per request)."""

    def __init__(self, app: Any, settings: ServerSettings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        refusal = self._refusal(scope["path"], scope["method"], Headers(scope=scope))
        if refusal is not None:
            return await refusal(scope, receive, send)
        return await self.app(scope, receive, send)

    def _refusal(self, path: str, method: str, headers: Headers) -> Any:
        settings = self.settings
        header_bytes = sum(len(k) + len(v) + 4 for k, v in headers.raw)
        if header_bytes > settings.max_header_bytes:  # (uvicorn caps incomplete ones)
            return error(
                431,
                f"request headers over {settings.max_header_bytes} bytes (max_header_bytes in "
                "the service's settings)",
                path=path,
                code="headers_too_large",
                details={"max_header_bytes": settings.max_header_bytes},
            )
        if method == "POST":
            size = headers.get("content-length")
            if size is not None and size.isdigit() and int(size) > settings.max_body_bytes:
                return said(body_too_large(settings), path)
        needs_key = (
            path not in OPEN_PATHS
            and not path.startswith(OPEN_PREFIXES)
            and not (path == "/metrics" and settings.metrics_public)
        )
        if needs_key and settings.api_keys:
            header = headers.get("authorization", "")
            token = header[7:].strip() if header.lower().startswith("bearer ") else ""
            if not any(hmac.compare_digest(token.encode(), k.encode()) for k in settings.api_keys):
                return error(
                    401,
                    "invalid or missing API key (send 'Authorization: Bearer <key>')",
                    {"WWW-Authenticate": 'Bearer realm="rerankit"'},
                    path,
                    code="unauthorized",
                )
        return None


class _Account:
    """Outermost: every answer, a crash's JSON 500 included, is counted once (by endpoint
    and pipeline, and by status when an error) and timed. A request cut at the end of a
    shutdown's graceful timeout
    (:meth:`.InFlight.cut`) is answered 503, as a queued one is."""

    def __init__(self, app: Any, metrics: Metrics, paths: Any, in_flight: InFlight) -> None:
        self.app, self.metrics, self.in_flight = app, metrics, in_flight
        self._paths, self.paths = paths, None

    def endpoint(self, scope: Any) -> str:
        """The route that answered (its template: ``/playground/{name}``), the path when
        the answer came before routing (a 401) and it is a route's, else ``unmatched``: a
        label of few values, whatever paths clients send."""
        route = scope.get("route")
        if route is not None and getattr(route, "path", None):
            return route.path
        if self.paths is None:
            self.paths = self._paths()
        return scope["path"] if scope["path"] in self.paths else "unmatched"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        state = scope.setdefault("state", {})
        state["arrival"] = time.monotonic()  # the deadline counts from here
        status: list[int] = []
        request = self.in_flight.enter()

        async def answer(message: Any) -> None:
            if message["type"] == "http.response.start":
                request.answering = True
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, answer)
        except asyncio.CancelledError:
            if not request.cut or status:  # uvicorn's cancel, or the answer had begun
                raise
            if hasattr(request.task, "uncancel"):  # (Python 3.11+ counts cancellations)
                request.task.uncancel()  # cut by the shutdown: said, as a queued one is told
            await said(stopping(), scope["path"])(scope, receive, answer)
        except Exception:
            logger.exception("unhandled error on %s", scope["path"])
            if status:  # the answer had begun: nothing more can be said
                raise
            crash = error(500, "internal error", path=scope["path"], code="internal_error")
            await crash(scope, receive, answer)
        finally:
            self.in_flight.leave(request)
        endpoint = self.endpoint(scope)
        self.metrics.answered(
            endpoint,
            state.get("model") or "",
            status[0] if status else 500,
            time.perf_counter() - start,
            rerank=scope["method"] == "POST" and endpoint in RERANK_PATHS,
            # probes answer a state, not an error: /ready's 503 while loading is not counted
            probe=endpoint in ("/ready", "/health"),
        )
