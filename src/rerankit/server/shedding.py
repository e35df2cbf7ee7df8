"""Shedding: a request that would only wait in the queue to miss its deadline is refused
before it queues, and one that got its slot too late to finish is not started. Both read
the pipeline's recent time per request and per text scored (its moving averages) and the
age of its running requests: a request already running longer than the recent average
(a provider that stalled since) is expected to take at least that long, so a sudden stall
sheds the requests that arrive while it lasts, not only once slow answers have been
recorded. (Requests that arrived together, before any was seen to be slow, are queued: each
waits for a slot until its deadline.) A pipeline with no answered request yet (just
started) sheds nothing: there is no recent time to compare an age with."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from ..errors import ServiceError
from .admission import Admission

__all__ = ["RETRY_AFTER_MOST", "no_slot", "request_seconds", "shed", "too_big", "too_late"]

logger = logging.getLogger(__name__)

#: the longest ``Retry-After`` a shed request is told (seconds): the queue ahead can be
#: estimated at minutes, but it changes long before (and Cohere's SDK waits 60 s at most)
RETRY_AFTER_MOST = 60


def request_seconds(pipeline: Any, now: float) -> float:
    """Seconds one request of ``pipeline`` is expected to hold its slot: its recent average
    (``service_time``), or the age of its oldest running request (``running_since``: when
    each started) when that is longer. 0 when neither is known."""
    ages = [now - started for started in pipeline.running_since.values()]
    return max([pipeline.service_time or 0.0, *ages])


def _seconds(value: float) -> str:
    """``value`` seconds as a message says them: never "0.0 s" for a time that is not 0."""
    return f"{value:.1f} s" if value >= 0.1 else f"{max(value, 0.0) * 1000:.0f} ms"


def _compared(*values: float) -> list[str]:
    """``values`` (seconds) said in one unit (ms when all are under 0.1 s) with as many
    decimals as it takes (up to 3) for the first, what a request needs, to read differently
    from the last, the time it has left: "8.04 s" against "7.96 s", never "8.0 s" against
    "8.0 s" for a request refused because it does not fit."""
    scale, unit = (1000.0, "ms") if max(values) < 0.1 else (1.0, "s")
    for decimals in range(1 if unit == "s" else 0, 4):
        said = [f"{max(v, 0.0) * scale:.{decimals}f} {unit}" for v in values]
        if said[0] != said[-1]:
            break
    return said


#: the share of ``timeout`` a 413 sizes its "send at most about N documents" for: the recent
#: time per text is an average, and a request of that size must fit with a margin
FITS_SHARE = 0.8


def _each(total: float, count: int, each: float) -> str:
    """``each`` seconds (the time of one of ``count`` texts) said with as many significant
    digits (2 to 6) as it takes for ``count`` x it to read as ``total`` does (300 texts at
    about 0.244 s each, 73.2 s; not 0.2 s each)."""
    scale, unit = (1000.0, "ms") if each < 0.1 else (1.0, "s")
    said = f"{each * scale:.2g}"
    for digits in range(2, 7):
        said = f"{each * scale:.{digits}g}"
        if _seconds(count * float(said) / scale) == _seconds(total):
            break
    return f"{said} {unit}"


def too_big(
    name: str, per_document: float | None, documents: int, timeout: float, asked: bool = False
) -> ServiceError | None:
    """The 413 of a request of pipeline ``name`` whose own expected work (``documents``
    texts at the recent ``per_document`` seconds each) is longer than the whole ``timeout``
    (``asked``: the shorter one its ``x-rerankit-timeout`` header set): it could not finish
    even on an idle service, so it is told what to reduce, with no ``Retry-After`` (a retry
    would be refused the same way). Logged as a warning (counts, no text). None when it may
    fit, or nothing is known yet."""
    expected = (per_document or 0.0) * documents
    if not per_document or expected <= timeout:
        return None
    fits = max(1, math.floor(FITS_SHARE * timeout / per_document))  # rounded down
    each = _each(expected, documents, per_document)
    limit = f"{timeout:g} s deadline{' its x-rerankit-timeout header set' if asked else ''}"
    longer = "a longer x-rerankit-timeout" if asked else "raise the service's deadline"
    said = (
        f"pipeline {name!r}: this request alone needs about {_seconds(expected)} of work "
        f"({documents} texts at about {each} each, recently), more than the {limit}: send at "
        f"most about {fits} documents (what {FITS_SHARE:.0%} of the deadline holds at that "
        f"rate), or shorter ones, or {longer}"
    )
    logger.warning("refused with 413: %s", said)
    details = {"max_documents": fits, "timeout": timeout}
    return ServiceError(413, said, code="too_much_work_for_timeout", details=details)


def shed(
    pipeline: Any,
    admission: Admission,
    documents: int,
    deadline: float,
    timeout: float,
    asked: bool = False,
    now: float | None = None,
) -> ServiceError | None:
    """The 503 (with ``Retry-After``: when the queue should have drained, but no longer
    than ``timeout`` or :data:`RETRY_AFTER_MOST`) of a request of
    ``pipeline`` with ``documents`` to score that would not start at once and would not
    finish by ``deadline``: the requests ahead of it in its pipeline's queue, each
    :func:`request_seconds` over the slots the pipeline may hold, then its own expected
    work, do not fit in the time left. None when it may queue."""
    now = time.monotonic() if now is None else now
    refused = too_big(pipeline.name, pipeline.per_document, documents, timeout, asked)
    if refused is not None:  # (not the queue's fault: it would not fit on an idle service)
        return refused
    if admission.can_start(pipeline.name) or not pipeline.service_time:
        return None  # (no request answered yet: nothing known to shed by)
    per_request = request_seconds(pipeline, now)
    ahead = admission.waiting_by[pipeline.name] + 1
    wait = ahead * per_request / admission.share
    work = (pipeline.per_document or 0.0) * documents
    if wait + work <= deadline - now:
        return None
    need, left = _compared(wait + work, deadline - now)
    return ServiceError(
        503,
        f"pipeline {pipeline.name!r}: not queued: it needs about {need} ({_seconds(wait)} of "
        f"queue ahead and {_seconds(work)} of work), more than the {left} left of its "
        f"{timeout:g} s deadline (retry after Retry-After, or send fewer documents)",
        {"Retry-After": str(max(1, math.ceil(min(wait, timeout, RETRY_AFTER_MOST))))},
        code="not_queued",
    )


def too_late(
    name: str, expected: float, deadline: float, timeout: float, now: float | None = None
) -> ServiceError | None:
    """The 503 of a request of pipeline ``name`` that got its slot with less time left
    before ``deadline`` than its ``expected`` seconds of work (it would only be cancelled
    half-way); None when it may run."""
    now = time.monotonic() if now is None else now
    if deadline - now >= expected:
        return None
    if deadline <= now:
        said = f"its {timeout:g} s deadline had passed when its turn came"
    else:
        need, left = _compared(expected, deadline - now)
        said = (
            f"it needs about {need} of work, more than the {left} left of its "
            f"{timeout:g} s deadline"
        )
    return ServiceError(
        503,
        f"pipeline {name!r}: not run: {said} (the service is busy: retry, or send fewer documents)",
        {"Retry-After": "1"},
        code="not_run",
    )


def no_slot(name: str, timeout: float) -> ServiceError:
    """The 503 of a request of pipeline ``name`` still queued at its deadline (``timeout``
    seconds after its arrival)."""
    return ServiceError(
        503,
        f"pipeline {name!r}: no slot free within the {timeout:g} s deadline; not run",
        {"Retry-After": "1"},
        code="queue_timeout",
    )
