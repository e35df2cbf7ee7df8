"""What ``rerankit batch`` computes besides the rows, from Python: the summary file
(``BatchSummary.write``), a file's row count (``total_rows``) and its rows' candidates
(``row_candidates``)."""

from __future__ import annotations

import io
import json

import pytest

from rerankit.batch import BatchSummary, row_candidates, total_rows
from rerankit.errors import InputError, flags_first


def _jsonl(path, rows, tail="\n"):
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + tail)
    return path


def test_the_summary_writes_its_dict_as_utf8_json(tmp_path):
    summary = BatchSummary()
    summary.count({"error": "no 'query' field in '本文'", "degraded": False}, {"calls": 2})
    summary.count({"error": None, "degraded": True}, {"calls": 1})
    written = summary.write(tmp_path / "summary.json")
    assert written == tmp_path / "summary.json"
    raw = written.read_bytes()
    assert raw.endswith(b"}\n") and "'本文'".encode() in raw and b"\\u" not in raw
    assert json.loads(raw) == summary.to_dict()
    assert json.loads(raw)["usage"] == {"calls": 3} and json.loads(raw)["degraded"] == 1


def test_a_summary_with_a_lone_surrogate_escapes_its_non_ascii(tmp_path):
    summary = BatchSummary()
    summary.count({"error": "bad \ud800 本文", "degraded": False}, {})
    raw = summary.write(str(tmp_path / "odd.json")).read_bytes()
    assert raw.isascii() and b"\\ud800" in raw
    assert json.loads(raw)["errors"] == ["bad \ud800 本文"]


def test_total_rows_counts_a_jsonl_files_lines_with_or_without_the_last_line_end(tmp_path):
    rows = [{"query": f"q{i}", "candidates": ["a"]} for i in range(5)]
    assert total_rows(_jsonl(tmp_path / "a.jsonl", rows)) == 5
    assert total_rows(str(_jsonl(tmp_path / "b.jsonl", rows, tail=""))) == 5
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert total_rows(tmp_path / "empty.jsonl") == 0


def test_total_rows_reads_a_parquet_files_metadata(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pylist([{"query": f"q{i}", "candidates": ["a"]} for i in range(7)])
    pq.write_table(table, tmp_path / "rows.parquet", row_group_size=3)
    assert total_rows(tmp_path / "rows.parquet") == 7


def test_total_rows_is_none_when_not_known(tmp_path):
    assert total_rows(tmp_path / "absent.jsonl") is None
    assert total_rows(io.StringIO('{"query": "q"}\n')) is None  # standard input
    assert total_rows(iter([{"query": "q"}])) is None  # rows in memory
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    assert total_rows(tmp_path / "broken.parquet") is None


def test_row_candidates_yields_each_rows_candidates_by_the_field_named(tmp_path):
    rows = [
        {"qid": "q1", "passages": ["one", {"text": "two", "pid": "p2"}]},
        {"qid": "q2", "passages": [{"text": "three"}]},
    ]
    path = _jsonl(tmp_path / "rows.jsonl", rows)
    got = list(row_candidates(path, candidates_field="passages"))
    assert got == ["one", {"text": "two", "pid": "p2"}, {"text": "three"}]


def test_an_unreadable_line_has_no_candidates_and_is_not_the_row_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"query": "q1", "candidates": \n{"query": "q2", "candidates": ["a"]}\n')
    assert list(row_candidates(path)) == ["a"]


def test_rows_without_the_field_are_refused_naming_the_first_rows_fields(tmp_path):
    rows = [{"qid": "q1", "question": "x", "passages": ["a"], "_line": 1}]
    path = _jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(InputError) as raised:
        list(row_candidates(path))
    assert str(raised.value) == (
        f"{path}: no row has a 'candidates' field (the candidates; fields present in the "
        "first: 'qid', 'question', 'passages'); name yours with candidates_field= (and "
        "query_field=, query_id_field=)"
    )
    with flags_first("batch"), pytest.raises(InputError) as raised:  # the command's words
        list(row_candidates(path, "docs"))
    assert str(raised.value).endswith(
        "no row has a 'docs' field (the candidates; fields present in the first: 'qid', "
        "'question', 'passages'); name yours with --candidates-field (and --query-field, "
        "--query-id-field)"
    )


def test_rows_of_nothing_but_private_fields_say_none(tmp_path):
    path = _jsonl(tmp_path / "rows.jsonl", [{"_mine": 1}])
    with pytest.raises(InputError, match=r"fields present in the first: none\)"):
        list(row_candidates(path))


def test_one_row_without_the_field_among_rows_with_it_is_not_refused(tmp_path):
    rows = [{"query": "a b", "candidates": [{"text": "a"}]}, {"query": "c", "passages": ["c"]}]
    path = _jsonl(tmp_path / "rows.jsonl", rows)
    assert list(row_candidates(path)) == [{"text": "a"}]  # row 2 fails on its own when ranked


def test_batch_with_id_field_names_the_absent_id_not_absent_candidates(tmp_path, capsys):
    from rerankit.cli import main

    rows = [{"query": "a b", "candidates": [{"text": "a"}]}, {"query": "c", "passages": ["c"]}]
    src = _jsonl(tmp_path / "rows.jsonl", rows)
    args = ["batch", "-i", str(src), "-o", str(tmp_path / "out.jsonl"), "-r", "bm25"]
    assert main([*args, "--id-field", "pid"]) == 2
    err = capsys.readouterr().err
    assert "no document there has a 'pid' field (fields present: 'text')" in err
    assert "no row has" not in err
