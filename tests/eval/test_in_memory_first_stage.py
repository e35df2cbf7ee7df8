"""A first stage given in memory (``evaluate(..., first_stage={query id: candidates})``):
the same evaluation as the same ranking written to a run file, its unknown queries and
documents treated as a file's are, each mistake named by query and entry, and nothing the
caller passed changed."""

from __future__ import annotations

import copy

import pytest
from eval_tiny import tiny_dataset, write_tiny

from rerankit.errors import InputError
from rerankit.eval import evaluate
from rerankit.eval.first_stage import first_stage

#: q9 is no query of the collection: skipped, as a run file's line for it is
PAIRS = {
    "q1": [("d3", 9.5), ("d1", 6.5), ("d4", 7.0)],  # not in order: ranked by score
    "q2": [("d2", 3.0), ("d1", 1.0)],
    "q9": [("d1", 1.0)],
}
RUN = "".join(
    f"{q} Q0 {d} {r} {s} mine\n"
    for q, rows in PAIRS.items()
    for r, (d, s) in enumerate(sorted(rows, key=lambda x: -x[1]), start=1)
)


def _figures(result):
    """The rows' metrics and each query's candidates as the rerankers read them."""
    (collection,) = result.collections
    timing = ("ms", "_s", "seconds")  # how long it took differs from run to run
    rows = [{k: v for k, v in r.items() if not k.endswith(timing)} for r in result.rows]
    return rows, collection.shown, collection.meta["candidates"]


def test_a_mapping_gives_the_evaluation_its_run_file_gives(tmp_path):
    folder = write_tiny(tmp_path / "tiny")
    run = tmp_path / "mine.trec"
    run.write_text(RUN)
    given = copy.deepcopy(PAIRS)
    from_file = evaluate(folder, "bm25", first_stage=str(run), embedding_cache=False)
    in_memory = evaluate(folder, "bm25", first_stage=given, embedding_cache=False)
    assert _figures(in_memory) == _figures(from_file)
    assert [c["id"] for c in in_memory.collections[0].shown["q1"]] == ["d3", "d4", "d1"]
    assert in_memory.collections[0].shown["q3"] == []  # no candidates given: scores 0
    assert "in memory" in in_memory.collections[0].meta["first_stage"]
    assert given == PAIRS  # the caller's mapping is left as it was


def test_doc_ids_alone_are_ranked_as_listed_and_a_dataset_needs_no_files():
    data = tiny_dataset()
    before = copy.deepcopy(data)
    ids = {"q1": ["d3", "d4", "d1"], "q2": ("d2",), "q3": ["d4", "d4"]}
    kept = copy.deepcopy(ids)
    said = []
    result = evaluate(data, ["bm25"], first_stage=ids, candidates=2, note=said.append)
    shown = result.collections[0].shown
    assert [c["id"] for c in shown["q1"]] == ["d3", "d4"]  # cut to candidates=2
    assert [c["first_stage_score"] for c in shown["q1"]] == [0.0, -1.0]  # by position
    assert [c["id"] for c in shown["q3"]] == ["d4"]  # listed twice: ranked once
    assert any("listed again" in line for line in said)
    assert ids == kept and data == before


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"q1": [("d1", 2.0), ("d7", 1.0)]}, r"query 'q1', entry 1: document 'd7' is not in"),
        ({"q1": "d1 d2"}, r"query 'q1': expected a list of doc ids or \(doc id, score\) pairs"),
        ({"q1": [("d1", 2.0, 3)]}, r"query 'q1', entry 0: expected a doc id or a \(doc id, score"),
        ({"q1": [("d1", "high")]}, r"query 'q1', entry 0 \('d1'\): the score must be a number"),
        ({"q1": [("d1", 2.0), "d2"]}, r"query 'q1', entry 1: a bare id after pairs"),
        ({"q1": [(None, 2.0)]}, r"query 'q1', entry 0: doc id None: expected a string or"),
        ({True: ["d1"]}, r"query id True: expected a string or an integer"),
        ({1: ["d1"], "1": ["d2"]}, r"query '1' is given twice"),
        ({"q9": ["d1"]}, r"none of its 1 query ids is among the 3 queries"),
    ],
)
def test_a_mistake_names_the_query_and_the_entry(given, said):
    with pytest.raises(InputError, match=said):
        evaluate(tiny_dataset(), "bm25", first_stage=given)


def test_a_mistake_in_a_query_of_another_collection_is_skipped_as_a_files_line_is(tmp_path):
    data = tiny_dataset()
    data.query_ids = frozenset(data.queries)  # as load_beir gives it
    got = first_stage(data, {"q1": ["d1"], "other": ["not-in-this-corpus"]})
    assert got["q1"] == [("d1", 0.0)] and "other" not in got


def test_a_dataframe_is_refused_with_how_to_group_it():
    class Frame:  # what matters of a DataFrame: not a mapping, has groupby
        def groupby(self, key):
            raise AssertionError("not called")

    with pytest.raises(InputError, match=r"got Frame; from a DataFrame .*groupby"):
        evaluate(tiny_dataset(), "bm25", first_stage=Frame())
