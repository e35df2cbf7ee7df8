"""A features file written by learning from a log (``tune --clicks LOG --features NPZ``)
is read back on the next run of the same log, also when some of its impressions were left
out for a document without a text."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rerankit.training.clicks import ClickLog, learn_from_log


def _hash_log(path, corpus_folder):
    """A log of hashes over a corpus folder, and one impression (as a hand-made test
    request would be) whose document the corpus does not hold."""
    corpus_folder.mkdir()
    docs = {f"d{i}": f"document {i} about topic {i % 3}" for i in range(6)}
    with open(corpus_folder / "corpus.jsonl", "w") as handle:
        for d, text in docs.items():
            handle.write(json.dumps({"_id": d, "text": text}) + "\n")
    log = ClickLog(path, store="hash")
    rng = np.random.default_rng(0)
    for q in range(4):
        for s in range(5):
            rid = f"q{q}:{s}"
            shown = rng.permutation(6).tolist()
            log.log_impression(
                rid, f"topic {q}", [{"id": d, "text": t} for d, t in docs.items()], shown
            )
            log.log_feedback(rid, [f"d{q}"])
    log.log_impression("solar", "solar power", [{"id": "x", "text": "not in the corpus"}], [0])
    log.log_feedback("solar", ["x"])
    log.close()


def test_a_features_file_is_read_back_leaving_out_the_same_impressions(tmp_path, tiny_st):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log, corpus = tmp_path / "clicks.jsonl", tmp_path / "corpus"
    _hash_log(log, corpus)
    features = tmp_path / "f.npz"
    options = {"corpus": corpus, "features": features, "embedding": str(tiny_st)}
    first = learn_from_log(log, folds=2, curve=None, **options)
    assert first.features.startswith("features written to")
    assert first.read.unresolved == 1 and "impression solar" in first.read.describe()
    written = features.stat().st_mtime_ns
    for corpus_given in (corpus, None):  # the file holds all learning reads
        again = learn_from_log(log, folds=2, curve=None, **{**options, "corpus": corpus_given})
        assert again.features == f"features read from {features}"
        assert again.read.unresolved == 1 and "impression solar" in again.read.describe()
        assert again.learning.queries == first.learning.queries
        assert again.learning.describe() == first.learning.describe()
    assert features.stat().st_mtime_ns == written
