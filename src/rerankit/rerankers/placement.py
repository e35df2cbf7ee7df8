"""Where a pipeline stage puts documents, against where the previous stage had them: a
stage's order bounded so that no document falls more than a given number of places
(:func:`bounded_order`, a stage's ``max_demotion``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["bounded_order", "check_max_demotion"]


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
