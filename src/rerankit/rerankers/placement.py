"""Where a pipeline stage puts documents, against where the previous stage had them: a
stage's order bounded so that no document falls more than a given number of places
(:func:`bounded_order`, a stage's ``max_demotion``), which documents a rule moved
(:func:`moved`, the ``ranked_by`` of each document), and the warnings of a pipeline whose
later stages undo a rule's order (:func:`order_warnings`), and where a rule that failed
raised (:func:`raised_in_rule`)."""

from __future__ import annotations

import inspect
import traceback
from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RuleError
from ..ordering import Rule

__all__ = [
    "bounded_order",
    "check_max_demotion",
    "moved",
    "order_warnings",
    "placing",
    "raised_in_rule",
]

#: rerankit's own source folder: a frame there is none of a rule's own code
_OWN = Path(__file__).resolve().parents[1]


def check_max_demotion(value: object) -> int | None:
    """``value`` when it is None or an integer >= 0, else a ``ValueError`` saying what it
    must be."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            "must be an integer >= 0 (how many places below its place in the previous "
            f"stage's order a document may end) or absent, got {value!r}"
        )
    return value


def bounded_order(previous: Sequence[int], proposed: Sequence[int], limit: int) -> list[int]:
    """``proposed`` (a new order of the documents of ``previous``), changed as little as
    needed so that no document ends more than ``limit`` places below its place in
    ``previous``: each place takes the proposed order's next document, unless a document
    would otherwise fall past its bound there, which then takes it. An order within the
    bound comes back as it is; ``limit=0`` gives ``previous``."""
    if sorted(previous) != sorted(proposed):
        raise ValueError("proposed must hold the documents of previous, each once")
    placed: set[int] = set()
    out: list[int] = []
    due = nxt = 0  # the earliest unplaced document of previous; the proposed order's next
    for at in range(len(proposed)):
        while previous[due] in placed:
            due += 1
        if due + limit <= at:  # its last allowed place: it goes here
            pick = previous[due]
        else:
            while proposed[nxt] in placed:
                nxt += 1
            pick = proposed[nxt]
        placed.add(pick)
        out.append(pick)
    return out


def _reads_order(step: Any) -> bool:
    """Whether a scoring stage reads the order it is given (a fusion of ``position``: the
    previous order is one of its signals, weighed, not lost)."""
    scorers = step.scorers() if hasattr(step, "scorers") else ()
    return any(getattr(scorer, "reads_order", False) for scorer in scorers)


def order_warnings(stages: Sequence[Any]) -> list[str]:
    """What a pipeline of ``stages`` (each with a ``step`` and a ``name``) warns of when
    built: a rule that orders by the scores (MMR) after a rule that reorders (rules leave
    the scores as they are, so the earlier rule's order is lost); and a rule that reorders
    followed by a scoring stage that sorts by its own scores (an LLM judge after a pin), so
    that the rule's order is replaced, unless the same kind of rule runs again after that
    stage or the stage reads the order it is given (``position``)."""
    warnings = []
    before = None  # the last rule that reordered since the last scoring stage
    setting: list[tuple[str, set[type]]] = []  # every rule that reordered since then
    for k, stage in enumerate(stages):
        step = stage.step
        if not isinstance(step, Rule):
            again = {type(s.step) for s in stages[k + 1 :] if isinstance(s.step, Rule)}
            lost = [name for name, kinds in setting if not kinds <= again]
            if lost and not _reads_order(step):
                named = ", ".join(repr(n) for n in lost)
                many = len(lost) > 1
                warnings.append(
                    f"rule stage{'s' if many else ''} {named} set{'' if many else 's'} "
                    f"an order that scoring stage {stage.name!r} after it replaces with its own "
                    f"(it sorts by its scores); a rule before it still decides which documents "
                    f"a keep lets through, but to keep the rule's order in the answer, repeat "
                    f"the rule after {stage.name!r} (pin before the cut, and again after the "
                    "judge)"
                )
            before, setting = None, _ending_rules(stage)  # a scoring stage gives new scores
            continue
        if step.orders_by_score and before is not None:
            warnings.append(
                f"rule stage {stage.name!r} orders by the scores, which rule stage "
                f"{before.name!r} left as they were, so its order is lost; put {stage.name!r} "
                f"before {before.name!r} (e.g. deduplicate, mmr, then a cap)"
            )
        if step.reorders:
            before = stage
            setting.append((stage.name, {type(step)}))
    return warnings


def _ending_rules(stage: Any) -> list[tuple[str, set[type]]]:
    """The rules that reorder after the last scoring stage of a pipeline that is ``stage``'s
    step (a registered pipeline ending in a cap), named ``stage/rule``: a later scoring stage
    replaces their order as it would a rule stage's."""
    ending: list[tuple[str, set[type]]] = []
    for inner in reversed(getattr(stage.step, "stages", None) or ()):
        if not isinstance(inner.step, Rule):
            break
        if inner.step.reorders:
            ending.insert(0, (f"{stage.name}/{inner.name}", {type(inner.step)}))
    return ending


def moved(previous: Sequence[int], new: Sequence[int]) -> set[int]:
    """The documents ``new`` (a new order of those of ``previous``) moved: the others are the
    most documents it left in ``previous``'s order among themselves (a longest common
    subsequence). A pin moves the pinned document, not the ones it passes; a bury, the
    buried one; an order kept moves none."""
    where = {doc: at for at, doc in enumerate(previous)}
    places = [where[doc] for doc in new]
    tails: list[int] = []  # the smallest last place of a kept run of each length
    ends: list[int] = []  # where in ``new`` that run ends
    before = [-1] * len(new)  # the run's previous member, for each member
    for i, place in enumerate(places):
        j = bisect_left(tails, place)
        before[i] = ends[j - 1] if j else -1
        if j == len(tails):
            tails.append(place)
            ends.append(i)
        else:
            tails[j], ends[j] = place, i
    kept: set[int] = set()
    i = ends[-1] if ends else -1
    while i >= 0:
        kept.add(new[i])
        i = before[i]
    return {doc for doc in new if doc not in kept}


def placing(
    stage: str,
    is_rule: bool,
    previous: Sequence[int],
    new: Sequence[int],
    marks: tuple[list[str | None], list[str | None]],
) -> None:
    """Record, in ``marks`` (the stage that last scored each document, and the one that
    decided its place: its ``ranked_by``), what ``stage`` did: a scoring stage placed each
    document it scored; a rule, each document it moved out of ``previous``'s order
    (:func:`moved`); the others keep the stage that placed them before."""
    last, placed = marks
    if is_rule:
        for doc in moved(previous, new):
            placed[doc] = stage
        return
    for doc in new:
        if last[doc] == stage:
            placed[doc] = stage


def raised_in_rule(exc: BaseException, rule: Any) -> str:
    """Where ``rule`` raised ``exc``, for the warning of its failed stage (``, raised at
    rules.py:25 in decide: a bug in the rule or a document it cannot read``): the
    innermost frame in the rule's own file, else the innermost outside rerankit; ``""`` for
    a :class:`~rerankit.errors.RuleError` (rerankit's check of its outcome, which says what
    was wrong) or where no frame is found."""
    if isinstance(exc, RuleError):
        return ""
    try:
        own = Path(inspect.getfile(type(rule))).resolve()
    except (TypeError, OSError):
        own = None
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if own is not None and Path(f.filename).resolve() == own]
    outside = [f for f in frames if _OWN not in Path(f.filename).resolve().parents]
    found = (mine or outside or [None])[-1]
    if found is None:
        return ""
    return (
        f", raised at {Path(found.filename).name}:{found.lineno} in {found.name}: a bug in "
        "the rule or a document it cannot read"
    )
