"""What every request passes through: the error handlers (every error is JSON
``{"message": ...}``), the guard (header and body size, API keys) and the accounting (each
answer counted once by status and timed; every 429 and 503 says when to come back)."""

from __future__ import annotations

import hmac
import logging
import time
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from ..errors import ServiceError
from .http import error
from .metrics import Metrics
from .settings import ServerSettings

__all__ = ["install"]

logger = logging.getLogger(__name__)

#: paths that need no API key
OPEN_PATHS = ("/health", "/ready", "/docs", "/openapi.json", "/playground")
OPEN_PREFIXES = ("/docs/assets/", "/playground/")


def install(app: Any, settings: ServerSettings, metrics: Metrics) -> None:
    """The error handlers and middleware of ``app``."""

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
            path not in OPEN_PATHS
            and not path.startswith(OPEN_PREFIXES)
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
