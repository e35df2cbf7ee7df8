"""The service's OpenAPI document (``GET /openapi.json``, browsable at ``/docs``): FastAPI's,
completed so that it says all the service sends, for clients generated from it:

- each operation's ``operationId`` (the name a generated client gives its function) and
  named schemas for its request and answer (one component per shape, named as in the code:
  ``CohereV2Request``, ``RerankV1Response``, ...);
- every status each operation answers, with its body (``ErrorBody``, ``TeiErrorBody`` on
  TEI's ``/rerank``): besides each route's own, 401 behind the keys, 405, 431 and 500 on
  every operation, and 400, 408, 413, 415 and 422 on those that read a JSON body;
- the headers each answer carries (``X-Request-Id`` on every one, ``Retry-After`` on 429,
  503 and 504, a rerank's timings and ``x-rerankit-*``) and those a request may send
  (``X-Request-Id``, ``traceparent``, ``x-rerankit-experiment``);
- the Bearer scheme on the operations behind the keys.

The suite checks real answers of every endpoint against it
(``tests/server/test_openapi_answers.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from fastapi.openapi.utils import get_openapi

from ..normalize import SCORE_SCALES
from .answers import SOURCES
from .feedback_api import FeedbackRequest
from .formats import FORMATS
from .http import TEI_PATHS, ErrorBody, TeiErrorBody
from .logs import MAX_REQUEST_ID
from .middleware import OPEN_PATHS
from .opt_out import HEADER as EXPERIMENT_HEADER
from .opt_out import VALUES as EXPERIMENT_VALUES
from .settings import ServerSettings
from .tracing import UNTRACED

__all__ = ["OPERATION_IDS", "complete", "set_openapi"]

#: each path's operation (one method each) by the name a generated client gives it
OPERATION_IDS = {
    "/v1/rerank": "rerankV1",
    "/v2/rerank": "rerankV2",
    "/rerank": "rerank",
    "/v1/explain": "explain",
    "/v1/feedback": "sendFeedback",
    "/health": "health",
    "/ready": "ready",
    "/v1/models": "listModels",
    "/info": "info",
    "/metrics": "metrics",
}

#: the request bodies by path: the first model that fits a body reads it (see :mod:`.formats`)
BODIES: dict[str, list[type]] = {"/v1/feedback": [FeedbackRequest]}
for _fmt in FORMATS:
    BODIES.setdefault(_fmt.path, []).append(_fmt.Request)

#: the paths whose answers may be logged and be experiments (``x-rerankit-experiment``)
LOGGED_PATHS = ("/v1/rerank", "/v2/rerank", "/v1/explain")
#: the rerank paths: their 200 carries the timings and ``x-rerankit-*``
RERANK_PATHS = frozenset(fmt.path for fmt in FORMATS)

#: what each error status says, where the route says nothing more precise
ERRORS = {
    400: "The request is wrong as `message` says: a body that is not JSON or not UTF-8, "
    "too many documents (`max_documents`), a query too long, an "
    "`x-rerankit-experiment` value it does not take",
    401: "No valid API key: send `Authorization: Bearer <key>`",
    404: "Not found: `message` lists what there is",
    405: "The path does not take this method: `Allow` names the one it takes",
    408: "The body did not arrive within `body_timeout`; the connection is closed",
    413: "Too large: the body is over `max_body_bytes`, a text over `max_document_chars` "
    "(TEI's `truncate: false`), or the request alone needs more work than the deadline "
    "allows (split it; no `Retry-After`)",
    415: "A Content-Type a browser may send across origins (text/plain, a form): send "
    "`application/json`, or none",
    422: "The body is JSON but not a valid request: `message` is `invalid request: "
    "<where>: <what>`, `<where>` the dotted path of the value at fault",
    429: "At capacity (`max_concurrency`, `max_queue`), or the pipeline's provider limits "
    "its rate: retry after `Retry-After` seconds",
    431: "The request's headers are over `max_header_bytes`",
    500: "An internal error (the log has it)",
    502: "The pipeline's provider answered no judgment",
    503: "Not available now: the pipeline loads, failed to load or is failing, the request "
    "could not be queued or run in time, or the service is stopping (retry on another "
    "instance): retry after `Retry-After` seconds",
    504: "No answer within the deadline (the service's `deadline`, or a shorter "
    "`x-rerankit-timeout`): retry after `Retry-After` seconds",
}
#: the errors every operation may answer, and those of one that reads a JSON body
EVERY = (405, 431, 500)
BODY_ERRORS = (400, 408, 413, 415, 422)

_COMMA_LIST = {"type": "string", "pattern": "^[0-9]+(,[0-9]+)*$"}
_MILLISECONDS = {"type": "number", "minimum": 0}
#: the response headers: description, schema
HEADERS: dict[str, tuple[str, dict[str, Any]]] = {
    "X-Request-Id": (
        "The request's id, on every answer: the caller's `X-Request-Id` when it is sane, "
        "else a new one (32 hex digits); every log line about the request names it",
        {"type": "string", "pattern": f"^[!-~]{{1,{MAX_REQUEST_ID}}}$"},
    ),
    "Retry-After": ("Seconds to wait before trying again", {"type": "integer", "minimum": 1}),
    "WWW-Authenticate": ('`Bearer realm="rerankit"`', {"type": "string"}),
    "Allow": ("The methods the path takes", {"type": "string"}),
    "x-total-time": ("Milliseconds from arrival to answer", _MILLISECONDS),
    "x-queue-time": ("Milliseconds waited for a slot", _MILLISECONDS),
    "x-inference-time": ("Milliseconds the pipeline ran", _MILLISECONDS),
    "x-rerankit-scores": (
        "The scale of the scores sent (`meta.rerankit.scores` where there is a `meta`; "
        "with `raw_scores`, the pipeline's own)",
        {"type": "string", "enum": list(SCORE_SCALES)},
    ),
    "x-rerankit-degraded": (
        "Sent when the answer is degraded (a strategy or stage failed or ran out of time)",
        {"type": "string", "enum": ["true"]},
    ),
    "x-rerankit-warnings": (
        "Every warning of the answer, joined by `; ` (a `; ` inside one is written `, `; "
        "non-ASCII `\\u`-escaped; past 2000 characters the rest is counted)",
        {"type": "string"},
    ),
    "x-rerankit-truncated": ("The indices of the documents cut before scoring", _COMMA_LIST),
    "x-rerankit-chunked": ("The indices of the documents split into chunks", _COMMA_LIST),
    "x-rerankit-dropped": ("The indices of the documents a rule dropped", _COMMA_LIST),
    "x-rerankit-cache": (
        "Where the answer came from, where the answer cache is on",
        {"type": "string", "enum": list(SOURCES)},
    ),
}
#: the headers of an answer by status (``X-Request-Id`` is on every one), always sent
STATUS_HEADERS = {401: ("WWW-Authenticate",), 405: ("Allow",)} | {
    status: ("Retry-After",) for status in (429, 503, 504)
}
#: a rerank's 200: the headers always sent, then those sent when they have something to say
RERANK_HEADERS = ("x-total-time", "x-queue-time", "x-inference-time", "x-rerankit-scores")
RERANK_SOMETIMES = tuple(
    h for h in HEADERS if h.startswith("x-rerankit-") and h not in RERANK_HEADERS
)

#: the request headers: description, schema (:func:`_parameters` says which paths read them)
PARAMETERS: dict[str, tuple[str, dict[str, Any]]] = {
    "X-Request-Id": (
        "An id for the request, echoed on the answer and in every log line about it: 1 to "
        f"{MAX_REQUEST_ID} printable ASCII characters without spaces (another is replaced "
        "by a new one)",
        {"type": "string"},
    ),
    "traceparent": (
        "W3C trace context: the request's spans join the trace when the service traces "
        "(OpenTelemetry)",
        {"type": "string"},
    ),
    EXPERIMENT_HEADER: (
        "`off` keeps the request out of interleaving, exploration and the click log (a "
        "parity check, a probe); `on` (or none) leaves it to the settings' draw; any case",
        {"type": "string", "enum": list(EXPERIMENT_VALUES)},
    ),
}


def _pascal(operation_id: str) -> str:
    return operation_id[:1].upper() + operation_id[1:]


def _ref(name: str, kind: str = "schemas") -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _add(schemas: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    """Schema ``name`` in ``schemas``; two different shapes of one name are a bug here."""
    if schemas.setdefault(name, schema) != schema:
        raise ValueError(f"two schemas named {name!r} in the OpenAPI document")


def _body(models: Sequence[type], name: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """The request body of the operation ``name``: its one model, or the union of its
    models named ``<Name>Request``; each model and those it holds added to ``schemas``."""
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for held, shape in schema.pop("$defs", {}).items():
            _add(schemas, held, shape)
        _add(schemas, model.__name__, schema)
    if len(models) == 1:
        body = _ref(models[0].__name__)
    else:
        union = f"{_pascal(name)}Request"
        _add(schemas, union, {"anyOf": [_ref(m.__name__) for m in models], "title": union})
        body = _ref(union)
    return {"required": True, "content": {"application/json": {"schema": body}}}


def _name_answer(operation: dict[str, Any], name: str, schemas: dict[str, Any]) -> None:
    """The 200's JSON schema, when FastAPI left it inline (a union), as a component named
    ``<Name>Response``."""
    content = operation["responses"].get("200", {}).get("content", {})
    json = content.get("application/json")
    if json is None or "$ref" in json.get("schema", {}):
        return
    union = f"{_pascal(name)}Response"
    _add(schemas, union, {**json["schema"], "title": union})
    json["schema"] = _ref(union)


def _headers(status: str, path: str) -> dict[str, Any]:
    """The headers an answer of ``status`` on ``path`` carries."""
    names = ["X-Request-Id", *STATUS_HEADERS.get(int(status), ())]
    if status == "200" and path in RERANK_PATHS:
        names += [*RERANK_HEADERS, *RERANK_SOMETIMES]
    return {name: _ref(name, "headers") for name in names}


def _errors(operation: dict[str, Any], path: str, protected: bool) -> None:
    """Every error status ``operation`` answers, each with its body and description."""
    responses = operation["responses"]
    statuses = [*EVERY, *(BODY_ERRORS if path in BODIES else ()), *((401,) if protected else ())]
    for status in statuses:
        responses.setdefault(str(status), {})
    if path not in BODIES:  # FastAPI's 422 for a query parameter: none can be invalid
        responses.pop("422", None)
    body = _ref("TeiErrorBody" if path in TEI_PATHS else "ErrorBody")
    for status, answer in responses.items():
        code = int(status)
        if code < 400:
            continue
        if answer.get("description") in (None, "", HTTPStatus(code).phrase):
            answer["description"] = ERRORS.get(code, HTTPStatus(code).phrase)
        content = answer.setdefault("content", {}).setdefault("application/json", {})
        if content.get("schema", {}).get("$ref", "").endswith("/ErrorBody") or not content:
            content["schema"] = body
    operation["responses"] = dict(sorted(responses.items()))


def _parameters(operation: dict[str, Any], path: str) -> None:
    """The request headers ``path`` reads, and no ``null`` for a query parameter left out."""
    for parameter in operation.get("parameters", []):
        kinds = parameter["schema"].pop("anyOf", None)
        if kinds is not None:
            parameter["schema"].update(next(k for k in kinds if k != {"type": "null"}))
    names = ["X-Request-Id"]
    if path not in UNTRACED:
        names.append("traceparent")
    if path in LOGGED_PATHS:
        names.append(EXPERIMENT_HEADER)
    operation.setdefault("parameters", []).extend(_ref(n, "parameters") for n in names)


def complete(schema: dict[str, Any], settings: ServerSettings) -> dict[str, Any]:
    """FastAPI's ``schema`` of the service, completed (see the module), in place."""
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    open_paths = set(OPEN_PATHS) | ({"/metrics"} if settings.metrics_public else set())
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            name = OPERATION_IDS[path]
            operation["operationId"] = name
            if path in BODIES:
                operation["requestBody"] = _body(BODIES[path], name, schemas)
            _name_answer(operation, name, schemas)
            protected = bool(settings.api_keys) and path not in open_paths
            if protected:
                operation["security"] = [{"bearer": []}]
            _errors(operation, path, protected)
            for status, answer in operation["responses"].items():
                answer["headers"] = _headers(status, path)
            _parameters(operation, path)
    for unused in ("HTTPValidationError", "ValidationError"):  # errors are {"message"}
        schemas.pop(unused, None)
    for error in (ErrorBody, TeiErrorBody):
        schemas[error.__name__] = error.model_json_schema()
    components["schemas"] = dict(sorted(schemas.items()))
    components["headers"] = {  # required: sent on every answer that lists it
        name: {"description": said, "required": name not in RERANK_SOMETIMES, "schema": shape}
        for name, (said, shape) in HEADERS.items()
    }
    components["parameters"] = {
        name: {
            "name": name,
            "in": "header",
            "required": False,
            "description": said,
            "schema": shape,
        }
        for name, (said, shape) in PARAMETERS.items()
    }
    components["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "One of the service's API keys (`RERANKIT_API_KEYS`, `[server] "
            "api_keys`), on every operation that lists it when keys are set",
        }
    }
    return schema


def set_openapi(app: Any, settings: ServerSettings) -> None:
    """``app``'s OpenAPI document: FastAPI's, :func:`complete`d once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            app.openapi_schema = complete(schema, settings)
        return app.openapi_schema

    app.openapi = openapi
