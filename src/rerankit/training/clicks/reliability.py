"""Whether propensities estimated from a click log can be trusted, position by position:
:func:`position_counts` counts what each position rests on (sessions that showed something
there, and clicks there), and :func:`reliability_warning` says plainly where the estimate
is not to be trusted, and what to do.

Two signs, each checked position by position:

* **too few clicks**: a position's estimate is, at heart, its click rate, and a rate
  counted from ``k`` clicks is uncertain by about ``1 / sqrt(k)`` of itself (clicks are
  close to Poisson counts): under :data:`MIN_CLICKS` (25) clicks, by more than a fifth at
  one standard error, and by more than two fifths at two; with none, the estimate is
  whatever EM started from. Position 1 counts too: every other position is relative to it.
* **a rise down the page**: users do not look more often at a position than at the one
  above it, so an estimate higher than the position above is off there, by at least the
  rise (one that shows in the values printed, to 3 decimals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: RandPair (:func:`.propensity.randpair`) never moves the documents at these first positions
PROTECTED = 3

__all__ = ["MIN_CLICKS", "PROTECTED", "position_counts", "position_ranges", "reliability_warning"]

#: a position whose estimate rests on fewer clicks than this is called unreliable: a rate
#: from k clicks is uncertain by about 1/sqrt(k) of itself, more than a fifth under 25
MIN_CLICKS = 25


def position_counts(logs: Mapping[str, Any], depth: int) -> tuple[list[int], list[int]]:
    """``(sessions, clicks)`` by position 1..``depth`` over the query logs
    (:class:`~.sessions.QueryLog`): the sessions that showed a document there, and the
    clicks there."""
    sessions = np.zeros(depth, dtype=np.int64)
    clicks = np.zeros(depth, dtype=np.int64)
    for log in logs.values():
        width = min(depth, log.depth)
        shown = log.shown[:, :width] >= 0
        sessions[:width] += shown.sum(axis=0)
        clicks[:width] += (shown & log.clicked[:, :width]).sum(axis=0)
    return sessions.tolist(), clicks.tolist()


def position_ranges(ps: Sequence[int]) -> str:
    """Positions as ranges: ``2-4, 9``."""
    out: list[list[int]] = []
    for p in ps:
        if out and out[-1][-1] == p - 1:
            out[-1].append(p)
        else:
            out.append([p])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in out)


def reliability_warning(
    values: Sequence[float],
    clicks: Sequence[int],
    *,
    min_clicks: int = MIN_CLICKS,
    measured: Sequence[int] | None = None,
    exploration: Any = None,
) -> str | None:
    """A plain warning naming the positions whose estimate is not to be trusted (fewer
    than ``min_clicks`` clicks there, or higher than the position above), and what to do;
    None when there are none. ``values``: the propensities by position (NaN: never shown,
    not judged); ``clicks``: the clicks at each position (:func:`position_counts`);
    ``measured``: the positions whose ratio to the one above exchanged pairs measured
    (then the advice does not ask for exploration the log already has); ``exploration``:
    the log's :class:`~.exploration.Exploration`, when known (a log with exchanged pairs
    that measured nothing is told so, not asked to turn exploration on)."""
    shown = [p for p, v in enumerate(values, start=1) if math.isfinite(v)]
    few = [p for p in shown if p <= len(clicks) and clicks[p - 1] < min_clicks]
    # a rise counts when it shows in the values printed (3 decimals): "0.053 after 0.053"
    # names none to a reader, and one that small is no error worth a warning
    rising = [
        p
        for p in shown
        if p > 1
        and math.isfinite(values[p - 2])
        and round(values[p - 1], 3) > round(values[p - 2], 3)
    ]
    if not few and not rising:
        return None
    reasons = []
    if few:
        counts = ", ".join(f"{p}: {clicks[p - 1]}" for p in few)
        reasons.append(
            f"fewer than {min_clicks} clicks at position{'s' if len(few) > 1 else ''} "
            f"{position_ranges(few)} ({counts}), and a rate counted from fewer is uncertain "
            "by more than a fifth of itself"
        )
    if rising:
        rises = ", ".join(f"{p}: {values[p - 1]:.3f} after {values[p - 2]:.3f}" for p in rising)
        reasons.append(
            f"the estimate rises down the page at position{'s' if len(rising) > 1 else ''} "
            f"{position_ranges(rising)} ({rises}), which users' attention does not, so it is "
            "off there by at least the rise"
        )
    where = sorted({*few, *rising})
    todo = _what_to_do(min_clicks, measured, exploration)
    return (
        f"propensities not reliable at position{'s' if len(where) > 1 else ''} "
        f"{position_ranges(where)}: {'; '.join(reasons)}. {todo}"
    )


#: how to give propensities measured elsewhere, named in the warning
ELSEWHERE = (
    "give propensities measured elsewhere (rerankit tune --clicks LOG --propensities "
    "1,0.9,0.7,... or a learned.propensities.json; propensities= in Python; docs/clicks.md, "
    '"Give propensities measured elsewhere")'
)


def _what_to_do(min_clicks: int, measured: Sequence[int] | None, exploration: Any) -> str:
    """What to do, for a log without exchanged pairs, or with them at ``measured`` (the
    positions whose ratio to the one above exchanged pairs measured); ``exploration``: the
    log's :class:`~.exploration.Exploration` (None: not known)."""
    more = f"Log more sessions (until every position has {min_clicks} clicks or more)"
    explored = exploration is not None and exploration.sessions > 0
    if not measured and explored and exploration.exchanged:
        told = exploration.too_few()
        return f"{told[:1].upper()}{told[1:]}, or {ELSEWHERE}"
    if not measured and explored:
        return (
            f"{more}, raise [server] explore_pairs ({exploration.sessions} answers were explored "
            f"and none exchanged a pair within the positions read), or {ELSEWHERE}"
        )
    if not measured:
        return (
            f"{more}, turn on exploration ([server] explore: RandPair exchanges pairs below "
            f"the top {PROTECTED}, which measures positions 5 to 10 against the one above), or "
            f"{ELSEWHERE}"
        )
    top = [p for p in range(2, PROTECTED + 2) if p not in measured]
    said = (
        f"{more}, or {ELSEWHERE}. This log already has exchanged pairs (exploration, or two "
        f"pipelines' orders): they measured position{'s' if len(measured) > 1 else ''} "
        f"{position_ranges(measured)} against the one above"
    )
    if not top:
        return said
    if exploration is not None and exploration.moved_top:
        return f"{said}; {exploration.too_few(top)}"
    return (
        f"{said}; RandPair in the service never moves the top {PROTECTED}, so its exploration "
        f"does not measure position{'s' if len(top) > 1 else ''} {position_ranges(top)}: "
        "there only more sessions, or propensities measured elsewhere (randpair(..., "
        "protect=0) in your own front end), help"
    )
