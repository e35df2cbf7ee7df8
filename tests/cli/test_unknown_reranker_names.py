"""A reranker name that is neither registered nor a file or folder here (``-r tiny-c``, the
folder being ``tiny-ce``): the error says that no file or folder has that name, not only
that no plugin registered it, and offers the close files and folders as well as the close
registered names."""

from __future__ import annotations

import pytest

import rerankit
from rerankit import registry
from rerankit.cli import main
from rerankit.errors import ConfigError


@pytest.fixture
def here(tmp_path, monkeypatch):
    (tmp_path / "tiny-ce").mkdir()  # a model folder (its contents do not matter here)
    (tmp_path / "calibrated.toml").write_text('reranker = "bm25"\n')
    (tmp_path / "notes.txt").write_text("not a pipeline\n")
    (tmp_path / "docs.jsonl").write_text('{"text": "a"}\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("tiny-c", "did you mean the folder 'tiny-ce'?"),
        ("calibrated.tom", "did you mean the file 'calibrated.toml'?"),
        ("hybrd", "did you mean 'hybrid'"),  # (or a name another test registered)
    ],
)
def test_a_mistyped_name_says_no_such_file_or_folder_and_offers_what_is_here(
    capsys, here, name, said
):
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", name]) == 2
    err = capsys.readouterr().err
    assert f"unknown reranker {name!r}: no reranker is registered by that name" in err
    assert f"no pipeline file or model folder {name!r} is in {here} (no such file or folder)" in err
    assert said in err, err
    assert "--plugin MODULE" in err  # a name of one's own: still said how to load it


def test_the_library_says_the_same(here):
    with pytest.raises(ConfigError, match=r"no pipeline file or model folder 'tiny-c' is in .*"):
        rerankit.load("tiny-c")
    with pytest.raises(ConfigError, match=r"the file 'notes.txt' in .* is no pipeline file"):
        rerankit.rerank("q", ["a"], reranker="notes.txt")
    # in a pipeline file too, with the stage it is in
    (here / "mine.toml").write_text('[[stages]]\nreranker = "tiny-c"\n')
    with pytest.raises(ConfigError, match=r"stages\[0\]\.reranker.*did you mean the folder"):
        rerankit.load("mine.toml")


@pytest.mark.parametrize("name", ["hybrid-bm25", "hybrid_bm25"])
def test_a_removed_name_says_what_replaced_it(capsys, here, name):
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", name]) == 2
    err = capsys.readouterr().err
    assert f"reranker {name!r} was removed: it did what 'hybrid' does" in err, err
    assert err.rstrip().endswith("use hybrid")
    with pytest.raises(ConfigError, match="was removed"):
        rerankit.load(name)


_SCORER_TYPES = [  # the built-in scorer types that no reranker is named after
    e.name
    for e in registry.entries("scorer")
    if isinstance(e.factory, str)
    and e.factory.startswith(".")
    and registry.canonical("reranker", e.name) is None
]


@pytest.mark.parametrize("name", _SCORER_TYPES)
def test_a_scorer_type_named_as_a_reranker_says_how_a_pipeline_file_uses_it(capsys, here, name):
    """``-r coverage`` names a scorer type, not a missing plugin: the error says so and shows
    the pipeline file that uses it, not ``--plugin``."""
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", name]) == 2
    err = capsys.readouterr().err
    assert f"{name!r} is a scorer type, not a reranker" in err, err
    assert f'scorer = {{ type = "{name}" }}' in err
    assert f"-r {name.replace('_', '-')}.toml" in err
    assert "no reranker is registered" not in err and "--plugin" not in err


@pytest.mark.parametrize("name", ["coverage", "proximity"])
def test_the_pipeline_file_the_error_shows_ranks(here, name):
    with pytest.raises(ConfigError) as raised:
        rerankit.load(name)
    said = str(raised.value)
    assert said.startswith(f"{name!r} is a scorer type")
    toml = said.split(":\n", 1)[1].split("\nand name", 1)[0]
    (here / f"{name}.toml").write_text(toml + "\n")
    result = rerankit.rerank("solar power", ["wind", "solar power plants"], reranker=f"{name}.toml")
    assert result[0].text == "solar power plants"


@pytest.mark.parametrize(
    ("name", "options"), [("mmr", ""), ("deduplicate", ""), ("min-score", ", threshold = 0.1")]
)
def test_a_rule_named_as_a_reranker_shows_the_stages_that_use_it(capsys, here, name, options):
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", name]) == 2
    err = capsys.readouterr().err
    assert f"{name!r} is a rule, not a reranker" in err, err
    assert "with its options beside type" in err and "--plugin" not in err
    toml = err.split(":\n", 1)[1].split("\nand name", 1)[0]
    head, rule = toml.rsplit("\n", 1)  # the rule's line is the last
    toml = f"{head}\n{rule.replace(' }', f'{options} }}')}"
    (here / "ruled.toml").write_text(toml + "\n")
    assert rerankit.rerank("solar", ["wind", "solar power"], reranker="ruled.toml")[0].text


def test_a_typo_still_gets_the_close_names_and_a_file_of_that_name_its_own_error(capsys, here):
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", "jacard"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'jaccard'" in err and "--plugin MODULE" in err, err
    (here / "coverage").write_text("not a pipeline\n")  # a file here named as the type
    assert main(["rank", "-q", "x", "-i", "docs.jsonl", "-r", "coverage"]) == 2
    assert "the file 'coverage' in" in capsys.readouterr().err


MINI = "examples/scifact-mini"


@pytest.mark.parametrize(
    "args",
    [
        ["rank", "-q", "x", "-i", "docs.jsonl", "-r", "bm2"],
        ["batch", "-i", "rows.jsonl", "--out", "out.jsonl", "-r", "bm2"],
        ["eval", "--data", MINI, "-r", "bm2"],
        ["eval", "--data", MINI, "--rerankers", "bm25,bm2"],
        ["simulate-clicks", "--data", MINI, "-r", "bm2", "--out", "sim.jsonl"],
        ["precompute", "-i", "docs.jsonl", "-r", "bm2"],
        ["serve", "-r", "bm2"],
        ["check", "calibrated.toml", "-r", "bm2"],
        ["tune", "--clicks", "clicks.jsonl", "--served", "bm2"],
    ],
    ids=lambda a: a[0] + ("-rerankers" if "--rerankers" in a else ""),
)
def test_an_unknown_reranker_name_is_a_refusal_exit_2_in_every_command(capsys, here, args):
    """As a pipeline file that is not there is (exit 2, before any work): batch said 1 for
    a name, 2 for a missing file, where docs/batch.md says every refusal is 2."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    args = [str(root / a) if a == MINI else a for a in args]
    (here / "rows.jsonl").write_text('{"query": "x", "candidates": ["a"]}\n')
    (here / "clicks.jsonl").write_text("")
    assert main(args) == 2
    err = capsys.readouterr().err
    if args[0] == "tune":  # --served takes a pipeline file or a registered name only
        assert "rerankit tune: error: --served bm2: neither a pipeline file" in err, err
    else:
        assert f"rerankit {args[0]}: error: unknown reranker 'bm2'" in err, err
        assert "did you mean 'bm25'" in err
    assert not (here / "out.jsonl").exists() and not (here / "sim.jsonl").exists()
