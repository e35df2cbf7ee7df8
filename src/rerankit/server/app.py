"""The HTTP service: Cohere- and TEI-compatible rerank endpoints over rerankit pipelines.

Endpoints: ``POST /v1/rerank`` and ``POST /v2/rerank`` (Cohere's request and response
shapes), ``POST /rerank`` (Text Embeddings Inference's), ``GET /health``, ``GET /v1/models``,
``GET /metrics`` (Prometheus) and the OpenAPI docs at ``/docs``. Errors are JSON
``{"message": ...}`` with Cohere's status codes.

Relevance scores are in [0, 1]: a pipeline whose scores already lie there (``hybrid``,
``embedding`` mapped from cosine, LLM judges) keeps them; otherwise the request's scores
are min-max normalised (so the best document scores 1). TEI's ``raw_scores`` returns the
pipeline's own scores instead.
"""

import asyncio
import hmac
import json
import logging
import time
import uuid
from typing import Any

from .._optional import require
from ..errors import InvalidDocumentError, MissingDependencyError, ModelLoadError, ServiceError
from ..normalize import unit_scores
from ..types import RerankResult
from .settings import ServerSettings

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


class _Metrics:
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
            "rerankit_errors_total", "Failed requests by status", ["status"], registry=self.registry
        )
        self.latency = prom.Histogram(
            "rerankit_request_seconds", "Rerank latency", ["endpoint"], registry=self.registry
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
        self._prom = prom

    def render(self) -> tuple[bytes, str]:
        return self._prom.generate_latest(self.registry), self._prom.CONTENT_TYPE_LATEST


class _Admission:
    """At most ``slots`` requests run; at most ``queue`` wait; the rest are refused."""

    def __init__(self, slots: int, queue: int, metrics: _Metrics) -> None:
        self.slots, self.queue, self.metrics = slots, queue, metrics
        self.running = 0
        self.waiting = 0
        self._cond: asyncio.Condition | None = None

    async def acquire(self) -> None:
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            if self.running >= self.slots:
                if self.waiting >= self.queue:
                    raise ServiceError(
                        429, "the service is at capacity; retry shortly", {"Retry-After": "1"}
                    )
                self.waiting += 1
                self.metrics.queue.set(self.waiting)
                try:
                    await self._cond.wait_for(lambda: self.running < self.slots)
                finally:
                    self.waiting -= 1
                    self.metrics.queue.set(self.waiting)
            self.running += 1
            self.metrics.in_flight.set(self.running)

    async def release(self) -> None:
        assert self._cond is not None
        async with self._cond:
            self.running -= 1
            self.metrics.in_flight.set(self.running)
            self._cond.notify()


def _unit_scores(result: RerankResult) -> list[float]:
    return unit_scores([r.score for r in result]).tolist()


def create_app(settings: ServerSettings | None = None) -> Any:
    """The FastAPI application (extra ``server``)."""
    fastapi = require("fastapi", "rerankit serve")
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from ..api import load

    settings = settings or ServerSettings()
    metrics = _Metrics()
    admission = _Admission(settings.max_concurrency, settings.max_queue, metrics)
    pipelines: dict[str, Any] = {}

    def pipeline(name: str | None) -> Any:
        name = name or settings.default
        if name not in settings.pipelines:
            raise ServiceError(
                404, f"model {name!r} not found; available: {', '.join(sorted(settings.pipelines))}"
            )
        if name not in pipelines:
            try:
                reranker = load(settings.pipelines[name])
            except (ValueError, TypeError) as exc:
                raise ServiceError(500, f"pipeline {name!r} is misconfigured: {exc}") from exc
            if settings.batching:
                for scorer in _embedding_scorers(reranker):
                    scorer.enable_batching(
                        max_items=settings.batch_max_items, max_wait_ms=settings.batch_max_wait_ms
                    )
            pipelines[name] = reranker
        return pipelines[name]

    app = fastapi.FastAPI(
        title="rerankit",
        description="Reranking with Cohere- and TEI-compatible endpoints.",
        version=__import__("rerankit").__version__,
    )

    @app.exception_handler(ServiceError)
    async def _api_error(request: Any, exc: ServiceError) -> Any:
        metrics.errors.labels(str(exc.status)).inc()
        return JSONResponse({"message": exc.message}, status_code=exc.status, headers=exc.headers)

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Any, exc: RequestValidationError) -> Any:
        metrics.errors.labels("422").inc()
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse(
            {"message": f"invalid request: {where}: {first.get('msg', exc)}"}, status_code=422
        )

    @app.middleware("http")
    async def _guard(request: Any, call_next: Any) -> Any:
        path = request.url.path
        if request.method == "POST":
            size = request.headers.get("content-length")
            if size is not None and size.isdigit() and int(size) > settings.max_body_bytes:
                metrics.errors.labels("413").inc()
                return JSONResponse(
                    {"message": f"request body over {settings.max_body_bytes} bytes"},
                    status_code=413,
                )
        needs_key = path not in ("/health", "/docs", "/openapi.json") and not (
            path == "/metrics" and settings.metrics_public
        )
        if needs_key and settings.api_keys:
            header = request.headers.get("authorization", "")
            token = header[7:].strip() if header.lower().startswith("bearer ") else ""
            if not any(hmac.compare_digest(token.encode(), k.encode()) for k in settings.api_keys):
                metrics.errors.labels("401").inc()
                return JSONResponse(
                    {"message": "invalid or missing API key (send 'Authorization: Bearer <key>')"},
                    status_code=401,
                )
        return await call_next(request)

    releasing: set[asyncio.Future] = set()  # strong references until each release ran

    def _finished(task: asyncio.Future) -> None:
        if not task.cancelled():
            task.exception()  # retrieved, so a failure after a timeout answer is not re-reported
        release = asyncio.ensure_future(admission.release())
        releasing.add(release)
        release.add_done_callback(releasing.discard)

    async def run(
        endpoint: str, model: str | None, query: str, docs: list[Any], top_n: int | None
    ) -> tuple[RerankResult, str]:
        name = model or settings.default
        reranker = pipeline(name)
        if not query.strip():
            raise ServiceError(400, "query must not be empty")
        if not docs:
            raise ServiceError(400, "documents must not be empty")
        if len(docs) > settings.max_documents:
            raise ServiceError(400, f"{len(docs)} documents; the limit is {settings.max_documents}")
        if top_n is not None and top_n < 1:
            raise ServiceError(400, "top_n must be >= 1")
        metrics.requests.labels(endpoint, name).inc()
        start = time.perf_counter()
        await admission.acquire()
        # The slot is held until the work itself ends, even after a timeout answer: a
        # timed-out rerank keeps computing on its thread, and it still counts against
        # max_concurrency, so timeouts cannot pile up unbounded work.
        task = asyncio.ensure_future(reranker.arerank(query, docs, top_k=top_n))
        task.add_done_callback(_finished)
        try:
            result = await asyncio.wait_for(asyncio.shield(task), settings.timeout)
        except asyncio.TimeoutError as exc:
            raise ServiceError(503, f"no answer within {settings.timeout:g} s") from exc
        except InvalidDocumentError as exc:
            raise ServiceError(400, str(exc)) from exc
        except (MissingDependencyError, ModelLoadError) as exc:
            raise ServiceError(503, f"pipeline {name!r} is unavailable: {exc}") from exc
        except ServiceError:
            raise
        except Exception as exc:
            logger.exception("rerank failed")
            raise ServiceError(500, f"internal error: {type(exc).__name__}") from exc
        metrics.latency.labels(endpoint).observe(time.perf_counter() - start)
        metrics.documents.inc(len(docs))
        return result, name

    def texts(items: list[str]) -> list[str]:
        out = []
        for i, t in enumerate(items):
            if len(t) > settings.max_document_chars:
                if not settings.truncate:
                    raise ServiceError(
                        400,
                        f"document {i}: {len(t)} characters; the limit is "
                        f"{settings.max_document_chars}",
                    )
                t = t[: settings.max_document_chars]
            out.append(t)
        return out

    def meta(result: RerankResult) -> dict[str, Any]:
        out: dict[str, Any] = {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}
        if result.warnings:
            out["warnings"] = list(result.warnings)
        return out

    class V1Request(BaseModel):
        model_config = ConfigDict(extra="ignore")
        query: str
        documents: list[str | dict[str, Any]]
        model: str | None = None
        top_n: int | None = None
        rank_fields: list[str] | None = None
        return_documents: bool = True
        max_chunks_per_doc: int | None = None  # accepted; documents are not chunked

    class V2Request(BaseModel):
        model_config = ConfigDict(extra="ignore")
        model: str | None = None
        query: str
        documents: list[str]
        top_n: int | None = None
        max_tokens_per_doc: int | None = Field(default=None, ge=1)

    class TEIRequest(BaseModel):
        model_config = ConfigDict(extra="ignore")
        query: str
        texts: list[str]
        raw_scores: bool = False
        return_text: bool = False
        truncate: bool = False
        truncation_direction: str = "Right"

    def v1_text(doc: str | dict[str, Any], i: int, fields: list[str] | None) -> str:
        if isinstance(doc, str):
            return doc
        keys = fields or ["text"]
        missing = [k for k in keys if k not in doc]
        if fields is None and missing:
            raise ServiceError(
                400,
                f"document {i}: object documents need a 'text' field or rank_fields naming theirs",
            )
        if missing and len(missing) == len(keys):
            raise ServiceError(400, f"document {i}: none of rank_fields {keys} present")
        if fields is None:
            return str(doc["text"])
        return "\n".join(f"{k}: {doc[k]}" for k in keys if k in doc)

    def body_schema(model: type) -> dict[str, Any]:
        schema = model.model_json_schema()
        return {
            "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}
        }

    async def parse(request: Any, model: type) -> Any:
        # Parsed by hand: some clients (the cohere SDK among them) send JSON without a
        # Content-Type header, and chunked bodies carry no Content-Length to check.
        raw = await request.body()
        if len(raw) > settings.max_body_bytes:
            raise ServiceError(413, f"request body over {settings.max_body_bytes} bytes")
        try:
            data = json.loads(raw or b"null")
        except ValueError as exc:
            raise ServiceError(400, f"the body is not JSON: {exc}") from exc
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            metrics.errors.labels("422").inc()
            raise ServiceError(422, f"invalid request: {where}: {first.get('msg')}") from exc

    @app.post("/v1/rerank", openapi_extra=body_schema(V1Request))
    async def rerank_v1(request: fastapi.Request) -> Any:
        body = await parse(request, V1Request)
        items = texts([v1_text(d, i, body.rank_fields) for i, d in enumerate(body.documents)])
        result, _ = await run("/v1/rerank", body.model, body.query, items, body.top_n)
        scores = _unit_scores(result)
        results = []
        for r, s in zip(result, scores, strict=True):
            entry: dict[str, Any] = {"index": r.index, "relevance_score": s}
            if body.return_documents:
                original = body.documents[r.index]
                entry["document"] = {"text": original} if isinstance(original, str) else original
            results.append(entry)
        return {"id": str(uuid.uuid4()), "results": results, "meta": meta(result)}

    @app.post("/v2/rerank", openapi_extra=body_schema(V2Request))
    async def rerank_v2(request: fastapi.Request) -> Any:
        body = await parse(request, V2Request)
        items = body.documents
        if body.max_tokens_per_doc:  # tokens approximated by words
            items = [" ".join(t.split()[: body.max_tokens_per_doc]) for t in items]
        result, _ = await run("/v2/rerank", body.model, body.query, texts(items), body.top_n)
        scores = _unit_scores(result)
        return {
            "id": str(uuid.uuid4()),
            "results": [
                {"index": r.index, "relevance_score": s}
                for r, s in zip(result, scores, strict=True)
            ],
            "meta": meta(result),
        }

    @app.post("/rerank", openapi_extra=body_schema(TEIRequest))
    async def rerank_tei(request: fastapi.Request) -> Any:
        body = await parse(request, TEIRequest)
        items = body.texts
        if not body.truncate and any(len(t) > settings.max_document_chars for t in items):
            raise ServiceError(
                413, f"a text is over {settings.max_document_chars} characters; send truncate=true"
            )
        if body.truncate:  # the caller asked for it, whatever the server's own setting
            cap = settings.max_document_chars
            left = body.truncation_direction.lower() == "left"
            items = [t[-cap:] if left else t[:cap] for t in items]
        result, _ = await run("/rerank", None, body.query, texts(items), None)
        scores = [r.score for r in result] if body.raw_scores else _unit_scores(result)
        out = []
        for r, s in zip(result, scores, strict=True):
            entry: dict[str, Any] = {"index": r.index, "score": s}
            if body.return_text:
                entry["text"] = body.texts[r.index]
            out.append(entry)
        return out

    @app.get("/health")
    async def health() -> Any:
        return {"status": "ok", "models": sorted(settings.pipelines), "default": settings.default}

    @app.get("/v1/models")
    async def models() -> Any:
        return {
            "models": [
                {"name": n, "endpoints": ["rerank"], "default": n == settings.default}
                for n in sorted(settings.pipelines)
            ]
        }

    @app.get("/metrics")
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
    app.state.admission = admission
    return app


def _embedding_scorers(reranker: Any) -> list[Any]:
    """Every EmbeddingScorer inside a reranker (fusions, hybrids, pipeline stages)."""
    from ..scorers.embedding import EmbeddingScorer

    found: list[Any] = []
    seen: set[int] = set()

    def walk(obj: Any, depth: int = 0) -> None:
        if id(obj) in seen or depth > 6:
            return
        seen.add(id(obj))
        if isinstance(obj, EmbeddingScorer):
            found.append(obj)
            return
        for attr in ("scorer", "strategies", "stages", "step", "embedding", "with_bm25"):
            child = getattr(obj, attr, None)
            if child is None:
                continue
            for c in child if isinstance(child, list) else [child]:
                walk(c, depth + 1)

    walk(reranker)
    return found
