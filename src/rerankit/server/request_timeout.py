"""A client's own deadline for a request: ``x-rerankit-timeout: SECONDS`` (a positive number,
``2`` or ``0.5``) shortens the service's deadline (``[server] deadline``) for that request,
never lengthens it. The request then has the shorter deadline from its arrival, as it would
have the service's: it is refused at once when its expected work would not fit (413), queued
only while it may still finish, and answered 504 when it runs out of time; such a 504, the
client's choice of budget, does not count towards the pipeline's ``failing``."""

from __future__ import annotations

import math

from ..errors import ServiceError

__all__ = ["HEADER", "asked_timeout", "request_timeout"]

#: the request header (named after ``deadline``'s earlier name, ``timeout``)
HEADER = "x-rerankit-timeout"


def asked_timeout(value: str | None, timeout: float) -> float | None:
    """The deadline (seconds) a request whose ``x-rerankit-timeout`` header is ``value`` (None:
    not sent) asks for, when it is shorter than the service's ``timeout``; None when it is
    not sent or not shorter. A value that is not a positive number of seconds is a 400
    naming the header."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ServiceError(
            400,
            f"{HEADER}: {value[:50]!r} is not a number of seconds above 0 (the request's "
            f"deadline, at most the service's deadline, {timeout:g} s)",
            code="invalid_header",
            details={"header": HEADER},
        )
    seconds, own = request_timeout(seconds, timeout)
    return seconds if own else None


def request_timeout(asked: float | None, timeout: float) -> tuple[float, bool]:
    """The seconds a request has from its arrival, and whether they are its own: ``asked``
    (its ``x-rerankit-timeout``, or a call's own ``timeout``; None: none) when it is shorter
    than the service's ``timeout``, else ``timeout``. The one rule for a request's deadline,
    its shedding, its refusals' text and whether its 504 counts towards ``failing``."""
    if asked is not None and 0 < asked < timeout:
        return asked, True
    return timeout, False
