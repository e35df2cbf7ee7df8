"""The parser every ``rerankit`` command is built with: flags spelled out in full (no
prefix matching: ``--out`` is never taken as some ``--output``), and a flag it does not
know refused by that command, with the nearest flag it takes. A usage error is one line,
as every error a command prints (``rerankit rank: error: ...; see rerankit rank --help``),
not argparse's usage block before it."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["CommandParser", "unknown_flags_message"]

#: what other tools (or another name of the same thing) call a flag, and what it is called
#: here: the first of these the command takes is suggested, and none when it takes none
#: (the nearest spelling would name another thing: rank's --output for --output-file)
OTHER_TOOLS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("--top-n", "--topn", "--top_n", "--top_k", "--topk"), ("--top-k",)),
    "--pipeline": ("--reranker",),
    **dict.fromkeys(("--model", "--model-name"), ("--reranker", "--embedding-model")),
    "--pipelines": ("--rerankers", "--reranker"),
    **dict.fromkeys(("--output-file", "--output-dir", "--outdir", "--out-dir"), ("--out",)),
    **dict.fromkeys(("--qrels", "--judgments", "--dataset"), ("--data",)),
    **dict.fromkeys(("--config-file", "--settings-file"), ("--settings",)),
    "--num-candidates": ("--candidates",),
}


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` that takes no abbreviated flag, and, as a
    command's parser (the subparsers of ``rerankit`` are of this class), stops at the first
    argument it does not know, naming the command, with a "did you mean" for a flag:
    argparse leaves those to the top parser, which names neither the command nor a
    suggestion."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        vars(parsed).pop("_spellings_given", None)  # args.one_spelling's, done with
        if extras and not self._has_subcommands():
            self.error(unknown_flags_message(self, extras))
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        """One line on stderr, exit 2: ``rerankit rank: error: MESSAGE; see rerankit rank
        --help`` (argparse printed its whole usage block first)."""
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")

    def _has_subcommands(self) -> bool:
        """Whether this parser dispatches to commands (the root): the command's parser says
        an unknown argument, not the root."""
        return any(isinstance(a, argparse._SubParsersAction) for a in self._actions)


def _shown_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags ``parser`` lists in its help (earlier spellings, hidden, are left
    out, so a suggestion is always the current name)."""
    return [
        option
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--")
    ]


def suggestion(parser: argparse.ArgumentParser, given: str) -> str | None:
    """The flag of ``parser`` nearest to ``given`` (an unknown ``--flag`` or
    ``--flag=value``), or None."""
    flag = given.split("=", 1)[0]
    flags = _shown_flags(parser)
    known = OTHER_TOOLS.get(flag.lower().replace("_", "-")) or OTHER_TOOLS.get(flag.lower())
    if known is not None:
        return next((name for name in known if name in flags), None)
    close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_flags_message(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """``unrecognized arguments: --topk 3 (did you mean --top-k?)``: argparse's words, with
    the nearest flag the command takes for each unknown flag that has one."""
    hints = [
        (flag, near)
        for flag in extras
        if flag.startswith("--") and (near := suggestion(parser, flag)) is not None
    ]
    message = f"unrecognized arguments: {' '.join(extras)}"
    if len(hints) == 1:
        message += f" (did you mean {hints[0][1]}?)"
    elif hints:
        message += " (did you mean " + ", ".join(f"{n} for {f}" for f, n in hints) + "?)"
    return message
