"""Mistakes in a judged collection that change a metric without an error are said, once per
file, naming the file (and the lines), and kept in ``Dataset.notes``; the metrics then read
the data as the note says."""

from __future__ import annotations

import json
import logging

import pytest

from rerankit.cli.main import main
from rerankit.errors import InputError
from rerankit.eval import load_beir, load_qrels
from rerankit.eval.metrics import ndcg_at_k

HEAD = "query-id\tcorpus-id\tscore\n"


def _collection(folder, *, qrels, corpus=None, queries=None):
    (folder / "qrels").mkdir(parents=True)
    docs = corpus or [
        {"_id": "d1", "text": "alpha"},
        {"_id": "d2", "text": "beta"},
        {"_id": "d3", "text": "gamma"},
    ]
    asked = queries or [{"_id": "q1", "text": "alpha"}, {"_id": "q2", "text": "beta"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in asked))
    (folder / "qrels" / "test.tsv").write_text(HEAD + qrels)
    return folder


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_relevant_judged_document_missing_from_the_corpus_is_said_and_still_counts(
    tmp_path, caplog
):
    folder = _collection(tmp_path, qrels="q1\td1\t2\nq1\td99x\t1\nq2\td2\t1\nq2\td98\t0\n")
    caplog.set_level(logging.WARNING)
    data = load_beir(folder)
    qrels = folder / "qrels" / "test.tsv"
    # d98 is graded 0: it changes no metric and is not mentioned
    assert data.notes == [
        f"{qrels}: 1 relevant judged document is not in corpus.jsonl ('d99x'); it counts as "
        "relevant and never retrieved (in the ideal ranking of nDCG and in recall's "
        "denominator)"
    ]
    assert _warnings(caplog) == data.notes  # logged once, as read
    # by design, as trec_eval: the missing document stays in the ideal ranking
    assert data.qrels["q1"] == {"d1": 2, "d99x": 1}
    assert ndcg_at_k(["d1"], data.qrels["q1"]) < 1.0


def test_several_missing_documents_are_counted_with_a_sample(tmp_path):
    rows = "".join(f"q1\tx{i}\t1\n" for i in range(5)) + "q1\td1\t1\n"
    data = load_beir(_collection(tmp_path, qrels=rows))
    assert (
        "5 relevant judged documents are not in corpus.jsonl ('x0', 'x1', 'x2', ...); "
        in (data.notes[0])
    )
    assert "they count as relevant" in data.notes[0]


def test_a_pair_judged_twice_with_different_grades_names_both_lines_and_the_later_wins(
    tmp_path, caplog
):
    # line 2 and line 4 disagree; line 5 repeats line 3 with the same grade: nothing to say
    rows = "q1\td1\t0\nq1\td2\t1\nq1\td1\t2\nq1\td2\t1\n"
    folder = _collection(tmp_path, qrels=rows)
    caplog.set_level(logging.WARNING)
    data = load_beir(folder)
    assert data.qrels["q1"] == {"d1": 2, "d2": 1}
    assert data.notes == [
        f"{folder / 'qrels' / 'test.tsv'}: query 'q1' judges document 'd1' twice with "
        "different grades (line 2: 0, line 4: 2); the later line's grade is used"
    ]
    assert _warnings(caplog) == data.notes


def test_negative_grades_are_read_as_not_relevant_with_a_note_naming_the_line(tmp_path):
    folder = _collection(tmp_path, qrels="q1\td1\t2\nq1\td2\t-1\nq2\td2\t1\nq2\td3\t-2\n")
    data = load_beir(folder)
    assert data.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1, "d3": 0}}
    assert data.notes == [
        f"{folder / 'qrels' / 'test.tsv'}: 2 judgments have a negative grade (line 3: query "
        "'q1', document 'd2', -1); negative grades are read as 0, not relevant, as TREC "
        "counts them"
    ]
    # a negative grade never lowers nDCG below what showing a non-relevant document gives
    assert ndcg_at_k(["d2", "d1"], data.qrels["q1"]) == ndcg_at_k(["d3", "d1"], data.qrels["q1"])


def test_load_qrels_alone_logs_what_it_reads_past(tmp_path, caplog):
    path = tmp_path / "test.tsv"
    path.write_text("q1 0 d1 1\nq1 0 d1 3\nq1 0 d2 -1\n")
    caplog.set_level(logging.WARNING)
    assert load_qrels(path) == {"q1": {"d1": 3, "d2": 0}}
    said = _warnings(caplog)
    assert len(said) == 2 and "(line 1: 1, line 2: 3)" in said[0] and "line 3" in said[1]


def test_an_id_on_two_lines_of_the_corpus_or_queries_is_said_and_the_last_is_used(tmp_path):
    corpus = [
        {"_id": "d1", "text": "alpha"},
        {"_id": "d2", "text": "beta"},
        {"_id": "d1", "text": "alpha again"},
        {"_id": "d2", "text": "beta"},
    ]
    queries = [{"_id": "q1", "text": "first"}, {"_id": "q1", "text": "second"}]
    folder = _collection(tmp_path, qrels="q1\td1\t1\n", corpus=corpus, queries=queries)
    data = load_beir(folder)
    assert data.corpus["d1"]["text"] == "alpha again" and data.queries == {"q1": "second"}
    assert data.notes == [
        f"{folder / 'corpus.jsonl'}: document 'd1' is on lines 1 and 3 (2 ids in all); the "
        "last of them is used",
        f"{folder / 'queries.jsonl'}: query 'q1' is on lines 1 and 2; the last of them is used",
    ]


@pytest.mark.parametrize("split", ["test", "test:odd"])
def test_a_clean_collection_has_nothing_to_say(tmp_path, caplog, split):
    folder = _collection(tmp_path, qrels="q1\td1\t2\nq1\td2\t0\nq2\td2\t1\n")
    caplog.set_level(logging.WARNING)
    assert load_beir(folder, split).notes == [] and _warnings(caplog) == []


def test_the_commands_say_the_notes_on_stderr_and_eval_keeps_them_in_results_json(tmp_path, capsys):
    from rerankit.cli import main

    folder = _collection(tmp_path / "data", qrels="q1\td1\t2\nq1\td99x\t1\nq2\td2\t1\n")
    said = (
        f"rerankit: warning: {folder / 'qrels' / 'test.tsv'}: 1 relevant judged document is "
        "not in corpus.jsonl ('d99x')"
    )
    argv = ["eval", "--data", str(folder), "--rerankers", "bm25", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    assert said in capsys.readouterr().err
    notes = json.loads((tmp_path / "out" / "results.json").read_text())["notes"]
    assert notes == load_beir(folder).notes and "'d99x'" in notes[0]
    argv = ["batch", "--data", str(folder), "-r", "bm25", "--out", str(tmp_path / "b.jsonl")]
    assert main(argv) == 0
    err = capsys.readouterr().err  # batch computes no nDCG or recall: nothing to say of them
    assert "relevant judged document" not in err and "warning" not in err
    assert "2 rows" in err  # both judged queries reranked


def test_two_qrels_files_joined_with_cat_read_as_one_and_the_later_grade_wins(tmp_path):
    """`cat labels/qrels/train.tsv judged/qrels/train.tsv`: the second header is skipped."""
    labels = "q1\td1\t2\nq1\td2\t0\n"  # _collection writes the header first
    judged = HEAD + "q1\td2\t1\nq2\td3\t1\n"
    folder = _collection(tmp_path, qrels=labels + judged)
    data = load_beir(folder)
    assert data.qrels == {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}}
    assert data.notes == [
        f"{folder / 'qrels' / 'test.tsv'}: query 'q1' judges document 'd2' twice with "
        "different grades (line 3: 0, line 5: 1); the later line's grade is used"
    ]


def test_id_is_read_as_well_as_beirs_underscore_id(tmp_path):
    corpus = [{"id": "d1", "text": "alpha"}, {"_id": "d2", "text": "beta"}]
    queries = [{"id": "q1", "text": "alpha"}, {"_id": "q2", "id": "q2", "text": "beta"}]
    data = load_beir(
        _collection(tmp_path, qrels="q1\td1\t1\nq2\td2\t1\n", corpus=corpus, queries=queries)
    )
    assert set(data.corpus) == {"d1", "d2"}
    assert data.queries == {"q1": "alpha", "q2": "beta"}
    assert data.notes == []


def test_a_row_with_both_ids_that_differ_is_refused(tmp_path):
    corpus = [{"_id": "d1", "id": "d9", "text": "alpha"}, {"_id": "d2", "text": "beta"}]
    folder = _collection(tmp_path, qrels="q1\td1\t1\n", corpus=corpus)
    with pytest.raises(
        InputError, match=r"corpus\.jsonl:1: the document has both '_id' \('d1'\) and 'id' \('d9'\)"
    ):
        load_beir(folder)


def test_a_missing_split_names_the_splits_there_and_how_to_read_one(tmp_path, capsys):
    folder = _collection(tmp_path / "data", qrels="q1\td1\t1\n")
    (folder / "qrels" / "test.tsv").rename(folder / "qrels" / "dev.tsv")
    with pytest.raises(InputError, match=r"splits found: dev; read one with split='dev'"):
        load_beir(folder)
    assert main(["eval", "--data", str(folder), "-r", "bm25", "--no-progress"]) != 0
    assert "splits found: dev; read one with --split dev" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", HEAD, HEAD + "\n\n"])
def test_a_split_with_no_judgment_says_so_not_that_queries_are_missing(tmp_path, content):
    folder = _collection(tmp_path / "data", qrels="q1\td1\t1\n")
    (folder / "qrels" / "empty.tsv").write_text(content)
    with pytest.raises(InputError) as error:
        load_beir(folder, split="empty")
    said = str(error.value)
    # before: "none of its 0 query ids () is in queries.jsonl", blaming queries.jsonl
    assert said.startswith(f"{folder / 'qrels' / 'empty.tsv'}: holds no judgment")
    assert "query-id<TAB>corpus-id<TAB>score" in said and "queries.jsonl" not in said


def test_a_half_that_keeps_no_query_says_which_half_and_how_many_the_split_has(tmp_path):
    folder = _collection(tmp_path / "data", qrels="q1\td1\t1\n")  # one judged query
    with pytest.raises(InputError) as error:
        load_beir(folder, split="test:even")
    said = str(error.value)
    assert "test:even keeps none of the 1 judged query of" in said
    assert "none of its" not in said


def test_a_qrels_file_not_named_tsv_is_named_with_the_rename_it_needs(tmp_path, capsys):
    folder = _collection(tmp_path / "data", qrels="q1\td1\t1\n")
    (folder / "qrels" / "test.tsv").rename(folder / "qrels" / "test.txt")
    with pytest.raises(InputError, match=r"found qrels/test\.txt: name it qrels/test\.tsv"):
        load_beir(folder)
    assert main(["eval", "--data", str(folder), "-r", "bm25", "--no-progress"]) == 1
    assert "found qrels/test.txt: name it qrels/test.tsv" in capsys.readouterr().err


def test_broken_json_says_where_on_the_line_and_what_a_row_of_that_file_looks_like(tmp_path):
    folder = _collection(tmp_path / "data", qrels="q1\td1\t1\n")
    with (folder / "corpus.jsonl").open("a") as f:
        f.write('{"_id": "d4", "text": "broken\n')
    with pytest.raises(InputError) as error:
        load_beir(folder)
    # before: "invalid JSON: Unterminated string starting at", the position cut off
    assert str(error.value) == (
        f"{folder / 'corpus.jsonl'}:4: invalid JSON: Unterminated string starting at column 23"
    )
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "alpha"}\n')
    with (folder / "queries.jsonl").open("a") as f:
        f.write("what is beta\n")  # plain text
    with pytest.raises(InputError) as error:
        load_beir(folder)
    said = str(error.value)
    # before: the hint showed a document ({"id": "d1", ...}) and spoke of documents
    assert said.startswith(
        f"{folder / 'queries.jsonl'}:3: invalid JSON: Expecting value at column 1"
    )
    assert '{"_id": "q1", "text": "..."}' in said and "documents" not in said
