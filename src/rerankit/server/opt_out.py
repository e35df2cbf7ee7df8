"""A request kept out of the experiments and the click log: ``x-rerankit-experiment: off``
(a parity check, a probe, a load test). It is answered by the pipeline it names, plainly
(never interleaved nor explored; the answer cache may answer it), and logs no impression,
so it counts in no interleaving report and teaches nothing; feedback naming its id is
an unknown id. ``on`` (or no header) leaves the request to the settings' draw."""

from __future__ import annotations

from contextvars import ContextVar

from ..errors import ServiceError

__all__ = ["HEADER", "OPTED_OUT", "opted_out"]

#: the request header, and the values it takes
HEADER = "x-rerankit-experiment"
VALUES = ("off", "on")

#: whether the request being answered opted out (set by the middleware for its duration)
OPTED_OUT: ContextVar[bool] = ContextVar("rerankit_experiment_off", default=False)


def opted_out(value: str | None) -> bool:
    """Whether a request whose ``x-rerankit-experiment`` header is ``value`` (None: not
    sent) stays out of the experiments and the click log; a value other than ``off`` or
    ``on`` is a 400 naming the header."""
    if value is None:
        return False
    said = value.strip().lower()
    if said not in VALUES:
        raise ServiceError(
            400,
            f"{HEADER}: {value!r} is not a value it takes: off (keep this request out of "
            "interleaving, exploration and the click log, as for a parity check) or on",
            code="invalid_header",
            details={"header": HEADER},
        )
    return said == "off"
