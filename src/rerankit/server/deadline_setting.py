"""``[server] deadline``: the seconds from a request's arrival by which the service answers
it, named as :func:`rerankit.rerank`'s ``deadline=`` and ``rank --deadline`` name the same
bound. Its earlier name, ``timeout``, still works; the settings keep it as their
``timeout`` field (the name ``/info``'s ``limits.timeout`` and the ``x-rerankit-timeout``
header still carry), which ``ServerSettings(deadline=...)`` sets and ``settings.deadline``
reads."""

from __future__ import annotations

import functools
import inspect
from math import inf
from typing import Any, TypeVar

from .._renamed import one_name
from ..options import unknown_keys

__all__ = [
    "DEADLINE_KEYS",
    "deadline_argument",
    "deadline_keys",
    "deadline_named",
    "server_table",
]

_Settings = TypeVar("_Settings", bound=type)

#: the key's name, then its earlier one (the settings' field)
DEADLINE_KEYS = ("deadline", "timeout")


def deadline_named(server: dict[str, Any]) -> dict[str, Any]:
    """``server`` (a ``[server]`` table, changed in place) with its ``deadline`` moved to the
    settings' ``timeout`` field; both keys in one table, or a deadline that is not a positive
    number of seconds, are a ValueError naming the key."""
    now, earlier = DEADLINE_KEYS
    if now in server:
        if earlier in server:
            raise ValueError(f"[server] has {now} and its earlier name {earlier}: give {now} once")
        value = server.pop(now)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < inf:
            raise ValueError(f"[server]: {now} must be a positive number of seconds, got {value!r}")
        server[earlier] = value
    return server


def deadline_keys(server: dict[str, Any], fields: list[str]) -> tuple[list[str], list[str]]:
    """The keys of ``server`` (a ``[server]`` table) to check against the keys it may hold,
    and those keys (the settings' ``fields``) as a file names them: ``deadline``, not the
    field's ``timeout``, which is accepted unlisted, as its earlier name."""
    now, earlier = DEADLINE_KEYS
    known = [now if name == earlier else name for name in fields]
    return [key for key in server if key != earlier], known


def server_table(server: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """``server`` (a ``[server]`` table, changed in place) with a key that is none of the
    settings' ``fields`` a ValueError listing them as a file names them
    (:func:`deadline_keys`), and its deadline moved to the ``timeout`` field
    (:func:`deadline_named`)."""
    given, known = deadline_keys(server, fields)
    problem = unknown_keys(given, known, "[server]")
    if problem is not None:
        raise ValueError(problem)
    return deadline_named(server)


def deadline_argument(cls: _Settings) -> _Settings:
    """``cls`` (the service's settings) taking ``deadline=`` for its ``timeout`` field, as
    the file's ``deadline`` key sets it (both names in one call are a TypeError naming
    both), and reading it back as ``settings.deadline``; the field keeps its name, which
    :meth:`~.settings.ServerSettings.to_mapping` carries to worker processes."""
    now, earlier = DEADLINE_KEYS
    init = cls.__init__  # type: ignore[misc]
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, deadline: float | None = None, **kwargs: Any) -> None:
        if deadline is None:  # not given: as the class's own __init__
            init(self, *args, **kwargs)
            return
        bound = signature.bind(self, *args, **kwargs)
        given = bound.arguments.get(earlier)
        bound.arguments[earlier] = one_name(cls.__name__, now, deadline, earlier, given)
        init(*bound.args, **bound.kwargs)

    default = signature.parameters[earlier].default  # what leaving both out gives
    parameter = inspect.Parameter(now, inspect.Parameter.KEYWORD_ONLY, default=default)
    __init__.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), parameter]
    )
    cls.__init__ = __init__  # type: ignore[misc]

    def read(self: Any) -> float:
        return self.timeout

    def write(self: Any, value: float) -> None:
        self.timeout = value

    cls.deadline = property(  # type: ignore[attr-defined]
        read, write, doc="The seconds by which each request is answered (the timeout field)."
    )
    return cls
