"""Propensities given rather than estimated (``--propensities``, ``propensities=``), and
``learn_from_log``'s ``corpus`` given as a path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rerankit.errors import InputError
from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import ClickLog, learn_from_log, write_features
from rerankit.training.clicks.given import as_propensities, read_propensities

TEN = [1.0, 0.9, 0.7, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05]


def test_propensities_read_from_a_list_a_comma_separated_text_and_tunes_file(tmp_path):
    assert read_propensities(TEN) == TEN
    assert read_propensities("2, 1.8,1.4,1,0.8,0.6,0.4,0.3,0.2,0.1") == pytest.approx(TEN)
    written = tmp_path / "learned.propensities.json"  # as tune --clicks writes it
    written.write_text(json.dumps({"method": "swaps", "by_position": [*TEN, 0.01]}))
    assert read_propensities(written) == TEN  # the first 10 of 11
    assert read_propensities(str(written)) == TEN
    plain = tmp_path / "p.json"
    plain.write_text(json.dumps(TEN))
    assert read_propensities(str(plain), depth=3) == TEN[:3]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,0.9,0.5", "3 values, and learning weighs clicks at the first 10 positions"),
        ("1,0.9,x,0.4,0.3,0.2,0.1,0.1,0.1,0.1", "position 3: 'x' is not a positive number"),
        ([1.0, 0.0, *TEN[2:]], "position 2: 0.0 is not a positive number"),
        ("missing.json", "missing.json: no such file"),
        (7, "propensities: give one number a position"),
    ],
)
def test_bad_propensities_are_refused_naming_what_is_wrong(value, message, tmp_path):
    with pytest.raises(InputError) as caught:
        read_propensities(value)
    assert message in str(caught.value)


def test_a_file_of_a_position_never_shown_is_refused(tmp_path):
    written = tmp_path / "learned.propensities.json"
    written.write_text(json.dumps({"by_position": [*TEN[:8], None, None]}))
    with pytest.raises(InputError, match=r"position 9 has no value \(the log it was estimated"):
        read_propensities(written)


def test_given_propensities_are_used_as_given_relative_to_position_1():
    found = as_propensities("2,1,0.5", {}, {}, 3, True)
    assert found.method == "given" and found.values.tolist() == [1.0, 0.5, 0.25]


def _id_log(path, corpus_folder):
    """A log of ids only over a corpus folder, and features for its queries."""
    corpus_folder.mkdir()
    docs = {f"d{i}": f"document {i}" for i in range(6)}
    with open(corpus_folder / "corpus.jsonl", "w") as handle:
        for d, text in docs.items():
            handle.write(json.dumps({"_id": d, "text": text}) + "\n")
    log = ClickLog(path, store="id")
    rng = np.random.default_rng(0)
    for q in range(6):
        for s in range(4):
            rid = f"q{q}:{s}"
            shown = rng.permutation(6).tolist()
            log.log_impression(rid, f"query {q}", [{"id": d} for d in docs], shown)
            log.log_feedback(rid, [f"d{q}"])
    log.close()
    rows = {f"query {q}": (list(docs), rng.random((6, len(FEATURES)))) for q in range(6)}
    return write_features(rows, path.with_suffix(".npz"))


def test_learn_from_log_reads_a_corpus_given_as_a_path(tmp_path):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    features = _id_log(tmp_path / "clicks.jsonl", tmp_path / "corpus")
    # data=, as --data names it; corpus=, its earlier name, learns the same
    found = {}
    for name in ("data", "corpus"):
        for corpus in (str(tmp_path / "corpus"), tmp_path / "corpus" / "corpus.jsonl"):
            found[name, str(corpus)] = learn_from_log(
                tmp_path / "clicks.jsonl", **{name: corpus}, features=features, folds=2, curve=None
            )
    for each in found.values():
        assert each.read.unresolved == 0 and each.learning.queries == 6
    folder = str(tmp_path / "corpus")
    now, earlier = found["data", folder].learning, found["corpus", folder].learning
    assert now.describe() == earlier.describe()
    with pytest.raises(TypeError, match="got data= and its earlier name corpus="):
        learn_from_log(tmp_path / "clicks.jsonl", data=folder, corpus=folder)


def test_learn_from_log_refuses_a_corpus_of_another_kind_saying_what_to_pass(tmp_path):
    with pytest.raises(TypeError, match=r"data: expected document id -> text .*read_corpus"):
        learn_from_log(tmp_path / "clicks.jsonl", data=[("d1", "text")])


def test_a_log_of_ids_learns_from_its_features_file_alone(tmp_path):
    """The features file holds everything learning reads, so an id-only log needs no
    corpus beside it (what ``tune --clicks LOG --features NPZ`` does for a service that
    logged ids)."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    features = _id_log(tmp_path / "clicks.jsonl", tmp_path / "corpus")
    found = learn_from_log(tmp_path / "clicks.jsonl", features=features, folds=2, curve=None)
    assert found.read.unresolved == 0 and found.learning.queries == 6
    assert found.features == f"features read from {features}"
    missing = tmp_path / "absent.npz"  # no file yet: the texts are needed to compute them
    with pytest.raises(InputError, match="each has a document without a text"):
        learn_from_log(tmp_path / "clicks.jsonl", features=missing, folds=2, curve=None)
