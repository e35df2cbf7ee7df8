"""The command `rerankit train` prints last ("does it beat the default?") runs as printed
and measures the model on judged queries it never trained on, also when it trained on half
of a folder's one judged split (`--train-split test:odd`)."""

from __future__ import annotations

import re
import shlex

import pytest

from rerankit.cli.main import build_parser
from rerankit.eval.data import read_split
from rerankit.training.fine_tuning import against_default


def _command(line: str) -> list[str]:
    """The command between backticks, as the shell would split it."""
    found = re.search(r"`(rerankit [^`]+)`", line)
    assert found, line
    return shlex.split(found.group(1))[1:]


@pytest.fixture
def one_split(tmp_path, synthetic):
    """A folder judged in qrels/test.tsv only, as the classic CISI collection is."""
    folder = synthetic(tmp_path / "data", train=0)
    (folder / "qrels" / "train.tsv").unlink()
    return folder


@pytest.mark.parametrize(("half", "other"), [("test:odd", "test:even"), ("test:even", "test:odd")])
def test_a_cross_encoder_trained_on_half_is_measured_on_the_other_half(one_split, half, other):
    line = against_default("cross_encoder", one_split, "my-ce", 20, half)
    args = build_parser().parse_args(_command(line))
    assert args.split == other and args.candidates == 20
    trained = set(read_split(one_split, half).qrels)
    measured = set(read_split(one_split, args.split).qrels)
    assert measured and not trained & measured  # none of the queries it learned from
    assert f"{other} queries" in line


def test_an_embedding_model_trained_on_half_is_tuned_on_that_half(one_split):
    line = against_default("embedding", one_split, "my-minilm", 20, "test:odd")
    args = build_parser().parse_args(_command(line))
    # tune's default --train-split, train, is not in this folder: it would stop at once
    assert args.train_split == "test:odd" and args.test_split == "test:even"
    assert not set(read_split(one_split, "test:odd").qrels) & set(
        read_split(one_split, "test:even").qrels
    )


def test_the_usual_split_keeps_the_usual_command(tmp_path, synthetic):
    folder = synthetic(tmp_path / "data")
    line = against_default("cross_encoder", folder, "my-ce", 20, "train")
    assert f"`rerankit eval --data {folder} --rerankers hybrid,./my-ce --baseline hybrid" in line
    line = against_default("embedding", folder, "my-minilm", 100, "train")
    assert "--train-split" not in line and "--test-split" not in line


def test_train_on_a_folder_judged_in_test_only_says_to_train_on_half(one_split, tmp_path, capsys):
    from rerankit.cli import main

    out = tmp_path / "model"
    assert main(["train", "embedding", "--data", str(one_split), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    # it named --split test, which train does not take (--train-split test is refused)
    assert "--split test" not in err and "no qrels/train.tsv to train on" in err
    assert "--train-split test:odd" in err and "test:even" in err
    assert not out.exists()
    # the flag it advises is one train takes: the half is read, and disjoint from the other
    assert read_split(one_split, "test:odd").qrels


def test_fine_tune_from_python_refuses_the_same_folder_in_its_own_words(one_split, tmp_path):
    from rerankit.errors import InputError
    from rerankit.training import fine_tune

    out = tmp_path / "model"
    with pytest.raises(InputError) as refused:
        fine_tune(one_split, out, what="embedding")
    said = str(refused.value)
    assert "no qrels/train.tsv to train on" in said
    assert "split='test:odd' (--train-split)" in said and "test:even" in said
    assert not out.exists()


def test_the_printed_command_shows_the_model_folder_as_a_path(one_split):
    """`--out my-ce` is printed `./my-ce`, as the pages write it: a path, not a name."""
    line = against_default("cross_encoder", one_split, "my-ce", 20, "test:odd")
    assert "--rerankers hybrid,./my-ce " in line
    assert "hybrid,/m/my-ce " in against_default("cross_encoder", one_split, "/m/my-ce")
    line = against_default("embedding", one_split, "../my-minilm")
    assert "--embedding-model ../my-minilm " in line
