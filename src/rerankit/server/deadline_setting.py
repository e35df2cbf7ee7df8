"""``[server] deadline``: the seconds from a request's arrival by which the service answers
it, named as :func:`rerankit.rerank`'s ``deadline=`` and ``rank --deadline`` name the same
bound. Its earlier name, ``timeout``, still works; the settings keep it as their
``timeout`` field (the name ``/info``'s ``limits.timeout`` and the ``x-rerankit-timeout``
header still carry)."""

from __future__ import annotations

from math import inf
from typing import Any

__all__ = ["DEADLINE_KEYS", "deadline_keys", "deadline_named"]

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
