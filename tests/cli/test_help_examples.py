"""Every command's ``--help`` ends with examples, and each example parses with the real
parser (its argument list only: the files it names are the reader's)."""

from __future__ import annotations

import argparse
import shlex

import pytest

from rerankit.cli import build_parser

EVERYDAY = ("rank", "batch", "eval", "tune", "serve", "export", "label", "train")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    root = build_parser()
    (action,) = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _examples(parser: argparse.ArgumentParser) -> list[list[str]]:
    """The argument lists of the ``rerankit ...`` lines of ``parser``'s epilog."""
    lines = [line.strip() for line in (parser.epilog or "").splitlines()]
    return [shlex.split(line, comments=True)[1:] for line in lines if line.startswith("rerankit ")]


def _cases() -> list[tuple[str, list[str]]]:
    cases = [("rerankit", argv) for argv in _examples(build_parser())]
    for name, sub in _subcommands().items():
        cases += [(name, argv) for argv in _examples(sub)]
    return cases


@pytest.mark.parametrize("command", EVERYDAY)
def test_every_everyday_command_shows_examples_in_its_help(command, capsys):
    _shows_examples(command)


def test_every_command_shows_examples_in_its_help():
    """Not only the everyday ones: each subcommand's help ends with examples of itself."""
    missing = []
    for command in _subcommands():
        try:
            _shows_examples(command)
        except AssertionError:
            missing.append(command)
    assert not missing, f"no examples of themselves in --help: {missing}"


def _shows_examples(command: str) -> None:
    sub = _subcommands()[command]
    assert len(_examples(sub)) >= 2
    assert any(argv[0] == command for argv in _examples(sub))
    help_text = sub.format_help()
    assert help_text.rstrip().splitlines()[-1].startswith("  rerankit ")  # one a line
    assert "\nexamples:\n" in help_text


@pytest.mark.parametrize(
    ("where", "argv"), _cases(), ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_help_example_parses(where, argv, capsys):
    args = build_parser().parse_args(argv)  # a usage error exits 2 and fails the test
    assert args.command == argv[0] and callable(args.func)
    assert "note:" not in capsys.readouterr().err  # no earlier spelling among the examples
