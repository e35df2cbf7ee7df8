"""``rerankit.training.label`` takes what ``rerankit label`` takes: a BEIR folder, a number
of first-stage candidates and a judge file (a folder path used to fail on an
AttributeError); a wrong input is an error naming it."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from fake_judge import grading, judge_file

from rerankit.errors import InputError
from rerankit.eval.data import load_beir
from rerankit.eval.first_stage import first_stage
from rerankit.llm.testing import FakeLLMServer
from rerankit.training import label
from rerankit.training.label_candidates import candidates_digest, read_label_report


def test_a_folder_a_number_of_candidates_and_a_judge_file(tmp_path, synthetic):
    data = synthetic(tmp_path / "data", queries=8, train=4)
    with FakeLLMServer(responder=grading(7)) as server:
        judge = judge_file(tmp_path / "judge.toml", server)
        report = label(data, 3, judge, tmp_path / "labels")
    train = load_beir(data, "train", judged=False)
    assert report.labelled_queries == len(train.queries) == 4 and report.labels == 12
    assert len(server.requests) == 12
    made = read_label_report(tmp_path / "labels")
    assert made["first_stage"] == "auto" and made["candidates"] == 3
    ranked = first_stage(train, "auto", k=3)
    assert made["candidate_digests"] == {
        q: candidates_digest([d for d, _ in rows]) for q, rows in ranked.items()
    }
    assert (tmp_path / "labels" / "corpus.jsonl").is_file()


@pytest.mark.parametrize(
    ("data", "candidates", "said"),
    [
        (["not", "a", "folder"], 3, "data: a BEIR-layout folder (its path) or a Dataset, not list"),
        (None, 0, "candidates: a number of candidates per query above 0, not 0"),
        (None, ["d1", "d2"], "or a number k of first-stage candidates per query, not list"),
    ],
)
def test_a_wrong_input_is_named(tmp_path, synthetic, data, candidates, said):
    folder = synthetic(tmp_path / "data", queries=8, train=4)
    with pytest.raises(InputError, match=re.escape(said)):
        label(folder if data is None else data, candidates, "judge.toml", tmp_path / "labels")
