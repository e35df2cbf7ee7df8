"""Flags are taken as spelled, never by a prefix (``rank --out`` is not ``--output``), and
one a command does not know is refused by that command, with its usage and the nearest
flag it takes."""

from __future__ import annotations

import argparse

import pytest

from rerankit.cli import build_parser, main

RANK = ["rank", "-q", "vaccine", "-i", "examples/sample.jsonl", "-r", "bm25"]


def usage_error(capsys, argv: list[str]) -> str:
    """What ``rerankit ARGV`` says on stderr: it must be a usage error (exit status 2)."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_rank_out_is_refused_saying_rank_writes_to_standard_output(capsys):
    err = usage_error(capsys, [*RANK, "--out", "ranked.jsonl"])
    assert "rerankit rank: error: --out: rank writes to standard output; redirect it: > FILE" in err
    assert "logit" not in err.splitlines()[-1]  # not taken as --output, the score option


def test_rank_output_given_a_file_name_says_where_the_results_go(capsys):
    err = usage_error(capsys, [*RANK, "--output", "ranked.jsonl"])
    assert "expected logit or sigmoid (a cross-encoder's score), got 'ranked.jsonl'" in err
    assert "> FILE" in err
    assert build_parser().parse_args([*RANK, "--output", "sigmoid"]).output == "sigmoid"


@pytest.mark.parametrize("value", ["softmax", "probs"])
def test_rank_output_given_another_activation_says_what_the_outputs_are(capsys, value):
    """``--output softmax`` is an activation, not a file: the error says what logit and
    sigmoid are, and that a two-label model's softmax is sigmoid, with no advice to
    redirect the output to a file."""
    err = usage_error(capsys, [*RANK, "--output", value])
    assert f"expected logit or sigmoid (a cross-encoder's score), got {value!r}: logit is" in err
    assert "for a two-label model is exactly the softmax probability of the relevant" in err
    assert f"for {value!r}, use sigmoid" in err
    assert "> FILE" not in err and "redirect" not in err


def _parsers() -> list[argparse.ArgumentParser]:
    root = build_parser()
    commands = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    return [root, *commands[0].choices.values()]


def test_no_command_takes_a_flag_by_a_prefix_of_it(capsys):
    assert all(not parser.allow_abbrev for parser in _parsers())
    err = usage_error(capsys, [*RANK, "--top", "3"])  # was taken as --top-k 3
    assert "unrecognized arguments: --top 3 (did you mean --top-k?)" in err
    err = usage_error(capsys, ["eval", "--data", "d", "--cand", "5"])
    assert err.splitlines()[-1].startswith("rerankit eval: error: unrecognized arguments: --cand")


@pytest.mark.parametrize(
    ("flag", "near"),
    [("--topk", "--top-k"), ("--top-n", "--top-k"), ("--topn", "--top-k"), ("--top-K", "--top-k")],
)
def test_an_unknown_flag_is_named_by_its_command_with_the_nearest_flag(capsys, flag, near):
    err = usage_error(capsys, [*RANK, flag, "3"])
    assert err == (  # one line, the command's (not the root's), no usage block
        f"rerankit rank: error: unrecognized arguments: {flag} 3 (did you mean {near}?); "
        "see rerankit rank --help\n"
    )


def test_a_flag_with_no_near_one_is_named_without_a_guess(capsys):
    err = usage_error(capsys, ["eval", "--data", "d", "--zzzzzz"])
    assert (
        err == "rerankit eval: error: unrecognized arguments: --zzzzzz; see rerankit eval --help\n"
    )


def test_several_unknown_flags_each_get_their_nearest(capsys):
    err = usage_error(capsys, [*RANK, "--topk", "3", "--detials"])
    assert "(did you mean --top-k for --topk, --details for --detials?)" in err


def test_a_suggestion_is_a_current_spelling_never_a_hidden_old_one(capsys):
    err = usage_error(capsys, ["batch", "-i", "x", "-o", "y", "--outputt"])  # old: --output
    assert err.splitlines()[-1].endswith("(did you mean --out?); see rerankit batch --help")


@pytest.mark.parametrize(
    "argv",
    [["rank"], ["serve", "--port", "0"], ["nosuch"], ["rank", "-q", "q", "--format", "csv"]],
)
def test_every_usage_error_is_one_line_naming_the_command_and_its_help(capsys, argv):
    """cli.md says every error is one line; argparse printed its usage block first."""
    err = usage_error(capsys, argv)
    command = "rerankit" if argv[0] == "nosuch" else f"rerankit {argv[0]}"
    assert len(err.splitlines()) == 1 and "usage:" not in err
    assert err.startswith(f"{command}: error: ") and err.endswith(f"; see {command} --help\n")


def test_the_cli_page_shows_the_unknown_flag_error_as_printed(capsys, tmp_path, monkeypatch):
    """docs/cli.md's sample left out the ``; see rerankit rank --help`` the CLI prints."""
    import re
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    pairs = re.findall(r"^\$ rerankit (.*)\n(.*unrecognized arguments.*)\n", page, re.M)
    assert pairs
    monkeypatch.chdir(tmp_path)
    for command, shown in pairs:
        assert usage_error(capsys, shlex.split(command)) == shown + "\n"
