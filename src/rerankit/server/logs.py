"""The service's log lines: each starts with its time, ISO 8601 in local time with the
offset and milliseconds (``2026-11-30T17:24:15.123+00:00 INFO rerankit.server.app: ...``),
rerankit's and uvicorn's alike, so a log read without journald's or docker's own
timestamps still says when each thing happened."""

from __future__ import annotations

import copy
import logging
from datetime import datetime
from typing import Any

__all__ = ["LOG_FORMAT", "iso_time", "log_formatter", "uvicorn_formatter", "uvicorn_log_config"]

#: the service's log lines: ``2026-11-30T17:24:15.123+00:00 WARNING rerankit.server.app: ...``
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def iso_time(record: logging.LogRecord, datefmt: str | None = None) -> str:
    """``record``'s time, ISO 8601: local time with its offset, to the millisecond."""
    moment = datetime.fromtimestamp(record.created).astimezone()
    return moment.isoformat(timespec="milliseconds")


def log_formatter() -> logging.Formatter:
    """The formatter of rerankit's own lines in the service (:data:`LOG_FORMAT`)."""
    formatter = logging.Formatter(LOG_FORMAT)
    formatter.formatTime = iso_time  # type: ignore[method-assign]
    return formatter


def uvicorn_formatter(kind: str = "default", **options: Any) -> logging.Formatter:
    """uvicorn's formatter of ``kind`` (``default``: its own lines, ``access``: a line per
    request) with the time in front, as :data:`LOG_FORMAT` has it (``logging.config``
    calls this with the formatter's options)."""
    from uvicorn.logging import AccessFormatter, DefaultFormatter  # the 'server' extra

    base = AccessFormatter if kind == "access" else DefaultFormatter
    formatter = base(**options)
    formatter.formatTime = iso_time  # type: ignore[method-assign]
    return formatter


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with the time in front of each of its lines."""
    from uvicorn.config import LOGGING_CONFIG  # the 'server' extra

    config = copy.deepcopy(LOGGING_CONFIG)
    for kind, formatter in config["formatters"].items():
        formatter.pop("()", None)
        formatter["()"] = uvicorn_formatter
        formatter["kind"] = kind
        formatter["fmt"] = "%(asctime)s " + formatter["fmt"]
    return config
