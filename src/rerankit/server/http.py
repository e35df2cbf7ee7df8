"""The service's HTTP primitives: the JSON error body and a UTF-8 response that always
encodes, reading a body within its size and time limits, parsing it into a request model
with plain messages, and running work that is dropped when the client goes away."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
import time
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InvalidDocumentError, ServiceError
from .codes import NO_RETRY_AFTER, code_of
from .metrics import Metrics
from .settings import ServerSettings

__all__ = [
    "PLAIN_MESSAGES",
    "TEI_ERROR_TYPES",
    "AnswerShape",
    "ErrorBody",
    "SafeJSONResponse",
    "TeiErrorBody",
    "body_too_large",
    "client_gone",
    "error",
    "invalid",
    "invalid_document",
    "parse",
    "read_body",
    "read_json",
    "render",
    "said",
    "until_disconnect",
    "validate",
]

logger = logging.getLogger(__name__)

#: pydantic's wording for the request models' constraints, said plainly
PLAIN_MESSAGES = {
    "string_pattern_mismatch": "must not be empty or only whitespace",
    "too_short": "must not be empty",
    "greater_than_equal": "must be a positive integer",
}


def _absent_not_null(schema: dict[str, Any]) -> None:
    """A field the service may leave out is left out, never sent as null: its schema says
    so (no ``null`` branch, no ``default``); a field always sent keeps its ``null``."""
    required = set(schema.get("required", ()))
    for name, field in schema.get("properties", {}).items():
        if name in required:
            continue
        field.pop("default", None)
        kinds = [k for k in field.pop("anyOf", ()) if k != {"type": "null"}]
        if len(kinds) == 1:
            field.update(kinds[0])
        elif kinds:
            field["anyOf"] = kinds


class AnswerShape(BaseModel):
    """The shape of a body the service sends, for the OpenAPI document: the endpoints build
    their answers as plain JSON, and the suite checks real answers against these shapes
    (tests/server/test_openapi_answers.py). A field typed ``X | None = None`` is one that
    may be absent (never null)."""

    model_config = ConfigDict(json_schema_extra=_absent_not_null)


class ErrorBody(AnswerShape):
    """Every error answer: ``message`` says what went wrong and what to do. Other fields
    may be added (``additionalProperties``): read the ones you know."""

    model_config = ConfigDict(extra="allow")
    message: str
    code: str


#: TEI's ``error_type`` values (:func:`tei_error_type`)
TEI_ERROR_TYPES = ("Validation", "Overloaded", "Unhealthy", "Backend")


class TeiErrorBody(ErrorBody):
    """An error answer on TEI's path (``/rerank``): ``message``, and the same text in
    TEI's ``error`` with its ``error_type`` (``Overloaded``: 429, ``Unhealthy``: 503,
    ``Backend``: another 5xx, ``Validation``: the caller's 4xx), which TEI's clients read."""

    error: str
    error_type: Literal[TEI_ERROR_TYPES]


def invalid(where: str, message: str) -> ServiceError:
    """The 422 of a body that is JSON but not a valid request: ``invalid request: <where>:
    <message>``, ``where`` the dotted path of the value at fault (``documents.0.text``)."""
    said = f"invalid request: {where + ': ' if where else ''}{message}"
    return ServiceError(422, said, code="invalid_request")


def invalid_document(exc: InvalidDocumentError) -> ServiceError:
    """:func:`invalid` for a document the library could not read: at
    ``documents.<index>.<field>``."""
    if exc.index is None:
        return invalid("documents", str(exc))
    where = ".".join(["documents", str(exc.index), *([exc.field] if exc.field else [])])
    return invalid(where, str(exc).removeprefix(f"document {exc.index}: "))


def render(content: Any) -> bytes:
    """``content`` as compact JSON in UTF-8 (text readable as sent: ``"返品"``, not
    ``"\\u8fd4\\u54c1"``) that cannot fail to encode: when a text holds something UTF-8
    cannot encode (a lone surrogate, which a JSON ``\\ud800`` escape makes), that whole
    answer is written with non-ASCII escaped instead (still valid JSON, the same values)."""
    try:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class SafeJSONResponse(JSONResponse):
    """JSON that cannot fail to encode (see :func:`render`)."""

    def render(self, content: Any) -> bytes:
        return render(content)


#: the paths whose errors also carry Text Embeddings Inference's ``error`` and ``error_type``
TEI_PATHS = frozenset({"/rerank"})


def tei_error_type(status: int) -> str:
    """TEI's ``error_type`` for an answer of ``status``: ``Overloaded`` (429),
    ``Unhealthy`` (503), ``Backend`` (any other 5xx) or ``Validation`` (the caller's
    4xx)."""
    if status == 429:
        return "Overloaded"
    if status == 503:
        return "Unhealthy"
    return "Backend" if status >= 500 else "Validation"


def error(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    path: str = "",
    *,
    code: str | None = None,
    details: dict[str, Any] | None = None,
) -> Any:
    """The JSON error answer ``{"message": ..., "code": ...}`` (``code``: the cause's name,
    :mod:`.codes`; the status's general one when None) with ``details`` as fields beside
    them; on TEI's path (``/rerank``) with TEI's ``error`` (the same text) and
    ``error_type`` as well, which TEI's clients read (they ignore the other keys). A 429 or
    503 says when to come back (``Retry-After: 1`` unless ``headers`` say otherwise), but
    for a cause no wait mends (:data:`.codes.NO_RETRY_AFTER`)."""
    code = code_of(status, code)
    body: dict[str, Any] = {"message": message, "code": code, **(details or {})}
    said = {k.lower() for k in headers or {}}
    if status in (429, 503) and code not in NO_RETRY_AFTER and "retry-after" not in said:
        headers = {**(headers or {}), "Retry-After": "1"}
    if path in TEI_PATHS:
        body.update(error=message, error_type=tei_error_type(status))
    return SafeJSONResponse(body, status_code=status, headers=headers)


def said(exc: ServiceError, path: str = "") -> Any:
    """:func:`error`: the answer of ``exc`` on ``path``."""
    return error(exc.status, exc.message, exc.headers, path, code=exc.code, details=exc.details)


def body_too_large(settings: ServerSettings) -> ServiceError:
    """The 413 of a body over ``max_body_bytes`` (said by its Content-Length, or once it has
    streamed past it)."""
    return ServiceError(
        413,
        f"request body over {settings.max_body_bytes} bytes (max_body_bytes in the service's "
        "settings)",
        code="body_too_large",
        details={"max_body_bytes": settings.max_body_bytes},
    )


async def read_body(request: Any, settings: ServerSettings) -> bytes:
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
                code="body_timeout",
            ) from exc
        size += len(chunk)
        if size > settings.max_body_bytes:
            raise body_too_large(settings)
        chunks.append(chunk)
    return b"".join(chunks)


#: the bodies a browser sends across origins without a preflight: refused, so that a web
#: page cannot make a visitor's browser call a service without keys (on localhost, say)
_SIMPLE_FORMS = frozenset(
    {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"}
)


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON value (send a number, or null)")


async def read_json(request: Any, settings: ServerSettings) -> Any:
    """The body as JSON, within its size and time limits (400 when it is not JSON: empty
    too)."""
    # Parsed by hand: some clients (the cohere SDK among them) send JSON without a
    # Content-Type header.
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind in _SIMPLE_FORMS:  # what a page of another origin may send without asking
        raise ServiceError(
            415,
            f"Content-Type {kind}: send application/json (or none)",
            code="unsupported_media_type",
        )
    raw = await read_body(request, settings)
    if not raw.strip():
        raise ServiceError(400, "the body is empty: send a JSON object", code="invalid_json")
    try:  # NaN and Infinity are not JSON: echoed back, they would break strict clients
        return json.loads(raw, parse_constant=_not_json)
    except UnicodeDecodeError as exc:  # a Latin-1 or cp1252 body, most often
        raise ServiceError(
            400,
            f"the body is not UTF-8 (byte {exc.start} is 0x{raw[exc.start]:02x}): send JSON "
            "encoded as UTF-8",
            code="invalid_json",
        ) from exc
    except ValueError as exc:
        why = "a number has too many digits" if "int_max_str_digits" in str(exc) else exc
        raise ServiceError(
            400, f"the body is not JSON: {str(why)[:200]}", code="invalid_json"
        ) from exc
    except RecursionError as exc:  # nesting deeper than the parser goes
        raise ServiceError(400, "the body is nested too deeply", code="invalid_json") from exc


#: what a JSON value that is not an object is, as a message says it
_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def validate(data: Any, model: type) -> Any:
    """``data`` as a ``model`` (a pydantic request model), or the 422 saying where it is
    wrong, in plain words (a body that is JSON but not an object: what it is instead)."""
    if not isinstance(data, dict):
        raise invalid(
            "", f"the body must be a JSON object, not {_JSON_KINDS.get(type(data), 'a number')}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = PLAIN_MESSAGES.get(first.get("type", ""), first.get("msg"))
        message = str(message).removeprefix("Value error, ")  # a validator's own words
        if first.get("type") == "extra_forbidden" and len(first.get("loc", ())) == 1:
            message = _not_a_field(str(first["loc"][0]), model)
        raise invalid(where, message) from exc


def _not_a_field(name: str, model: type) -> str:
    """What a body field the request model does not have is told: its fields, and the
    one most likely meant."""
    fields = [  # (not rerankit's Python names, refused: their annotation is None)
        f.alias or n for n, f in model.model_fields.items() if f.annotation is not type(None)
    ]
    close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
    meant = f"; did you mean {close[0]!r}?" if close else ""
    return f"is not a field of this request (its fields: {', '.join(fields)}){meant}"


async def parse(request: Any, model: type, settings: ServerSettings) -> Any:
    """The body, read (:func:`read_json`) and validated as a ``model``."""
    return validate(await read_json(request, settings), model)


async def client_gone(request: Any) -> None:
    """Returns when the client disconnects (the body is read, so the next message the
    server sends the app is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def until_disconnect(request: Any, work: Any, metrics: Metrics) -> Any:
    """Run ``work``; if the client goes first, cancel it: a request still queued leaves
    the queue without running, a running one stops at its next await (work already on
    a thread stops before its model's next batch; batched embedding work not yet started
    is dropped), and one INFO line says so, naming the request (nothing is sent: no
    access line is written). Cancelled itself (a request cut at shutdown), it cancels the
    work too."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(client_gone(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watch.cancel()
    if not task.done():
        arrival = getattr(request.state, "arrival", None)
        after = "" if arrival is None else f" after {time.monotonic() - arrival:.2f} s"
        logger.info(
            "%s %s: the client closed the connection%s, before its answer (counted as status "
            "499); its work is dropped: queued, it never runs; running, it stops before its "
            "model's next batch",
            request.method,
            request.url.path,
            after,
        )
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        metrics.abandoned.inc()
        raise ServiceError(
            499,
            "the client closed the connection; the request was dropped",
            code="client_closed_request",
        )
    return task.result()
