"""What a nightly batch job reads back: the exit status (0 all ranked, 3 some rows failed,
1 every row failed, 2 a refused --out), row-level field names (--query-field, ...), rows on
standard input, progress lines on stderr, rows written one by one, SIGTERM handled as
Ctrl-C, and the messages of bad rows."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal

import pytest

from rerankit import register_reranker, registry
from rerankit.batch import run_batch
from rerankit.cli import console, main
from rerankit.errors import InputError
from rerankit.rerankers.base import Reranker
from rerankit.scorers import BM25Scorer
from rerankit.types import RerankResult

GOOD = {"query_id": "q1", "query": "capital", "candidates": ["Paris capital", "x"]}
BAD = {"query_id": "q2", "query": "", "candidates": ["x"]}
MINE = {"qid": "q1", "question": "capital", "passages": [{"pid": "p1", "body": "Paris capital"}]}
MAPPED = ["--query-field", "question", "--query-id-field", "qid", "--candidates-field", "passages"]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def batch(src, out, *extra):
    return main(["batch", "-i", str(src), "--out", str(out), "-r", "bm25", *extra])


@pytest.mark.parametrize(("rows", "code"), [([GOOD, GOOD], 0), ([GOOD, BAD], 3), ([BAD, BAD], 1)])
def test_the_exit_status_tells_all_ranked_some_failed_and_all_failed_apart(tmp_path, rows, code):
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    assert batch(src, tmp_path / "out.jsonl", "--no-progress") == code


def test_an_out_that_holds_rows_is_a_usage_error_worded_for_the_shell(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD]), tmp_path / "out.jsonl"
    assert batch(src, out) == 0
    assert batch(src, out) == 2
    err = capsys.readouterr().err
    assert "pass --resume to skip them" in err and "resume=True" not in err
    with pytest.raises(InputError, match=r"--resume \(resume=True\)"):  # Python's words
        run_batch(src, out, "bm25")


def test_row_fields_are_named_by_flags_and_keywords_and_kept_in_the_output(tmp_path):
    src, out = write_jsonl(tmp_path / "in.jsonl", [MINE, MINE]), tmp_path / "out.jsonl"
    assert batch(src, out, *MAPPED, "--text-field", "body", "--id-field", "pid") == 0
    got = lines(out)
    assert got[0]["qid"] == "q1" and "query" not in got[0]
    assert got[0]["results"][0]["id"] == "p1" and got[0]["error"] is None
    names = {"query_field": "question", "query_id_field": "qid", "candidates_field": "passages"}
    summary = run_batch(iter([MINE]), out, "bm25", overwrite=True, text_field="body", **names)
    assert summary.rows == 1 and not summary.failures
    out.write_text(out.read_text() + '{"qid": "q1", "quest')  # a cut last line
    src1 = write_jsonl(tmp_path / "one_more.jsonl", [MINE, MINE])
    notes = []
    summary = run_batch(
        src1, out, "bm25", resume=True, note=notes.append, text_field="body", **names
    )
    assert summary.skipped == 1 and summary.rows == 1
    assert "cut short" in notes[0] and "dropped" in notes[0]


def test_rows_without_the_fields_say_which_is_missing_and_list_the_keys(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", [MINE]), tmp_path / "out.jsonl"
    assert batch(src, out, "--text-field", "body", "--id-field", "pid") == 1
    err = capsys.readouterr().err
    assert "no row has a 'candidates' field" in err and "'passages'" in err
    assert "--candidates-field" in err and "no document is an object" not in err
    assert batch(src, out, "--candidates-field", "passages", "--text-field", "body") == 1
    row = lines(out)[0]
    assert "no 'query' field" in row["error"] and "'question'" in row["error"]
    assert "--query-field" in row["error"]


def test_dash_reads_rows_from_standard_input(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(GOOD) + "\n\n" + json.dumps(GOOD)))
    out = tmp_path / "out.jsonl"
    assert (
        main(
            [
                "batch",
                "-i",
                "-",
                "--out",
                str(out),
                "-r",
                "bm25",
                "--summary",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert [r["query_id"] for r in lines(out)] == ["q1", "q1"]
    assert json.loads((tmp_path / "s.json").read_text())["blank_lines"] == 1


def test_progress_lines_go_to_stderr_only_and_no_progress_stops_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.0)
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD, BAD, GOOD]), tmp_path / "out.jsonl"
    assert batch(src, out) == 3
    captured = capsys.readouterr()
    assert "rerankit: batch: 2/3 rows" in captured.err and "1 failed" in captured.err
    assert captured.out == ""
    assert batch(src, out, "--overwrite", "--no-progress") == 3
    assert "rerankit: batch:" not in capsys.readouterr().err


def test_progress_says_no_time_left_after_the_last_row_and_help_says_what_it_prints(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.0)
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD, GOOD, GOOD]), tmp_path / "out.jsonl"
    assert batch(src, out) == 0
    err = capsys.readouterr().err
    assert "rerankit: batch: 2/3 rows" in err
    assert "3/3 rows" not in err  # no "about 0m00s left" after the last row: the summary
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a line at most every 10 seconds, on a terminal or not" in text
    assert "a bar on a terminal" not in text


def test_each_row_is_on_disk_before_the_next_is_reranked(tmp_path):
    out = tmp_path / "out.jsonl"
    seen = []

    class Looks(BM25Scorer):
        async def score(self, query, docs, **context):
            seen.append(out.read_text().count("\n") if out.exists() else 0)
            return await super().score(query, docs, **context)

    run_batch([GOOD] * 4, out, Looks())  # the default batch_size, 16
    assert seen == [0, 1, 2, 3]


def test_batch_size_without_ray_is_said_to_have_no_effect(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD]), tmp_path / "out.jsonl"
    assert batch(src, out, "--batch-size", "4") == 0
    assert "--batch-size has no effect without --engine ray" in capsys.readouterr().err


def test_stderr_counts_the_failures_it_does_not_list_and_the_rows_with_warnings(tmp_path, capsys):
    empty = {"query": "x", "candidates": []}  # ranked, with a warning
    rows = [BAD] * 5 + [empty, GOOD]
    src, out = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    assert batch(src, out, "--summary", str(tmp_path / "s.json")) == 3
    err = capsys.readouterr().err
    assert err.count("  error: ") == 3 and "... and 2 more (see " in err
    assert "1 with warnings" in err
    assert json.loads((tmp_path / "s.json").read_text())["warned"] == 1


def test_bad_rows_are_said_as_they_are(tmp_path):
    null = {"query": "q", "candidates": [{"body": None, "id": 1}]}
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(null) + '\n{"query": "x", "candidates": ["a\tb"]}\n')
    assert batch(src, out, "--text-field", "body") == 1
    first, second = (r["error"] for r in lines(out))
    assert "candidates[0] (id 1): text field 'body' is null: give it its text" in first
    assert "at at" not in second and "not JSON (Invalid control character at column" in second


def test_a_line_cut_off_mid_value_is_placed_at_its_real_column(tmp_path):
    cut = '{"query_id": "cut", "query": "x", "candidates": [ '  # a nightly file's last line
    with pytest.raises(json.JSONDecodeError) as python:
        json.loads(cut)
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(cut + "\n")
    assert batch(src, out) == 1
    [row] = lines(out)
    assert python.value.colno == len(cut) + 1
    assert row["error"] == f"{src}:1: not JSON (Expecting value at column {len(cut) + 1})"


class _Terminates(Reranker):
    """A pipeline that receives SIGTERM (as from a scheduler) while its second row runs."""

    name = "terminates"
    score_scale = "relative"
    calls = 0

    async def arerank(self, query, documents, top_k=None, **kwargs):
        _Terminates.calls += 1
        if _Terminates.calls == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return RerankResult(query)

    async def _rank(self, query, docs, **kwargs):  # (arerank above answers)
        raise NotImplementedError


def test_sigterm_ends_like_ctrl_c_with_the_summary_and_exit_143(tmp_path, capsys, monkeypatch):
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD] * 4), tmp_path / "out.jsonl"
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("terminates", _Terminates)
    before = signal.getsignal(signal.SIGTERM)
    summary = tmp_path / "s.json"
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "terminates"]
    assert main([*args, "--summary", str(summary)]) == 143
    err = capsys.readouterr().err
    assert "terminated (SIGTERM): 1 row in" in err and "--resume" in err
    assert json.loads(summary.read_text())["interrupted"] is True
    assert signal.getsignal(signal.SIGTERM) is before
    assert main([*args, "--resume", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "rerankit batch: " in err and "rerankit: rerankit batch:" not in err
    assert "1 row already written, skipped" in err


def test_a_stopped_parquet_run_says_to_start_again_not_to_resume(tmp_path, capsys, monkeypatch):
    """A Parquet --out cannot be resumed (--resume is refused, exit 2): the line a stopped
    run ends with gives the command that works, with --overwrite, and that command runs."""
    pytest.importorskip("pyarrow", reason="Parquet needs the 'parquet' extra")
    src, out = write_jsonl(tmp_path / "in.jsonl", [GOOD] * 4), tmp_path / "out.parquet"
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("terminates", _Terminates)
    monkeypatch.setattr(_Terminates, "calls", 0)
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "terminates", "--no-progress"]
    assert main(args) == 143
    err = capsys.readouterr().err
    assert "a Parquet --out cannot be resumed (write .jsonl for that); start again with" in err
    again = shlex.split(err.split("start again with: ")[1])
    assert again[-1] == "--overwrite" and "--resume" not in again, again
    assert main([*args, "--resume"]) == 2  # what the line used to say
    capsys.readouterr()
    assert main(again[1:]) == 0  # _Terminates stops only its second call


def test_a_candidate_without_a_usable_text_fails_its_row_with_what_to_do(tmp_path):
    """A missing, null or non-string text fails the row (bad input is an error); the error
    names the query, the candidate's index and id, and says what to do: --text-field only
    when no candidate of the row has the field."""
    ok = {"id": "d2", "text": "y"}
    rows = [
        {"query_id": "one", "query": "q", "candidates": [{"id": "d1", "body": "x"}, ok]},
        {"query_id": "all", "query": "q", "candidates": [{"id": "d1", "body": "x"}]},
        {"query_id": "null", "query": "q", "candidates": [ok, {"id": "d1", "text": None}]},
        {"query_id": "num", "query": "q", "candidates": [ok, {"id": 7, "text": 3}]},
    ]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert batch(src, out) == 1
    one, every, null, num = (r["error"] for r in lines(out))
    give = 'give it its text ("" when it has none: ranked, with the flag empty_content)'
    assert one.startswith(f"{src}:1: query 'one': candidates[0] (id 'd1'): no text field 'text'")
    assert "which other candidates of the row have" in one and give in one
    assert "--text-field" not in one
    assert every.startswith(f"{src}:2: query 'all': candidates[0] (id 'd1'): missing text field")
    assert "--text-field NAME" in every  # no candidate has it: the field is named otherwise
    assert null.startswith(f"{src}:3: query 'null': candidates[1] (id 'd1'): text field 'text'")
    assert "is null: " + give in null
    assert num.startswith(f"{src}:4: query 'num': candidates[1] (id 7): text field 'text' must")
    assert give in num


def test_the_summary_line_counts_one_blank_line_in_the_singular(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(GOOD) + "\n")
    args = ["batch", "-i", str(src), "--out", str(tmp_path / "o.jsonl"), "-r", "bm25"]
    assert main([*args, "--no-progress"]) == 0
    assert "; 1 blank line skipped" in capsys.readouterr().err
    src.write_text(json.dumps(GOOD) + "\n\n\n" + json.dumps(GOOD) + "\n")
    assert main([*args, "--no-progress", "--overwrite"]) == 0
    assert "; 2 blank lines skipped" in capsys.readouterr().err


def test_the_rate_and_time_left_count_from_the_first_block_not_the_start(capsys, monkeypatch):
    """Ray's start-up (a minute here) before its first block of 16 rows: the rate counted
    it (0.52 rows/s, 'about 0m29s left' seconds before the end); measured from the first
    block: the 17 rows written in the 4 s since it landed."""
    from types import SimpleNamespace

    clock = [0.0]
    monkeypatch.setattr(console.time, "perf_counter", lambda: clock[0])
    progress = console.RowProgress(48)
    written = 0
    for landed in (60.0, 62.0):  # each block's 16 rows written within a millisecond
        for i in range(16):
            clock[0] = landed + i * 1e-5
            written += 1
            progress(SimpleNamespace(rows=written, skipped=0, failures=0))
    clock[0], written = 64.0, written + 1  # the third block's first row
    capsys.readouterr()
    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.0)
    progress(SimpleNamespace(rows=written, skipped=0, failures=0))
    line = capsys.readouterr().err.strip()
    assert line == "rerankit: batch: 33/48 rows, 4.25 rows/s, 0 failed, about 0m03s left", line
