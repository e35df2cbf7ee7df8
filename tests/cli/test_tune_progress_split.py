"""`rerankit tune`'s progress on stderr names the split it scores, as its account does: a
run on `--train-split test:odd` never says it scores `train`."""

from __future__ import annotations

import pytest

from rerankit.cli import main

pytest.importorskip("sentence_transformers", reason="tune needs the 'torch' extra")


@pytest.mark.parametrize("method", [[], ["--calibrate"]])
def test_progress_names_the_training_split(tmp_path, synthetic, capsys, method):
    folder = synthetic(tmp_path / "data", train=0)
    (folder / "qrels" / "train.tsv").unlink()  # one judged split, halved
    argv = ["tune", "--data", str(folder), "--train-split", "test:odd"]
    argv += ["--test-split", "test:even", "--candidates", "10", "--out", str(tmp_path / "t.toml")]
    assert main([*argv, *method, "--no-embedding-cache"]) == 0
    err = capsys.readouterr().err
    assert "scoring train" not in err
    assert "scoring the test:odd split: 20/20 queries" in err
