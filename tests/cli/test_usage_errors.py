"""Values a command cannot use are usage errors (exit 2, the flag named), said before any
model loads or any file is read, in the words the library uses for the same mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rerankit.cli import build_parser, main
from rerankit.errors import InputError
from rerankit.text import LANGUAGES, SNOWBALL, Analyzer, check_language
from rerankit.training import FineTuneOptions, fine_tune

LABEL = ["label", "--data", "d", "--judge", "j.toml", "--out", "o", "--dry-run"]
TRAIN = ["train", "embedding", "--data", "d", "--out", "o"]


def usage_error(capsys, argv: list[str]) -> str:
    """The message of the usage error ``argv`` gives (it must give one)."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("port", ["-5", "0", "65536", "70000", "http"])
def test_serve_refuses_a_port_out_of_range_before_loading_anything(capsys, port):
    err = usage_error(capsys, ["serve", "--port", port])
    assert "argument --port" in err and ("1 to 65535" in err or "port number" in err)
    assert "Traceback" not in err


@pytest.mark.parametrize("port", ["1", "8080", "65535"])
def test_serve_takes_every_port_in_range(port):
    assert build_parser().parse_args(["serve", "--port", port]).port == int(port)


@pytest.mark.parametrize("command", [["rank", "-q", "q"], ["batch", "-i", "x", "-o", "y"]])
@pytest.mark.parametrize("language", ["klingon", "xx", "en-US"])
def test_an_unknown_language_is_refused_with_the_codes_taken(capsys, command, language):
    err = usage_error(capsys, [*command, "-r", "bm25", "--language", language])
    assert f"unknown language {language!r}" in err and "ISO 639-1" in err
    assert "rerankit.text.LANGUAGES" in err  # where the whole list is
    if language == "en-US":
        assert "did you mean 'en'?" in err


@pytest.mark.parametrize(
    ("given", "meant"), [("jp", "ja"), ("JP", "ja"), ("ja-JP", "ja"), ("cn", "zh"), ("deu", "de")]
)
def test_a_common_wrong_code_is_told_the_right_one(capsys, given, meant):
    err = usage_error(capsys, ["rank", "-q", "q", "-r", "bm25", "--language", given])
    assert f"unknown language {given!r} (did you mean {meant!r}?)" in err
    with pytest.raises(ValueError, match=f"did you mean {meant!r}"):
        check_language("german" if meant == "de" else given)


@pytest.mark.parametrize("command", ["eval", "serve"])
def test_eval_and_serve_check_the_language_too(capsys, command):
    argv = [command, *(["--data", "d"] if command == "eval" else []), "--language", "tlh"]
    assert "unknown language 'tlh'" in usage_error(capsys, argv)


def test_a_known_language_is_taken_in_any_case():
    assert build_parser().parse_args(["rank", "-q", "q", "--language", "DE"]).language == "de"
    assert check_language("pl") == "pl"  # no stemmer, still a language: words, unstemmed
    assert set(SNOWBALL) <= set(LANGUAGES) and len(LANGUAGES) == len(set(LANGUAGES)) == 184


@pytest.mark.parametrize("language", ["klingon", "xx", "", None, "e"])
def test_the_library_refuses_an_unknown_language_as_the_command_line_does(language):
    from rerankit.rerankers import HybridReranker
    from rerankit.scorers import BM25Scorer

    with pytest.raises(ValueError, match="unknown language"):
        Analyzer(language=language)
    with pytest.raises(ValueError, match="unknown language"):
        BM25Scorer(language=language)
    with pytest.raises(ValueError, match="unknown language"):
        HybridReranker(language=language)


def test_rank_with_an_unknown_language_stops_before_reading_input(capsys, tmp_path):
    missing = tmp_path / "never-read.jsonl"
    with pytest.raises(SystemExit) as exit_:
        main(["rank", "-q", "q", "-i", str(missing), "-r", "bm25", "--language", "klingon"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "unknown language 'klingon'" in err
    assert "never-read" not in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        ([*TRAIN, "--epochs", "0"], "--epochs"),
        ([*TRAIN, "--epochs", "-1"], "--epochs"),
        ([*TRAIN, "--learning-rate", "-1"], "--learning-rate"),
        ([*TRAIN, "--head-learning-rate", "-0.1"], "--head-learning-rate"),
        ([*LABEL, "--budget", "-1"], "--budget"),
        ([*LABEL, "--budget", "0"], "--budget"),
        (["tune", "--data", "d", "--embedding-max-length", "0"], "--embedding-max-length"),
    ],
)
def test_values_that_cannot_work_are_refused(capsys, argv, flag):
    assert f"argument {flag}" in usage_error(capsys, argv)


@pytest.mark.parametrize("share", ["0.9", "0.51", "-0.5", "1"])
def test_held_out_help_error_and_library_say_the_same_limit(capsys, share):
    err = usage_error(capsys, [*TRAIN, "--held-out", share])
    assert "from 0 (no check) to 0.5 (half)" in err
    with pytest.raises(SystemExit):
        build_parser().parse_args([*TRAIN, "--help"])
    assert "from 0 (no check) to 0.5 (half)" in " ".join(capsys.readouterr().out.split())
    assert "argument --held-out: " in err  # the command line's usage error names the flag
    with pytest.raises(InputError) as refused:
        FineTuneOptions(held_out=float(share)).check()
    said = str(refused.value)  # the library's names the keyword, with the flag beside it
    assert said.startswith(f"held_out={float(share)!r} (--held-out): ")
    assert "from 0 (no check) to 0.5 (half)" in said


@pytest.mark.parametrize("share", ["0", "0.1", "0.5"])
def test_held_out_takes_a_share_up_to_half(share):
    assert build_parser().parse_args([*TRAIN, "--held-out", share]).held_out == float(share)
    FineTuneOptions(held_out=float(share)).check()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"epochs": 0}, "epochs=0 (--epochs): must be above 0"),
        ({"learning_rate": -1.0}, "learning_rate=-1.0 (--learning-rate): must be 0"),
        (
            {"what": "cross_encoder", "head_learning_rate": -1e-3},
            "head_learning_rate=-0.001 (--head-learning-rate): must be 0",
        ),
        (
            {"head_learning_rate": 1e-3},
            "head_learning_rate=0.001 (--head-learning-rate): is for cross-encoders",
        ),
        ({"cross_fit": 1}, "cross_fit=1 (--cross-fit): needs at least 2 folds"),
        ({"train_split": "test"}, "train_split='test' (--train-split): train on a training"),
    ],
)
def test_the_library_refuses_what_the_command_line_refuses(options, message):
    """By the keyword a Python caller passed, with the command line's flag beside it
    (``train_split`` is ``rerankit train``'s ``--train-split``)."""
    with pytest.raises(InputError) as refused:
        FineTuneOptions(**options).check()
    assert str(refused.value).startswith(message)


def test_fine_tune_names_the_keyword_it_was_given(tmp_path):
    with pytest.raises(InputError) as refused:
        fine_tune(tmp_path / "not-read", tmp_path / "out", epochs=0)
    assert str(refused.value).startswith("epochs=0 (--epochs): must be above 0")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("query", ["", "   ", "\t"])
def test_rank_refuses_an_empty_query_as_batch_does(capsys, tmp_path, query):
    err = usage_error(capsys, ["rank", "-q", query, "-i", "docs.jsonl"])
    assert "argument --query/-q: the query is empty" in err
    rows, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    rows.write_text(json.dumps({"query_id": "q1", "query": query, "candidates": ["a"]}) + "\n")
    assert main(["batch", "-i", str(rows), "-o", str(out), "-r", "bm25"]) == 1
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert "'query' must be a non-empty string" in row["error"] and not row.get("results")


BATCH = ["batch", "-i", "rows.jsonl", "-o", "out.jsonl"]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--candidates", "1"], "--candidates has no effect with --input"),
        (["--split", "train"], "--split has no effect with --input"),
        (["--max-queries", "1"], "--max-queries has no effect with --input"),
        (["--first-stage", "bm25"], "--first-stage has no effect with --input"),
        (["--split", "train", "--candidates", "5"], "--candidates, --split have no effect"),
        (["--workers", "4"], "--workers has no effect without --engine ray"),
        (["--num-cpus", "2", "--address", "h:1"], "--num-cpus, --address have no effect"),
    ],
)
def test_batch_refuses_flags_that_would_have_no_effect(capsys, tmp_path, flags, named):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query": "q", "candidates": ["a"]}) + "\n")
    argv = ["batch", "-i", str(rows), "-o", str(tmp_path / "out.jsonl"), "-r", "bm25", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rerankit batch: error: ") and named in err
    assert not (tmp_path / "out.jsonl").exists()  # refused before any work


def test_batch_over_a_folder_takes_its_flags_and_the_defaults_hold(capsys, tmp_path):
    mini = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"
    out = tmp_path / "out.jsonl"
    argv = ["batch", "--data", str(mini), "-o", str(out), "-r", "bm25"]
    assert main([*argv, "--max-queries", "2", "--candidates", "3"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(len(r["results"]) == 3 for r in rows)
    # defaults: the test split, 100 candidates (the file started again)
    assert main([*argv, "--max-queries", "1", "--overwrite"]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(row["results"]) == min(
        100, len(mini.joinpath("corpus.jsonl").read_text().splitlines())
    )


@pytest.mark.parametrize("flag", ["--num-cpus", "--num-gpus"])
def test_ray_resources_are_never_negative(capsys, flag):
    assert f"argument {flag}" in usage_error(capsys, [*BATCH, "--engine", "ray", flag, "-1"])
    from rerankit.batch import RayOptions

    with pytest.raises(InputError, match=">= 0"):
        RayOptions(**{flag.lstrip("-").replace("-", "_"): -1.0})


def test_eval_refuses_ray_flags_without_ray(capsys):
    assert main(["eval", "--data", "nowhere", "--workers", "2"]) == 2
    assert "--workers has no effect without --engine ray" in capsys.readouterr().err


def test_a_file_s_mistakes_start_with_the_file(capsys, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "a"}\n{"body": "b"}\n')
    assert main(["rank", "-q", "a", "-i", str(docs), "-r", "bm25"]) == 1
    assert f"rerankit rank: error: {docs}:2: missing text field 'text'" in capsys.readouterr().err
    pipeline = tmp_path / "badpipe.toml"
    pipeline.write_text('[[stages]]\nscorer = { type = "bm25x" }\n')
    assert main(["rank", "-q", "a", "-i", str(docs), "-r", str(pipeline)]) == 1
    assert f"error: {pipeline}: stages[0].scorer: unknown scorer 'bm25x'" in (
        capsys.readouterr().err
    )
    settings = tmp_path / "service.toml"
    settings.write_text("[server]\nbogus_key = 1\n")
    assert main(["serve", "--settings", str(settings)]) == 1
    assert (
        f"error: {settings}: [server] has no key 'bogus_key'; its keys: default, api_keys"
        in capsys.readouterr().err
    )


def test_a_path_that_is_not_there_is_no_such_folder_not_a_bad_hub_id(capsys, tmp_path):
    missing = f"./{tmp_path.name}-nosuchdir"
    assert main(["export", missing, "--out", str(tmp_path / "x")]) == 1
    assert f"{missing}: no such folder (the model to load)" in capsys.readouterr().err
    from rerankit.backends.hub import looks_like_a_path

    assert looks_like_a_path("./m") and looks_like_a_path("/opt/m") and looks_like_a_path("a/b/c")
    assert not looks_like_a_path("BAAI/bge-reranker-base") and not looks_like_a_path("gpt2")


def test_label_names_a_missing_queries_file(capsys, tmp_path):
    mini = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"
    judge = tmp_path / "judge.toml"
    judge.write_text('[scorer]\ntype = "llm_pointwise"\nmodel = "gpt-4o-mini"\n')
    argv = ["label", "--data", str(mini), "--judge", str(judge), "--out", str(tmp_path / "o")]
    assert main([*argv, "--queries-file", "nosuch.txt", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "rerankit label: error: nosuch.txt: no such file (--queries-file: the queries" in err


@pytest.mark.parametrize(
    "flags", [["--rerankers", ""], ["--rerankers", " , "], ["-r", ""], ["--config", ""]]
)
def test_eval_refuses_an_empty_reranker_list_rather_than_running_the_default(capsys, flags):
    # before: an unset shell variable ($RERANKERS) silently evaluated bm25,embedding,hybrid
    err = usage_error(capsys, ["eval", "--data", "d", *flags])
    assert f"argument {flags[0] if flags[0] != '-r' else '-r/--reranker'}" in err
    assert "names no reranker" in err and "leave the flag out for the default" in err
