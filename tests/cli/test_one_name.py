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


def _one_judged_split(folder):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "solar power"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "solar"}\n')
    (folder / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    return folder


def test_fine_tune_names_the_training_split_train_split_as_tune_does(tmp_path):
    """fine_tune(train_split=), as tune(train_split=) and `train --train-split`; split=, its
    earlier name, still works and gives the same options and the same outcome."""
    from dataclasses import fields

    from rerankit.errors import InputError
    from rerankit.training import FineTuneOptions, TuneOptions, fine_tune

    names = {f.name for f in fields(FineTuneOptions)}
    assert "train_split" in names and "split" not in names
    assert "train_split" in {f.name for f in fields(TuneOptions)}
    assert FineTuneOptions(split="dev") == FineTuneOptions(train_split="dev")
    assert FineTuneOptions(split="dev").split == "dev"  # read by its earlier name too
    with pytest.raises(TypeError, match="give train_split= or its earlier name split="):
        FineTuneOptions(train_split="a", split="b")
    folder = _one_judged_split(tmp_path / "data")
    said = {}
    for keyword in ("train_split", "split"):
        with pytest.raises(InputError) as refused:
            fine_tune(folder, tmp_path / keyword, **{keyword: "train"})
        said[keyword] = str(refused.value)
    assert said["train_split"] == said["split"]
    assert "train_split='test:odd' (--train-split)" in said["split"]
    with pytest.raises(InputError, match=r"train_split='test' \(--train-split\): train on"):
        FineTuneOptions(split="test").check()


@pytest.mark.parametrize("flag", ["--train-split", "--split"])
def test_train_passes_its_split_to_fine_tune_by_that_name(flag):
    from rerankit.cli import build_parser
    from rerankit.training import FineTuneOptions

    args = build_parser().parse_args(["train", "embedding", "--data", "d", "--out", "o", flag, "x"])
    assert FineTuneOptions.from_namespace(args).train_split == "x"


def test_the_earlier_python_names_the_cli_page_lists_are_taken(tmp_path):
    """docs/cli.md's paragraph on Python's earlier names: each is taken, as its current
    name is, and given with it is refused."""
    from pathlib import Path

    from rerankit.errors import InputError
    from rerankit.training import fine_tune, tune

    page = " ".join((Path(__file__).parents[2] / "docs" / "cli.md").read_text().split())
    for said in (
        "`k=` for `candidates=` (`tune`, `fine_tune`)",
        "`split=` for `train_split=` (`fine_tune`)",
        "`pipeline=` and `output=` for `reranker=` and `out=` (`rerankit.batch.run_batch`,",
    ):
        assert said in page, said
    folder = _one_judged_split(tmp_path / "data")
    said = {}
    for keyword in ("candidates", "k"):
        with pytest.raises(InputError) as refused:
            fine_tune(folder, tmp_path / keyword, **{keyword: 5})
        said[keyword] = str(refused.value)
    assert said["candidates"] == said["k"]
    both = "give candidates= or its earlier name k="
    with pytest.raises(TypeError, match=both):
        fine_tune(folder, tmp_path / "both", candidates=5, k=5)
    with pytest.raises(TypeError, match=both):
        tune(folder, candidates=5, k=5)


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        ("rank -q q --model m", "--reranker"),  # rank names a model as its reranker
        ("rank -q q --pipeline p.toml", "--reranker"),
        ("batch -i x -o y --pipeline p.toml", "--reranker"),
        ("tune --data d --model m", "--embedding-model"),
        ("eval --data d --pipelines a,b", "--rerankers"),
        ("eval --data d --qrels q", "--data"),
        ("eval --data d --judgments q", "--data"),
        ("eval --data d --output_dir o", "--out"),
        ("serve --config-file s.toml", "--settings"),
        ("eval --data d --num-candidates 5", "--candidates"),
        ("rank -q q --top_n 3", "--top-k"),
    ],
)
def test_another_name_of_a_flag_is_answered_with_this_one(argv, meant, capsys):
    """A name other tools (or rerankit's other words) use for the same thing is refused
    with the flag rerankit calls it, not the nearest spelling (`--model` was answered
    "did you mean --details?", `--qrels` "--workers", `--pipeline` "--deadline")."""
    with pytest.raises(SystemExit):
        main(argv.split())
    err = capsys.readouterr().err
    assert f"(did you mean {meant}?)" in err, err


@pytest.mark.parametrize("argv", ["rank -q q --output-file o.jsonl", "export m --model m"])
def test_another_name_the_command_has_no_flag_for_gets_no_misleading_guess(argv, capsys):
    """rank writes to stdout: --output-file is not its --output (a cross-encoder's score)."""
    with pytest.raises(SystemExit):
        main(argv.split())
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and "did you mean" not in err, err


def test_the_cli_page_table_of_other_tools_names_is_the_parsers():
    import re
    from pathlib import Path

    from rerankit.cli.parser import OTHER_TOOLS

    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = page.partition("| another tool's name | here |\n|---|---|\n")[2].partition("\n\n")[0]
    rows = [row.split(" | ") for row in table.splitlines()]
    assert len(rows) >= 5
    for theirs, ours in rows:
        for flag in re.findall(r"`(--[\w-]+)`", theirs):
            assert OTHER_TOOLS[flag][0] == re.findall(r"`(--[\w-]+)`", ours)[0], flag
