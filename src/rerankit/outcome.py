"""What an ordering rule decides (:class:`Outcome`) and the check of it: a rule's
``decide()`` must return an ``Outcome`` that lists each position of its input exactly once,
in ``order`` (kept) or in ``dropped``. :func:`checked_outcome` raises a
:class:`~rerankit.errors.RuleError` naming the rule and the problem otherwise, so that a
buggy rule never loses or repeats a document silently (a pipeline then keeps the previous
stage's order, as for a rule that raises)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from .errors import RuleError

__all__ = ["Outcome", "checked_outcome"]

#: how many missing positions an error names
_NAMED = 5


@dataclass(frozen=True)
class Outcome:
    """What a rule decided: the new order (positions in its input) and what it dropped.
    Each position of the input appears once, in ``order`` or in ``dropped``."""

    order: list[int]
    dropped: list[int]
    note: str = ""
    warnings: tuple[str, ...] = ()


def _a(value: Any) -> str:
    kind = type(value).__name__
    return "None" if value is None else f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}"


def _positions(rule: str, outcome: Outcome, part: str) -> list[int]:
    values = getattr(outcome, part)
    if isinstance(values, np.ndarray) and values.ndim != 1:
        values = values.tolist()  # refused below: a nested list holds no ints
    if not isinstance(values, (Sequence, np.ndarray)) or isinstance(values, (str, bytes)):
        raise RuleError(
            f"rule {rule!r} returned an Outcome whose {part} is {_a(values)}; it must be a "
            "list of positions (ints)"
        )
    for value in values:
        if not isinstance(value, Integral) or isinstance(value, bool):
            raise RuleError(
                f"rule {rule!r} returned {value!r} ({_a(value)}) in its Outcome's {part}; "
                "positions are ints"
            )
    return [int(v) for v in values]  # numpy ints too


def checked_outcome(rule: str, outcome: Any, n: int) -> Outcome:
    """``outcome``, rule ``rule``'s decision over ``n`` items, with plain int positions; a
    :class:`~rerankit.errors.RuleError` when it is no :class:`Outcome`, or does not list
    each position in ``range(n)`` exactly once across ``order`` and ``dropped``."""
    if not isinstance(outcome, Outcome):
        raise RuleError(
            f"rule {rule!r} returned {_a(outcome)}; decide() must return "
            "rerankit.ordering.Outcome (Outcome(order=[...], dropped=[...]))"
        )
    order, dropped = _positions(rule, outcome, "order"), _positions(rule, outcome, "dropped")
    seen: set[int] = set()
    for part, values in (("order", order), ("dropped", dropped)):
        for at, i in enumerate(values):
            if not 0 <= i < n:
                raise RuleError(
                    f"rule {rule!r} returned position {i}, but there are {n} items"
                    + (f" (positions 0 to {n - 1})" if n else "")
                )
            if i in seen:
                raise RuleError(
                    f"rule {rule!r} returned position {i} twice ({part}[{at}] repeats it); "
                    "each position must appear once, in order or in dropped"
                )
            seen.add(i)
    if len(seen) < n:
        missing = [i for i in range(n) if i not in seen]
        more = ", ..." if len(missing) > _NAMED else ""
        raise RuleError(
            f"rule {rule!r} left out {len(missing)} of {n} positions "
            f"([{', '.join(map(str, missing[:_NAMED]))}{more}]): list each position once, "
            "in order (kept) or in dropped"
        )
    return Outcome(order, dropped, outcome.note, tuple(outcome.warnings))
