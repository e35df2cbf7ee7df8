"""What exploration a click log holds, counted from its impressions' ``explore`` records
(``{"swapped": [p, ...]}``, as the service's RandPair or :func:`~.propensity.randpair`
writes them): how many answers were explored, how many of them exchanged a pair, the
clicks that landed on an exchanged pair, and the first position moved (which tells the
``protect`` the exploration used). The propensity messages read it, so that a log with
exploration is not told to turn exploration on, and a log explored from the top is not
told that exploration never moves the top."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .reader import Session
from .reliability import PROTECTED, position_ranges

__all__ = ["Exploration", "count_exploration"]


@dataclass(frozen=True)
class Exploration:
    """A log's exploration: ``sessions`` explored (an ``explore`` record, swaps or not),
    ``exchanged`` of them with at least one pair exchanged, ``clicks`` on the documents of
    exchanged pairs (within the positions read), ``lowest`` the first position an exchange
    started at (1-based; None: no exchange)."""

    sessions: int = 0
    exchanged: int = 0
    clicks: int = 0
    lowest: int | None = None

    @property
    def moved_top(self) -> bool:
        """Whether the log's exploration moved positions RandPair in the service keeps
        (the top :data:`~.reliability.PROTECTED`): a front end's ``randpair(..., protect=0)``."""
        return self.lowest is not None and self.lowest <= PROTECTED

    def describe(self) -> str:
        """``33 explored, 15 with exchanged pairs`` (empty when none was explored)."""
        if not self.sessions:
            return ""
        return f"{self.sessions} explored, {self.exchanged} with exchanged pairs"

    def too_few(self, positions: Sequence[int] = ()) -> str:
        """That the log's exchanged pairs were too few clicked to measure ``positions``
        (all of them when empty)."""
        answers = f"{self.exchanged} answer{'' if self.exchanged == 1 else 's'}"
        clicks = f"{self.clicks} click{'' if self.clicks == 1 else 's'}"
        which = (
            f"position{'s' if len(positions) > 1 else ''} {position_ranges(positions)}"
            if positions
            else "a position"
        )
        return (
            f"this log has exploration: {answers} had exchanged pairs (the highest at "
            f"positions {self.lowest}-{(self.lowest or 0) + 1}), {clicks} on them: too few "
            f"to measure {which}; log more sessions"
        )


def count_exploration(sessions: Iterable[Session], depth: int) -> Exploration:
    """The exploration in ``sessions`` (see :class:`Exploration`); pairs that start at or
    below position ``depth`` are not counted (learning does not read them)."""
    explored = exchanged = clicks = 0
    lowest: int | None = None
    for s in sessions:
        record = s.impression.explore
        if record is None:
            continue
        explored += 1
        swapped = [
            int(p) for p in (record.get("swapped") or ()) if isinstance(p, int) and 1 <= p < depth
        ]
        if not swapped:
            continue
        exchanged += 1
        lowest = min(swapped) if lowest is None else min(lowest, *swapped)
        shown = s.impression.shown
        at = {q for p in swapped for q in (p - 1, p) if q < len(shown)}
        clicks += sum(1 for q in at if shown[q] in s.clicks)
    return Exploration(explored, exchanged, clicks, lowest)
