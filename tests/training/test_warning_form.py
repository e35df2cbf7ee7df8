"""Every warning ``tune``, ``label`` and ``eval`` print on stderr has one form,
``rerankit: warning: ...`` (``label`` said ``rerankit label: warning: ...``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rerankit.cli.main import main

MINI = Path(__file__).parents[2] / "examples" / "scifact-mini"
FORM = "rerankit: warning: "


@pytest.fixture
def data(tmp_path):
    """scifact-mini, each split judging a document its corpus does not hold (a warning
    reading it), and query 50 in both (so that tune stops once it has read them)."""
    folder = tmp_path / "data"
    shutil.copytree(MINI, folder)
    for split in ("train", "test"):
        with (folder / "qrels" / f"{split}.tsv").open("a") as f:
            f.write("50\tno-such-doc\t1\n")
    return folder


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning" in line.lower()]


def test_tune_label_and_eval_warn_in_one_form(data, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RERANKIT_UNSET_KEY", raising=False)
    judge = tmp_path / "judge.toml"
    judge.write_text(
        '[scorer]\ntype = "llm_listwise"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        'api_key_env = "RERANKIT_UNSET_KEY"\n'
    )
    commands = {
        "tune": ["tune", "--data", str(data), "--out", str(tmp_path / "t.toml")],
        "label": ["label", "--data", str(data), "--judge", str(judge), "--out",
                  str(tmp_path / "labelled"), "--candidates", "5", "--dry-run"],
        "eval": ["eval", "--data", str(data), "--rerankers", "bm25", "--max-queries", "2"],
    }  # fmt: skip
    said = {}
    for name, args in commands.items():
        main([*args, "--no-progress"])
        said[name] = warnings_in(capsys.readouterr().err)
    assert all(said.values()), said  # each command warned
    assert "no-such-doc" in " ".join(said["tune"] + said["eval"])
    label = " ".join(said["label"])
    assert "--candidates 5 with --positions 3,10" in label
    assert "without --dry-run this stops" in label and "RERANKIT_UNSET_KEY" in label
    for name, lines in said.items():
        for line in lines:
            assert line.startswith(FORM), f"{name}: {line}"
