"""Queries to label in place of a split's, from Python: ``read_queries`` (a text file,
one a line, as ``rerankit label --queries-file`` reads it), ``with_queries`` (a dataset
holding them) and ``label(..., queries=)``."""

from __future__ import annotations

import json
import re

import pytest

from rerankit.errors import InputError
from rerankit.eval.data import load_beir
from rerankit.training.labelling import read_queries, with_queries


def test_a_file_of_queries_is_numbered_q1_q2_skipping_blank_lines(tmp_path):
    path = tmp_path / "queries.txt"
    path.write_text("  solar panels \n\n\t\nwind turbines\nhydro power", encoding="utf-8")
    assert read_queries(path) == {
        "q1": "solar panels",
        "q2": "wind turbines",
        "q3": "hydro power",
    }
    assert read_queries(str(path)) == read_queries(path)


def test_a_file_without_queries_or_not_there_is_an_input_error_naming_it(tmp_path):
    (tmp_path / "blank.txt").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_queries(tmp_path / "blank.txt")
    assert str(raised.value) == f"{tmp_path / 'blank.txt'}: no queries (one a line)"
    with pytest.raises(InputError) as raised:
        read_queries("nosuch.txt")
    assert str(raised.value) == "nosuch.txt: no such file (the queries to label, one a line)"


def test_with_queries_is_a_copy_holding_them_without_its_run_or_judgments(tmp_path, synthetic):
    data = load_beir(synthetic(tmp_path / "data", queries=8, train=4), "train", judged=False)
    assert data.run_scores and data.qrels
    mine = with_queries(data, ["solar panels", " wind "])
    assert mine.queries == {"q1": "solar panels", "q2": "wind"}
    assert mine.run_scores is None and mine.qrels == {} and mine.corpus is data.corpus
    assert data.run_scores and data.qrels and len(data.queries) == 4  # the caller's kept
    assert with_queries(data, {"a": "solar"}).queries == {"a": "solar"}
    (tmp_path / "q.txt").write_text("solar\n", encoding="utf-8")
    assert with_queries(data, tmp_path / "q.txt").queries == {"q1": "solar"}


@pytest.mark.parametrize(
    ("queries", "said"),
    [
        ([], "queries: no queries"),
        ({}, "queries: no queries"),
        (["solar", "  "], "queries: query 'q2': each query is a non-empty text with a text id"),
        (
            {"a": None},
            "queries: query 'a': each query is a non-empty text with a text id, got None",
        ),
        ({1: "solar"}, "queries: query 1: each query is a non-empty text"),
        (
            42,
            "queries: a text file of queries (one a line), a list of query texts or {query id: "
            "text}, not int",
        ),
    ],
)
def test_queries_that_are_no_queries_are_named(tmp_path, synthetic, queries, said):
    data = load_beir(synthetic(tmp_path / "data", queries=8, train=4), "train", judged=False)
    with pytest.raises(InputError, match=re.escape(said)):
        with_queries(data, queries)


def test_label_takes_the_queries_to_label(tmp_path, synthetic):
    pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")
    from fake_judge import grading, judge_file

    from rerankit.llm.testing import FakeLLMServer
    from rerankit.training import label

    data = synthetic(tmp_path / "data", queries=8, train=4)
    (tmp_path / "questions.txt").write_text("solar panels\n\nwind turbines\n", encoding="utf-8")
    with FakeLLMServer(responder=grading(7)) as server:
        judge = judge_file(tmp_path / "judge.toml", server)
        report = label(data, 2, judge, tmp_path / "labels", queries=tmp_path / "questions.txt")
    assert report.queries == report.labelled_queries == 2 and report.labels == 4
    lines = (tmp_path / "labels" / "queries.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"_id": "q1", "text": "solar panels"},
        {"_id": "q2", "text": "wind turbines"},
    ]
