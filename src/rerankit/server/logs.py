"""The service's log lines: each starts with its time, ISO 8601 in local time with the
offset and milliseconds (``2026-11-30T17:24:15.123+00:00 INFO rerankit.server.app: ...``),
rerankit's and uvicorn's alike, so a log read without journald's or docker's own
timestamps still says when each thing happened. Above debug level no line holds a
provider's error text (it may quote the prompt: :func:`~rerankit.errors.for_the_log`). A
line written while a request is answered (rerankit's warnings and errors, uvicorn's access
line) ends with that request's id, the
``X-Request-Id`` of its answer, and its trace id when a span is current
(``... 200 OK [request 3f2a9c... trace 4bf92f...]``); other lines are as they were.

With the ``json`` log format (``rerankit serve --log-format json``) each line is one JSON
object instead (:class:`JsonLines`): ``time``, ``level``, ``logger``, ``message``, the
request's ``request_id`` and ``trace_id`` as fields, uvicorn's access line's ``client``,
``method``, ``path`` and ``status``, and a traceback in ``exception``, never on lines of its
own."""

from __future__ import annotations

import copy
import json
import logging
import sys
import uuid
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from ..errors import for_the_log

__all__ = [
    "LOG_FORMAT",
    "LOG_FORMATS",
    "MAX_REQUEST_ID",
    "REQUEST_ID",
    "JsonLines",
    "check_log_format",
    "iso_time",
    "log_formatter",
    "request_fields",
    "request_id",
    "request_suffix",
    "uvicorn_formatter",
    "uvicorn_log_config",
]

#: the service's log lines: ``2026-11-30T17:24:15.123+00:00 WARNING rerankit.server.app: ...``
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the service's log formats: ``text`` (:data:`LOG_FORMAT`, the default) and ``json``
LOG_FORMATS = ("text", "json")
#: the id of the request being answered (set by the middleware for the whole of its
#: answer); None outside a request
REQUEST_ID: ContextVar[str | None] = ContextVar("rerankit_request_id", default=None)
#: the longest ``X-Request-Id`` of a caller's that is kept (a longer one is replaced)
MAX_REQUEST_ID = 128


def request_id(sent: str | None) -> str:
    """A request's id: ``sent`` (the caller's ``X-Request-Id``) when it is sane, 1 to
    :data:`MAX_REQUEST_ID` printable ASCII characters without spaces; else (none, too long,
    a control character, a space, anything not ASCII) a new one, a uuid4's 32 hex digits.
    What a caller sent is never written to the log or echoed otherwise."""
    if sent and len(sent) <= MAX_REQUEST_ID and all("!" <= c <= "~" for c in sent):
        return sent
    return uuid.uuid4().hex


def request_fields() -> dict[str, str]:
    """The request being answered: ``request_id``, and ``trace_id`` (32 hex digits) when
    an OpenTelemetry span is current; outside a request, nothing."""
    rid = REQUEST_ID.get()
    if rid is None:
        return {}
    trace = sys.modules.get("opentelemetry.trace")  # imported only where tracing may run
    if trace is not None:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            return {"request_id": rid, "trace_id": f"{context.trace_id:032x}"}
    return {"request_id": rid}


def request_suffix() -> str:
    """What ends a line written while a request is answered: `` [request ID]``, with
    `` trace TRACE_ID`` when an OpenTelemetry span is current; outside a request, nothing."""
    fields = request_fields()
    if not fields:
        return ""
    if "trace_id" in fields:
        return f" [request {fields['request_id']} trace {fields['trace_id']}]"
    return f" [request {fields['request_id']}]"


class _RequestLines(logging.Formatter):
    """A formatter whose lines name the request being answered (:func:`request_suffix`),
    after the message and before a traceback."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = _said(record, super().formatMessage(record))
        line = line.replace("\r", "\\r").replace("\n", "\\n")  # one event, one line
        return line + request_suffix()


def _said(record: logging.LogRecord, text: str) -> str:
    """``text`` as the log may hold it: above debug level, a provider's error answer by its
    status and length only (:func:`~rerankit.errors.for_the_log`: it may quote the prompt),
    whichever logger wrote it; at debug level as it came."""
    return text if record.levelno <= logging.DEBUG else for_the_log(text)


def iso_time(record: logging.LogRecord, datefmt: str | None = None) -> str:
    """``record``'s time, ISO 8601: local time with its offset, to the millisecond."""
    moment = datetime.fromtimestamp(record.created).astimezone()
    return moment.isoformat(timespec="milliseconds")


def check_log_format(log_format: str) -> str:
    """``log_format`` when it is one of :data:`LOG_FORMATS`, else a ValueError naming it."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log_format: expected one of text, json; got {log_format!r}")
    return log_format


class JsonLines(logging.Formatter):
    """Each record as one JSON object on one line: ``time`` (as :func:`iso_time`),
    ``level``, ``logger``, ``message``; ``request_id`` and ``trace_id`` while a request is
    answered (:func:`request_fields`); ``client``, ``method``, ``path`` and ``status`` on
    uvicorn's access line; ``exception`` (the traceback) and ``stack`` when the record has
    them. uvicorn's formatter options (``fmt``, ``use_colors``) are taken and unused."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": iso_time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": _said(record, record.getMessage()),
            **request_fields(),
        }
        if record.name == "uvicorn.access" and _access_args(record.args):
            client, method, path, _, status = record.args  # type: ignore[misc]
            line.update(client=client, method=method, path=path, status=status)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def _access_args(args: Any) -> bool:
    """Whether ``args`` are uvicorn's access line's: client, method, path, HTTP version,
    status."""
    return isinstance(args, tuple) and len(args) == 5 and isinstance(args[4], int)


def log_formatter(log_format: str = "text") -> logging.Formatter:
    """The formatter of rerankit's own lines in the service: :data:`LOG_FORMAT`, or with
    ``json`` :class:`JsonLines`."""
    if check_log_format(log_format) == "json":
        return JsonLines()
    formatter = _RequestLines(LOG_FORMAT)
    formatter.formatTime = iso_time  # type: ignore[method-assign]
    return formatter


def uvicorn_formatter(
    kind: str = "default", log_format: str = "text", **options: Any
) -> logging.Formatter:
    """uvicorn's formatter of ``kind`` (``default``: its own lines, ``access``: a line per
    request) with the time in front, as :data:`LOG_FORMAT` has it, and the request's id at
    the end of a line written while one is answered; with ``json``, :class:`JsonLines`
    (``logging.config`` calls this with the formatter's options)."""
    from uvicorn.logging import AccessFormatter, DefaultFormatter  # the 'server' extra

    if check_log_format(log_format) == "json":
        return JsonLines()
    base = AccessFormatter if kind == "access" else DefaultFormatter
    formatter = type(base.__name__, (_RequestLines, base), {})(**options)
    formatter.formatTime = iso_time  # type: ignore[method-assign]
    return formatter


def uvicorn_log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's logging configuration with the time in front of each of its lines (with
    ``json``: each line a JSON object, :class:`JsonLines`), on the same streams."""
    from uvicorn.config import LOGGING_CONFIG  # the 'server' extra

    check_log_format(log_format)
    config = copy.deepcopy(LOGGING_CONFIG)
    for kind, formatter in config["formatters"].items():
        formatter.pop("()", None)
        formatter["()"] = uvicorn_formatter
        formatter["kind"] = kind
        formatter["fmt"] = "%(asctime)s " + formatter["fmt"]
        if log_format != "text":
            formatter["log_format"] = log_format
    return config
