"""The interface of ordering rules: the base :class:`Rule`, what a rule decides
(:class:`Outcome`) and the check of it: a rule's ``decide()`` must return an ``Outcome``
that lists each position of its input exactly once, in ``order`` (kept) or in ``dropped``.
:func:`checked_outcome` raises a :class:`~rerankit.errors.RuleError` naming the rule and the
problem otherwise, so that a buggy rule never loses or repeats a document silently (a
pipeline then keeps the previous stage's order, as for a rule that raises). Both are
exported from :mod:`rerankit.ordering`, where the built-in rules are."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from numbers import Integral
from typing import Any

import numpy as np

from ._words import counted
from .errors import RuleError
from .types import RerankResult

__all__ = ["Outcome", "Rule", "checked_outcome", "takes_query"]

logger = logging.getLogger(__name__)

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


def takes_query(decide: Any) -> bool:
    """Whether a rule's ``decide`` accepts the query: a parameter named ``query`` (not
    positional-only), or ``**kwargs``. A rule written before rules were given the query,
    ``decide(self, items)``, is called as it was. Read once per function (rules run on
    every request)."""
    function = getattr(decide, "__func__", decide)  # a method: its class's function
    try:
        return _takes_query(function)
    except TypeError:  # (not hashable: read each time)
        return _takes_query.__wrapped__(function)


@functools.lru_cache(maxsize=512)
def _takes_query(function: Any) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): as it was
        return False
    return any(
        (p.name == "query" and p.kind is not p.POSITIONAL_ONLY) or p.kind is p.VAR_KEYWORD
        for p in parameters
    )


class Rule:
    """Base of ordering rules: subclasses implement :meth:`decide` over the items, returning
    an :class:`Outcome` that lists each position once, in ``order`` or ``dropped``; anything
    else is a :class:`~rerankit.errors.RuleError` naming the rule (in a pipeline, its stage
    fails and the previous stage's order is kept).

    A rule that needs the query (to pin documents for it) declares it:
    ``def decide(self, items, *, query=None)`` (or ``**context``) is given the query of the
    rerank (a pipeline's, a result's; the ``query=`` of a call on a plain list, else None).
    ``def decide(self, items)`` is called with the items alone, as before.

    ``reorders``: whether the rule may change the order it is given (a rule that only drops
    sets it False); ``orders_by_score``: whether it orders by the scores (MMR), which rules
    leave as they are, so that an earlier rule's reordering is lost: a
    :class:`~rerankit.rerankers.Pipeline` warns when one follows a rule that reorders."""

    name = "rule"
    reorders = True
    orders_by_score = False
    text_field = "text"
    score_field = "rerank_score"

    def decide(self, items: Sequence[Any]) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def outcome(self, items: Sequence[Any], query: str | None = None) -> Outcome:
        """What the rule decides for ``items`` (``decide``, given ``query`` when it takes
        one), checked (:func:`checked_outcome`)."""
        decided = (
            self.decide(items, query=query) if takes_query(self.decide) else self.decide(items)
        )
        return checked_outcome(self.name, decided, len(items))

    def __call__(self, items: Any, *, query: str | None = None) -> Any:
        """Apply the rule to a RerankResult (whose query it reads) or a list (``query``: the
        query a rule that takes one is given), returning the same kind."""
        if isinstance(items, RerankResult):
            return self.apply_result(items)
        items = list(items)
        outcome = self.outcome(items, query)
        if outcome.dropped:
            dropped = counted(len(outcome.dropped), "item")
            logger.warning("%s dropped %s: %s", self.name, dropped, outcome.note)
        for warning in outcome.warnings:
            logger.warning("%s", warning)
        return [items[i] for i in outcome.order]

    def apply_result(self, result: RerankResult) -> RerankResult:
        outcome = self.outcome(result.results, result.query)
        kept = [
            replace(result.results[i], rank=rank) for rank, i in enumerate(outcome.order, start=1)
        ]
        warnings = [*result.warnings, *outcome.warnings]
        if outcome.dropped:  # named by their ids when they have them, else input positions
            gone = [result.results[i] for i in outcome.dropped]
            named = [d.id if all(g.id is not None for g in gone) else d.index for d in gone]
            said = f"{self.name} dropped {counted(len(gone), 'document')} {named}: {outcome.note}"
            warnings.append(said)
        return replace(
            result,
            results=tuple(kept),
            warnings=tuple(warnings),
            dropped=tuple(result.dropped) + tuple(result.results[i].index for i in outcome.dropped),
        )
