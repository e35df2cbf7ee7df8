"""Documents that share an id, in one call: each is ranked as a candidate of its own (as
Cohere's, TEI's and Infinity's rerank endpoints score every item they are sent), and the
result says so, in Python, on the command line and in a batch row; nothing the caller
passed is lost or changed."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit import Document
from rerankit.batch import rerank_row
from rerankit.cli import main
from rerankit.rerankers import Pipeline, ScorerReranker
from rerankit.scorers import FunctionScorer

DOCS = [
    {"id": "a", "text": "solar power on roofs"},
    {"id": "b", "text": "wind farms"},
    {"id": "a", "text": "solar panels", "source": "second index"},
    {"text": "no id at all"},
    {"id": "b", "text": "wind again"},
    {"id": "c", "text": "coal"},
]

#: scores by text length: fast, and distinct for these texts
BY_LENGTH = ScorerReranker(FunctionScorer(lambda q, d: float(len(d.text))))


def test_every_document_is_ranked_and_the_result_names_the_shared_ids():
    before = copy.deepcopy(DOCS)
    result = rerankit.rerank("solar", DOCS, reranker="bm25")
    assert before == DOCS  # nothing the caller passed changed
    assert sorted(r.index for r in result) == list(range(len(DOCS)))  # none lost or merged
    (warning,) = [w for w in result.warnings if "shared by several documents" in w]
    assert "'a': documents 0, 2" in warning and "'b': documents 1, 4" in warning
    assert warning.startswith("2 ids are shared")
    flagged = {r.index for r in result if "duplicate_id" in r.flags}
    assert flagged == {0, 1, 2, 4}  # not the one without an id, nor 'c'
    second = next(r for r in result if r.index == 2)
    assert second.document == {**DOCS[2], "rerank_score": second.score}  # its own fields


def test_a_pipeline_warns_once_not_once_per_stage():
    pipeline = Pipeline([(BY_LENGTH, 4), BY_LENGTH, BY_LENGTH])
    result = pipeline.rerank("q", DOCS)
    assert len([w for w in result.warnings if "shared by several documents" in w]) == 1
    assert {r.index for r in result if "duplicate_id" in r.flags} == {0, 1, 2, 4}
    assert all(r.flags.count("duplicate_id") == 1 for r in result if r.flags)


def test_unhashable_ids_and_top_k():
    docs = [{"id": ["x"], "text": "aa"}, {"id": ["x"], "text": "b"}, {"id": ["y"], "text": "c"}]
    result = BY_LENGTH.rerank("q", docs, top_k=1)
    assert "['x']: documents 0, 1" in result.warnings[0]  # named, though cut by top_k
    assert [r.flags for r in result] == [("duplicate_id",)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from("abc")), min_size=1, max_size=8))
def test_exactly_the_documents_whose_id_another_has_are_flagged(ids):
    docs = [Document(f"text {i}", id=x) for i, x in enumerate(ids)]
    result = BY_LENGTH.rerank("q", docs)
    shared = {i for i, x in enumerate(ids) if x is not None and ids.count(x) > 1}
    assert sorted(r.index for r in result) == list(range(len(ids)))
    assert {r.index for r in result if "duplicate_id" in r.flags} == shared
    assert bool(result.warnings) == bool(shared)


def test_rank_on_the_command_line_warns_naming_the_ids(tmp_path, capsys):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    assert main(["rank", "-q", "solar", "--input", str(path), "-r", "bm25"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == len(DOCS)  # every line ranked
    assert "rerankit: warning: 2 ids are shared by several documents ('a': documents 0, 2" in err


def test_a_batch_row_carries_the_warning_and_the_flags():
    row = {"query": "solar", "candidates": DOCS}
    out = rerank_row(BY_LENGTH, row)
    assert out["error"] is None and len(out["results"]) == len(DOCS)
    assert any("'a': documents 0, 2" in w for w in out["warnings"])
    assert {r["index"] for r in out["results"] if "duplicate_id" in r["flags"]} == {0, 1, 2, 4}
