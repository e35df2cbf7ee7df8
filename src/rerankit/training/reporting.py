"""How a learning function says what it does while it works: the library never prints, so
:func:`~rerankit.training.tune` and :func:`~rerankit.training.fine_tune` hand each line to
a :class:`Reporter` (the command line's prints them; by default nothing is shown) and
return the same facts in their result."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reporter", "quiet"]


def _nothing(line: str) -> None:
    return None


def _no_bar(label: str) -> Callable[[Iterable[Any]], Iterable[Any]]:
    return lambda items: items


@dataclass
class Reporter:
    """Where a learning function reports: ``say`` gets each line of its account (what it
    read, the options compared, the verdict, the learning curve; ``rerankit tune`` prints
    them on stdout), ``note`` each side remark (a warning about the data, how long models
    took to load, the start of each long step; printed on stderr), and ``progress(label)``
    wraps a loop over queries (a progress bar). ``lines`` keeps every line said, in
    order."""

    say_to: Callable[[str], None] = _nothing
    note: Callable[[str], None] = _nothing
    progress: Callable[[str], Callable[[Iterable[Any]], Iterable[Any]]] = _no_bar
    lines: list[str] = field(default_factory=list)

    def say(self, text: str = "") -> None:
        """One part of the account (it may hold several lines)."""
        self.lines += text.split("\n")
        self.say_to(text)


def quiet(reporter: Reporter | None) -> Reporter:
    """``reporter``, or one that shows nothing (but still keeps the lines)."""
    return reporter if reporter is not None else Reporter()
