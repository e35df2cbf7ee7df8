"""The ``code`` of the service's error answers: a stable snake_case name of the cause,
beside the ``message`` in every error body, so that a client acts on the cause rather than
on the English (one status covers several: a 503 for a queue too long, a pipeline that is
loading, a service that stops). The HTTP service page's table ("Errors and retries") lists
each with its status and what a client should do; a test holds the two alike."""

from __future__ import annotations

__all__ = ["CODES", "NO_RETRY_AFTER", "code_of"]

#: every code the service sends, with the statuses it comes with
CODES: dict[str, tuple[int, ...]] = {
    "invalid_json": (400,),
    "invalid_request": (400, 422),
    "too_many_documents": (400,),
    "document_too_long": (400, 413),
    "query_too_long": (400,),
    "invalid_header": (400,),
    "unauthorized": (401,),
    "unknown_model": (404,),
    "unknown_answer_id": (404,),
    "not_found": (404,),
    "method_not_allowed": (405,),
    "body_timeout": (408,),
    "body_too_large": (413,),
    "too_much_work_for_timeout": (413,),
    "unsupported_media_type": (415,),
    "queue_full": (429,),
    "provider_rate_limited": (429,),
    "headers_too_large": (431,),
    "client_closed_request": (499,),
    "internal_error": (500,),
    "scoring_failed": (500,),
    "provider_failed": (502,),
    "pipeline_loading": (503,),
    "pipeline_failed": (503,),
    "pipeline_not_installed": (503,),
    "pipeline_failing": (503,),
    "not_queued": (503,),
    "queue_timeout": (503,),
    "not_run": (503,),
    "work_cancelled": (503,),
    "shutting_down": (503,),
    "deadline_exceeded": (504,),
    "deadline_exceeded_overloaded": (504,),
}

#: the codes of the 503s that carry no ``Retry-After`` (every other 429 and 503 does): no
#: wait mends them, so a client that honours the header would only wait in vain
NO_RETRY_AFTER = frozenset({"pipeline_not_installed"})

#: the code of an error raised without one (Starlette's 404 and 405, mostly), by status
_BY_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "body_timeout",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "queue_full",
    431: "headers_too_large",
    499: "client_closed_request",
    500: "internal_error",
    502: "provider_failed",
    504: "deadline_exceeded",
}


def code_of(status: int, code: str | None = None) -> str:
    """``code``, or the general one of ``status`` when none was given (``error`` for a
    status without one)."""
    return code or _BY_STATUS.get(status, "error")
