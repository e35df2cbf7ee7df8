"""A flag given in both its old and its current spelling is a usage error (exit 2, naming
both), in every command that keeps an old spelling: which of the two would win depended on
their order (``rank --reranker jaccard --config bm25.toml`` ranked with bm25.toml). The same
spelling given twice is the flag repeated, as before (``eval --rerankers`` joins)."""

from __future__ import annotations

import re

import pytest

from rerankit.cli import build_parser

LABEL = "label --data d --judge j --out o"
TRAIN = "train embedding --data d --out o"
SIM = "simulate-clicks --data d --out o"

#: (the command, the flag in its current spelling, the same flag in its old one)
PAIRS = [
    ("rank -q q", "--reranker a.toml", "--config b.toml"),
    ("rank -q q", "-r a.toml", "-c b.toml"),
    ("rank -q q", "--reranker a.toml", "-c b.toml"),
    ("batch -i x", "--out y.jsonl", "--output z.jsonl"),
    ("batch -i x -o y", "--reranker a.toml", "--config b.toml"),
    ("batch -i x -o y", "-r a.toml", "-c b.toml"),
    ("batch -i x -o y", "--candidates 7", "--k 8"),
    ("batch --data d -o y", "--first-stage r.trec", "--run s.trec"),
    ("serve", "--settings a.toml", "--config b.toml"),
    ("serve", "--settings a.toml", "-c b.toml"),
    ("eval --data d", "--candidates 10", "--k 20"),
    ("eval --data d", "--rerankers bm25", "--config b.toml"),
    ("tune --data d", "--candidates 10", "--k 20"),
    (LABEL, "--max-queries 3", "--queries 5"),
    (LABEL, "--candidates 3", "--k 5"),
    (TRAIN, "--candidates 9", "--k 8"),
    (TRAIN, "--train-split a", "--split b"),
    (SIM, "--train-split a", "--split b"),
    (SIM, "--explore-pairs 0.1", "--explore 0.2"),
]


@pytest.mark.parametrize(("command", "new", "old"), PAIRS)
@pytest.mark.parametrize("old_first", [False, True], ids=["new-then-old", "old-then-new"])
def test_both_spellings_of_one_flag_are_a_usage_error(command, new, old, old_first, capsys):
    flags = [*old.split(), *new.split()] if old_first else [*new.split(), *old.split()]
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*command.split(), *flags])
    assert stop.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the old spelling's note, if first
    name = command.split()[0]
    assert err.startswith(f"rerankit {name}: error: ") and f"see rerankit {name} --help" in err
    new_flag, old_flag = new.split()[0], old.split()[0]
    named = set(re.findall(r"-[-\w]+", err.partition(": error: ")[2]))
    assert {new_flag, old_flag} <= named, err


@pytest.mark.parametrize(("command", "new", "old"), PAIRS)
def test_each_spelling_alone_still_parses(command, new, old):
    for flags in (new, old):
        build_parser().parse_args([*command.split(), *flags.split()])


def test_the_same_spelling_repeated_is_taken_as_before():
    parser = build_parser()
    for flag in ("--rerankers", "--config"):  # eval joins the lists, in either spelling
        args = parser.parse_args(["eval", "--data", "d", flag, "a.toml", flag, "bm25"])
        assert args.rerankers == "a.toml,bm25"
    # a single-valued flag repeated: the last one, as argparse always took it
    assert parser.parse_args(["rank", "-q", "q", "-r", "a", "--reranker", "b"]).reranker == "b"
    assert parser.parse_args(["rank", "-q", "q", "-c", "a", "--config", "b"]).reranker == "b"


def test_the_spellings_given_are_not_left_on_the_parsed_flags():
    args = build_parser().parse_args(["rank", "-q", "q", "--config", "a.toml"])
    assert not [name for name in vars(args) if "spelling" in name]
