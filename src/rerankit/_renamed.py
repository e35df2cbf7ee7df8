"""Arguments with an earlier name, still taken: one argument, two spellings.

The current name is the one the user pages and every command use; the earlier one keeps
working and gives the same result. Both spellings of one argument in one call are a
TypeError naming both, as Python says of an argument given twice (which one should win?).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NOT_GIVEN", "one_name"]

#: an earlier name not given (where None is a value it may be given)
NOT_GIVEN: Any = object()


def one_name(
    call: str, now: str, value: Any, old: str, earlier: Any, *, default: Any = None
) -> Any:
    """The argument ``now`` (``value``, left out when it is ``default``), or ``earlier``,
    the same argument given under its earlier name ``old`` (None or :data:`NOT_GIVEN`: not
    given); both given is a TypeError naming both. ``call``: the function, for the message."""
    if earlier is None or earlier is NOT_GIVEN:
        return value
    if not (value is default or (type(value) is type(default) and value == default)):
        raise TypeError(f"{call}() got {now}= and its earlier name {old}=: give {now}= once")
    return earlier
