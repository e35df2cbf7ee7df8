"""One spelling for every name and flag, and the earlier spellings still accepted: names
are the same with ``-`` or ``_`` everywhere (registry, pipeline files, the command line)
and listed once; an old flag sets what its new spelling sets and says what it is called
now; ``--help`` lists each flag once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rerankit import registry
from rerankit.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"


@pytest.mark.parametrize(
    ("kind", "one", "other"),
    [
        ("scorer", "cross_encoder", "cross-encoder"),
        ("scorer", "causal_lm", "causal-lm"),
        ("reranker", "cross_encoder", "cross-encoder"),
        ("reranker", "hybrid-relative", "hybrid_relative"),
        ("rule", "min_score", "min-score"),
    ],
)
def test_a_name_is_the_same_with_a_hyphen_or_an_underscore(kind, one, other):
    assert registry.lookup(kind, one) is registry.lookup(kind, other)
    assert registry.canonical(kind, other) == registry.lookup(kind, one).name
    assert registry.available(kind).count(registry.canonical(kind, one)) == 1  # listed once
    assert registry.canonical(kind, "no-such-name") is None


def test_both_spellings_build_the_same_scorer_in_a_pipeline_file(tmp_path):
    import rerankit
    from rerankit.scorers import CrossEncoderScorer

    for spelling in ("cross_encoder", "cross-encoder"):
        path = tmp_path / f"{spelling}.toml"
        path.write_text(f'[scorer]\ntype = "{spelling}"\nmodel = "some/model"\n')
        (scorer,) = rerankit.load(path).scorers()
        assert isinstance(scorer, CrossEncoderScorer) and scorer.model_id == "some/model"
    assert rerankit.load("hybrid_relative") is rerankit.load("hybrid-relative")  # shared once


def test_rerankers_lists_every_name_once_and_explains_models_and_files(capsys):
    assert main(["rerankers"]) == 0
    out = capsys.readouterr().out
    table, _, footer = out.partition("\n\n")
    names = [line.split()[0] for line in table.splitlines()[1:]]
    assert names == sorted(set(names)) and {"cross-encoder", "causal-lm", "hybrid"} <= set(names)
    # one spelling for reranker names, as the pages write them (hybrid-relative, cross-encoder);
    # the other still works (test_every_registered_name_works_with_either_separator)
    assert not [n for n in names if "_" in n]
    assert "cross-encoder/ms-marco-MiniLM-L6-v2" in footer and "pipeline file" in footer
    assert "Reranker names are spelled with -" in footer and "pipeline\nfile with _" in footer
    hybrid = next(line for line in table.splitlines() if line.startswith("hybrid "))
    assert "term proximity" in hybrid and "first-stage score instead" not in hybrid
    # a model reranker says how another model is named (rank has no --model): the reranker
    # is the model's hub id or folder, as the footer's "a model" says
    for name in ("cross-encoder", "causal-lm"):
        line = next(row for row in table.splitlines() if row.startswith(f"{name} "))
        assert "name its hub id or folder as the reranker" in line
        assert "unless a model is named" not in line
    assert "a model           a Hugging Face hub id or a model folder" in footer


def _parsed(*argv: str) -> dict:
    return vars(build_parser().parse_args(list(argv)))


LABEL = "label --data d --judge j --out o"
TRAIN = "train embedding --data d --out o"
SIM = "simulate-clicks --data d --out o"


@pytest.mark.parametrize(
    ("new", "old", "dest"),
    [
        ("batch -i x --out y.jsonl", "batch -i x --output y.jsonl", "out"),
        ("batch -i x -o y --candidates 7", "batch -i x -o y --k 7", "candidates"),
        ("rank -q q --reranker p.toml", "rank -q q --config p.toml", "reranker"),
        ("rank -q q -r p.toml", "rank -q q -c p.toml", "reranker"),
        ("batch -i x -o y -r p.toml", "batch -i x -o y -c p.toml", "reranker"),
        ("serve --settings s.toml", "serve --config s.toml", "settings"),
        ("serve --settings s.toml", "serve -c s.toml", "settings"),
        (f"{LABEL} --max-queries 5", f"{LABEL} --queries 5", "max_queries"),
        (f"{LABEL} --candidates 5", f"{LABEL} --k 5", "candidates"),
        ("eval --data d --candidates 20", "eval --data d --k 20", "candidates"),
        ("tune --data d --candidates 20", "tune --data d --k 20", "candidates"),
        (f"{TRAIN} --candidates 9", f"{TRAIN} --k 9", "candidates"),
        ("train cross_encoder --data d --out o", "train cross-encoder --data d --out o", "what"),
        ("export m --out o --kind cross_encoder", "export m --out o --kind cross-encoder", "kind"),
        (
            "batch --data d -o y --first-stage r.trec",
            "batch --data d -o y --run r.trec",
            "first_stage",
        ),
        ("batch -i d -o y --first-stage r.trec", "batch -i d -o y --run r.trec", "first_stage"),
        (f"{TRAIN} --train-split dev", f"{TRAIN} --split dev", "train_split"),
        (f"{SIM} --train-split dev", f"{SIM} --split dev", "split"),
    ],
)
def test_an_old_spelling_sets_what_the_new_one_sets(new, old, dest):
    assert _parsed(*new.split()) == _parsed(*old.split())
    assert _parsed(*new.split())[dest] not in (None, 100)  # the value given, not a default


def test_an_old_flag_says_what_it_is_called_now(capsys):
    build_parser().parse_args(["serve", "--config", "s.toml"])
    assert "--config is now spelled --settings" in capsys.readouterr().err
    build_parser().parse_args(["serve", "--settings", "s.toml"])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "means"),
    [
        ("eval --data d --k 5", "a metric's cutoff is --metrics ndcg@5"),
        ("tune --data d --k 5", "a metric's cutoff is --metrics ndcg@5"),
        ("batch -i x -o y --k 5", "candidates each query gets, not a metric's cutoff"),
        (f"{LABEL} --k 5", "candidates are judged per query"),
    ],
)
def test_old_k_says_it_counts_candidates_not_a_cutoff(capsys, argv, means):
    # `--k 5` reads like nDCG@5: the note says what it sets
    assert build_parser().parse_args(argv.split()).candidates == 5
    err = capsys.readouterr().err
    assert "--k is now spelled --candidates" in err and means in err


def test_eval_config_is_rerankers_spelled_the_old_way():
    for flag in ("--config", "--rerankers"):
        assert _parsed("eval", "--data", "d", flag, "bm25")["rerankers"] == "bm25"
        twice = _parsed("eval", "--data", "d", flag, "a.toml", flag, "bm25,b.toml")
        assert twice["rerankers"] == "a.toml,bm25,b.toml"  # repeated: the lists joined
    # the two spellings together: refused (tests/cli/test_both_spellings.py)
    assert _parsed("eval", "--data", "d")["rerankers"] is None  # the default list


MINI = ROOT / "examples" / "scifact-mini"


@pytest.mark.parametrize("given", ["bm25", "FILE", "bm25,FILE"])
def test_eval_gives_the_same_table_with_either_spelling(tmp_path, capsys, given):
    pipeline = tmp_path / "lexical.toml"
    pipeline.write_text('name = "lexical"\n[scorer]\ntype = "bm25"\n')
    names = given.replace("FILE", str(pipeline))
    tables = {}
    for flag in ("--rerankers", "--config"):
        out = tmp_path / flag.strip("-")
        argv = ["eval", "--data", str(MINI), flag, names, "--candidates", "10", "--no-progress"]
        assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
        capsys.readouterr()
        results = json.loads((out / "results.json").read_text())["results"]
        tables[flag] = {r["pipeline"]: r["ndcg@10"] for r in results}
    assert tables["--config"] == tables["--rerankers"]
    expected = {"first stage", *(["bm25"] if "bm25" in given else [])}
    expected |= {"lexical"} if "FILE" in given else set()
    assert set(tables["--config"]) == expected  # no default rerankers added


@pytest.mark.parametrize("command", ["rank", "batch", "serve", "eval", "tune", "label", "train"])
def test_help_lists_each_flag_once_in_its_current_spelling(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    # rank's --output is a cross-encoder's output (logit or sigmoid, as output= in Python),
    # not the earlier spelling of --out
    text = text.replace("--output {logit,sigmoid}", "") if command == "rank" else text
    for old in ("--output", "--config", "--queries ", "--k ", "--run "):
        assert old not in text, f"{command} --help shows {old.strip()}"
    if command == "train":  # --split is batch's, eval's and label's test split, tune's --test-split
        assert "--train-split SPLIT" in text and "--split " not in text


def test_batch_writes_the_same_with_either_spelling(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"query": "vaccines", "candidates": ["vaccines train", "stock markets"]}) + "\n"
    )
    out = {}
    for flag in ("--out", "--output"):
        target = tmp_path / f"{flag.strip('-')}.jsonl"
        assert main(["batch", "-i", str(rows), flag, str(target), "-r", "bm25"]) == 0
        out[flag] = [
            [r["index"] for r in json.loads(line)["results"]]
            for line in target.read_text().splitlines()
        ]
    assert out["--out"] == out["--output"] == [[0, 1]]
    assert "--output is now spelled --out" in capsys.readouterr().err


def test_batch_reads_a_beir_folder_the_same_with_either_spelling(tmp_path, synthetic, capsys):
    folder = synthetic(tmp_path / "beir", queries=6, train=3)
    run = folder / "first.run.trec"
    out = {}
    spellings = {
        "new": ["--data", str(folder), "--first-stage", str(run)],
        "old": ["-i", str(folder), "--run", str(run)],
        "auto": ["--data", str(folder)],  # the folder's own run, as eval's default reads it
    }
    for name, flags in spellings.items():
        target = tmp_path / f"{name}.jsonl"
        assert main(["batch", *flags, "-o", str(target), "-r", "bm25", "--candidates", "5"]) == 0
        rows = [json.loads(line) for line in target.read_text().splitlines()]
        out[name] = [(r["query_id"], [c["id"] for c in r["candidates"]]) for r in rows]
        out[f"{name} err"] = capsys.readouterr().err
    assert out["new"] == out["old"] == out["auto"]
    assert len(out["new"]) == 3 and all(len(ids) == 5 for _, ids in out["new"])  # test split
    assert "--run is now spelled --first-stage" in out["old err"]
    assert "--input FOLDER is now spelled --data FOLDER" in out["old err"]
    assert "is now spelled" not in out["new err"] + out["auto err"]


def test_batch_first_stage_is_for_a_beir_folder(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query": "q", "candidates": ["a", "b"]}) + "\n")
    code = main(["batch", "-i", str(rows), "-o", str(tmp_path / "o.jsonl"), "--first-stage", "x"])
    err = capsys.readouterr().err
    assert code == 2 and "--first-stage has no effect with --input" in err
    assert "a BEIR folder's queries and candidates (--data FOLDER)" in err
    with pytest.raises(SystemExit):
        main(["batch", "-i", str(rows), "--data", str(tmp_path), "-o", "o.jsonl"])
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize("given", [["--first-stage", "bm25"], ["--first-stage"]])
def test_rank_says_it_takes_no_first_stage(given, capsys):
    with pytest.raises(SystemExit):
        main(["rank", "-q", "solar", *given])
    err = capsys.readouterr().err
    assert "ambiguous" not in err and "takes no first stage" in err and "--first-stage-field" in err
    assert set(_parsed("rank", "-q", "q")).isdisjoint({"first_stage", "refused_first_stage"})


def test_train_split_says_what_it_is_called_now(tmp_path, capsys):
    for flag in ("--train-split", "--split"):
        code = main(["train", "embedding", "--data", str(tmp_path), flag, "test", "--out", "x"])
        assert code == 1 and "test split is for reporting" in capsys.readouterr().err
    build_parser().parse_args(["train", "embedding", "--data", "d", "--out", "o", "--split", "s"])
    assert "--split is now spelled --train-split" in capsys.readouterr().err


def test_simulate_clicks_split_says_what_it_is_called_now(capsys):
    build_parser().parse_args([*SIM.split(), "--split", "dev"])
    assert "--split is now spelled --train-split" in capsys.readouterr().err
    repo = Path(__file__).resolve().parents[2]
    table = (repo / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "| `train --split`, `simulate-clicks --split` | `--train-split` |" in table


def _every_registered_name() -> list[tuple[str, str]]:
    return [
        (kind, entry.name)
        for kind in ("reranker", "scorer", "rule", "llm_client")
        for entry in registry.entries(kind)
    ]


@pytest.mark.parametrize(("kind", "name"), _every_registered_name())
def test_every_registered_name_works_with_either_separator(kind, name):
    hyphens, underscores = name.replace("_", "-"), name.replace("-", "_")
    assert registry.canonical(kind, hyphens) == registry.canonical(kind, underscores) == name
    assert registry.lookup(kind, hyphens) is registry.lookup(kind, underscores)


def test_the_commands_the_cli_page_names_for_max_queries_are_those_that_take_it():
    """docs/cli.md names the commands that take --max-queries (train has --max-pairs
    instead): each is true of the parser, and no command taking it is left out."""
    import argparse
    import re

    page = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    named = re.search(r"`--max-queries` limits the queries read \(by (.*?); `train`", page)
    assert named, "the One spelling paragraph no longer says which commands take it"
    listed = set(re.findall(r"`([a-z-]+)`", named.group(1)))
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    taking = {
        name
        for name, parser in sub.choices.items()
        if any("--max-queries" in a.option_strings for a in parser._actions)
    }
    assert listed == taking
    train = sub.choices["train"]
    assert any("--max-pairs" in a.option_strings for a in train._actions)


@pytest.mark.parametrize("command", ["serve", "train", "export"])
def test_help_spells_reranker_names_and_model_kinds_with_a_hyphen(command, capsys):
    """As docs/cli.md says: names with -, the _ spelling taken too (and said so)."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "causal_lm" not in text
    assert "cross_encoder" not in text.replace("cross_encoder works too", ""), text


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "{kind}", "--data", "d", "--out", "o"],
        ["export", "m", "--kind", "{kind}"],
    ],
)
def test_a_model_kind_is_taken_in_either_spelling_and_refused_as_the_help_shows(argv, capsys):
    parse, dest = build_parser().parse_args, "what" if argv[0] == "train" else "kind"
    kinds = {
        getattr(parse([a.format(kind=k) for a in argv]), dest)
        for k in ("cross-encoder", "cross_encoder")
    }
    assert kinds == {"cross_encoder"}
    with pytest.raises(SystemExit):
        parse([a.format(kind="ce") for a in argv])
    err = capsys.readouterr().err
    assert "expected embedding or cross-encoder (cross_encoder works too), got 'ce'" in err
