"""One name for one thing in ``--help``: a flag shows its value under the same name in
every command that takes it (``--embedding-cache FILE``, not ``FILE`` in one command and
``EMBEDDING_CACHE`` in another), and every field-naming flag calls its value ``FIELD``."""

from __future__ import annotations

import argparse
from collections import defaultdict

import pytest

from rerankit.cli import build_parser, main

#: flags whose value is another thing in another command, so named differently
DIFFERENT_THINGS = {
    "--method": "tune's way of learning, interleave-report's interleaving",
    "--out": "simulate-clicks writes a click log (LOG), the others a file or folder (OUT)",
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _shown_values() -> dict[str, dict[str, list[str]]]:
    """flag -> the name its value has in --help -> the commands showing it so."""
    shown: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.help is argparse.SUPPRESS or not action.option_strings or action.nargs == 0:
                continue
            flag = next(o for o in action.option_strings if o.startswith("--"))
            value = argparse.HelpFormatter(command)._format_args(action, action.dest.upper())
            shown[flag][value].append(command)
    return shown


def test_a_flag_names_its_value_the_same_in_every_command():
    differing = {
        flag: dict(values)
        for flag, values in _shown_values().items()
        if len(values) > 1 and flag not in DIFFERENT_THINGS
    }
    assert not differing, differing


def test_every_field_flag_calls_its_value_field():
    fields = {
        flag: sorted(values) for flag, values in _shown_values().items() if flag.endswith("-field")
    }
    assert {"--text-field", "--id-field", "--score-field", "--title-field"} <= set(fields)
    assert all(values == ["FIELD"] for values in fields.values()), fields


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("eval", "--embedding-cache FILE"),
        ("tune", "--embedding-cache FILE"),
        ("rank", "--embedding-cache FILE"),
        ("tune", "--train-split SPLIT"),
        ("train", "--train-split SPLIT"),
        ("train", "--max-pairs N"),
        ("batch", "--batch-size N"),
        ("precompute", "--batch-size N"),
        ("rank", "--text-field FIELD"),
        ("rank", "--top-k K, -k K keep only the best K"),
        ("batch", "--top-k K, -k K keep only the best K"),
    ],
)
def test_help_shows_the_one_name(command, shown, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert shown in " ".join(capsys.readouterr().out.split())


def test_the_command_list_calls_what_tune_and_train_learn_from_judgments(capsys):
    """Judgments, as tune's and train's lines say; qrels is only their file (qrels/*.tsv)."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "label queries with an LLM judge (judgments for tune and train)" in text
    assert "fit a pipeline to your judgments" in text and "qrels" not in text


def test_a_positional_value_is_named_as_the_flags_name_the_same_thing(capsys):
    """interleave-report's click logs are LOG, as its --clicks LOG (and check's, tune's);
    export's model is MODEL, as docs/cli.md writes `rerankit export MODEL`."""
    shown = {}
    for command in ("interleave-report", "export", "check"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        shown[command] = capsys.readouterr().out.split("\n\n")[0]  # the usage lines
    assert "[--clicks LOG]" in shown["interleave-report"]
    assert "[LOG ...]" in shown["interleave-report"] and "log ..." not in shown["interleave-report"]
    assert shown["export"].split()[-1] == "MODEL"
    assert "[FILE ...]" in shown["check"]
