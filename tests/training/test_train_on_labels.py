"""``rerankit train`` on labels from ``rerankit label``: it draws negatives from BM25's top
``--candidates`` and takes every candidate nobody judged as not relevant, so when those are
not the candidates the judge saw (another depth, or a run file's), it says so before it
trains, as ``tune`` does (it said nothing, and learned from negatives nobody judged)."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from fake_judge import grading, judge_file

from rerankit.eval.data import load_beir
from rerankit.eval.first_stage import first_stage
from rerankit.llm.testing import FakeLLMServer
from rerankit.training import Reporter, fine_tune, label
from rerankit.training.label_candidates import negatives_mismatch


class Heard(Exception):
    """Raised by the reporter at the warning: the test needs no training after it."""


@pytest.fixture
def labelled(tmp_path, synthetic):
    data = synthetic(tmp_path / "data", queries=8, train=4)
    with FakeLLMServer(responder=grading(7)) as server:
        judge = judge_file(tmp_path / "judge.toml", server)
        label(data, 5, judge, tmp_path / "bm25-5", first_stage="bm25")
    return tmp_path / "bm25-5"


def test_train_at_another_depth_than_label_says_so_before_it_trains(labelled, tmp_path):
    def note(line):
        if line.startswith("warning: the labels in"):
            raise Heard(line)

    with pytest.raises(Heard) as heard:
        fine_tune(
            labelled,
            tmp_path / "ce",
            what="cross_encoder",
            candidates=10,
            reporter=Reporter(note=note),
        )
    said = str(heard.value)
    assert "judged the candidates of first stage bm25, top 5" in said
    assert "BM25's top 10 (candidates=10 (--candidates)), other candidates for 4 of the 4" in said
    assert "pass the --candidates label judged" in said


def test_the_candidates_label_judged_pass(labelled):
    bm25 = first_stage(load_beir(labelled, "train"), "bm25", 5)
    assert negatives_mismatch(labelled, 5, bm25) is None
    assert negatives_mismatch(labelled, 6, first_stage(load_beir(labelled, "train"), "bm25", 6))
