"""Values a command cannot use are usage errors (exit 2, the flag named), said before any
model loads or any file is read, in the words the library uses for the same mistake."""

from __future__ import annotations

import pytest

from rerankit.cli import build_parser, main
from rerankit.errors import InputError
from rerankit.text import LANGUAGES, SNOWBALL, Analyzer, check_language
from rerankit.training import FineTuneOptions

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
        ([*TRAIN, "--head-learning-rate", "0"], "--head-learning-rate"),
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
    with pytest.raises(InputError, match=r"from 0 \(no check\) to 0\.5 \(half\)"):
        FineTuneOptions(held_out=float(share)).check()


@pytest.mark.parametrize("share", ["0", "0.1", "0.5"])
def test_held_out_takes_a_share_up_to_half(share):
    assert build_parser().parse_args([*TRAIN, "--held-out", share]).held_out == float(share)
    FineTuneOptions(held_out=float(share)).check()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"epochs": 0}, "--epochs must be above 0"),
        ({"learning_rate": -1.0}, "--learning-rate must be above 0"),
        ({"what": "cross_encoder", "head_learning_rate": 0.0}, "--head-learning-rate"),
    ],
)
def test_the_library_refuses_what_the_command_line_refuses(options, message):
    with pytest.raises(InputError, match=message):
        FineTuneOptions(**options).check()
