"""A flag's earlier spellings: still accepted, each said on stderr with what the flag is
called now, and refused given together with the current spelling (which one won depended on
their order)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["CurrentSpelling", "OldSpelling", "add_old_spelling", "one_spelling", "say_renamed"]


def say_renamed(old: str, now: str, hint: str = "") -> None:
    """Say on stderr that ``old`` (a flag as given) is now spelled ``now``; ``hint``, where
    the old name could be read as another flag, says what it means."""
    if sys.stderr is not None:
        meaning = f": {hint}" if hint else ""
        print(
            f"rerankit: note: {old} is now spelled {now} (the old spelling still works){meaning}",
            file=sys.stderr,
        )


#: the namespace attribute :func:`one_spelling` keeps, per destination, the spelling given
#: first (taken off by :class:`~rerankit.cli.parser.CommandParser` once a command is parsed)
SPELLINGS_GIVEN = "_spellings_given"


def one_spelling(parser: Any, namespace: Any, action: Any, option_string: Any) -> None:
    """Stop with a usage error (exit 2) when ``action``'s flag was given under another of
    its spellings too (``--config`` and ``--reranker``): which one would win depends on
    their order. The same spelling given again is the flag repeated, taken as usual."""
    seen = namespace.__dict__.setdefault(SPELLINGS_GIVEN, {})
    first_action, first = seen.setdefault(action.dest, (action, option_string))
    if first_action is not action:
        now = getattr(action, "now", None) or getattr(first_action, "now", None)
        parser.error(
            f"{first} and {option_string} are two spellings of one flag: give it once, as {now}"
        )


class OldSpelling(argparse.Action):
    """A flag's earlier spelling, still accepted: it sets what the current spelling sets
    (appending when ``append``) and says on stderr what the flag is called now. Hidden from
    ``--help``, so every flag is listed once. Given with the current spelling, it is a usage
    error (:func:`one_spelling`). ``hint``: what the flag means, said with the note where
    the old name could be read as another flag's (or a function of the parser giving it)."""

    def __init__(
        self,
        option_strings: Any,
        dest: str,
        *,
        now: str,
        append: bool = False,
        hint: str | Callable[[Any], str] = "",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.now, self.append, self.hint = now, append, hint

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        one_spelling(parser, namespace, self, option_string)
        hint = self.hint(parser) if callable(self.hint) else self.hint
        say_renamed(str(option_string), self.now, hint)
        if self.append:
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


class CurrentSpelling(argparse.Action):
    """Mixed into the action of a flag's current spelling by :func:`add_old_spelling`, so
    that it, too, tells :func:`one_spelling` it was given."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        one_spelling(parser, namespace, self, option_string)
        super().__call__(parser, namespace, values, option_string)


_CURRENT: dict[type, type] = {}


def add_old_spelling(parser: Any, *flags: str, dest: str, now: str, **kwargs: Any) -> None:
    """Accept ``flags`` (an earlier spelling of ``now``, which must be added first) for
    ``dest``: see :class:`OldSpelling`. Giving both spellings is a usage error."""
    current = parser._option_string_actions.get(now)
    if current is None or current.dest != dest:
        raise ValueError(f"add {now} (dest {dest!r}) before its old spelling {flags[0]}")
    kind = type(current)
    if not issubclass(kind, CurrentSpelling):
        if kind not in _CURRENT:
            _CURRENT[kind] = type(f"Current{kind.__name__}", (CurrentSpelling, kind), {})
        current.__class__ = _CURRENT[kind]
    parser.add_argument(*flags, dest=dest, action=OldSpelling, now=now, **kwargs)
