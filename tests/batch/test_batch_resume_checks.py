"""What --resume checks before any work: the pipeline that wrote the output (recorded in
each row's ``reranked_by``), and that every refusal of what to do with --out exits 2, a
usage error, as cli.md's exit-status table says."""

from __future__ import annotations

import json

import pytest

from rerankit.batch import run_batch
from rerankit.cli import main
from rerankit.errors import InputError

ROWS = [
    {"query_id": f"q{i}", "query": f"capital {i}", "candidates": ["Paris capital", f"x {i}"]}
    for i in range(4)
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_row_names_its_pipeline_and_resuming_with_another_is_refused(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    kept = out.read_text().splitlines(keepends=True)[:2]
    tag = json.loads(kept[0])["reranked_by"]
    assert tag.startswith("bm25@") and len(tag) == len("bm25@") + 12
    out.write_text("".join(kept))  # a run stopped after two rows
    with pytest.raises(InputError) as caught:
        run_batch(src, out, "text", resume=True)
    message = str(caught.value)
    assert f"written by pipeline {tag} (2 rows)" in message
    assert "this run's is text@" in message and "--overwrite" in message
    assert out.read_text() == "".join(kept)  # nothing appended
    args = ["batch", "-i", str(src), "--out", str(out), "--resume", "--no-progress"]
    assert main([*args, "-r", "text"]) == 2  # a refusal before any work
    assert "written by pipeline bm25@" in capsys.readouterr().err
    assert main([*args, "-r", "bm25"]) == 0  # the same pipeline goes on
    assert [r["reranked_by"] for r in lines(out)] == [tag] * 4


def test_a_pipeline_file_is_told_apart_by_its_contents(tmp_path):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS[:1]), tmp_path / "out.jsonl"
    pipe = tmp_path / "p.toml"
    pipe.write_text('[scorer]\ntype = "bm25"\n')
    run_batch(src, out, str(pipe))
    write_jsonl(src, ROWS[:2])
    moved = tmp_path / "sub" / "p.toml"
    moved.parent.mkdir()
    moved.write_text(pipe.read_text())  # the same pipeline elsewhere: resumed
    assert run_batch(src, out, str(moved), resume=True).skipped == 1
    write_jsonl(src, ROWS[:3])
    pipe.write_text('[scorer]\ntype = "bm25"\nk1 = 2.0\n')  # edited: another pipeline
    with pytest.raises(InputError, match=r"written by pipeline p\.toml@"):
        run_batch(src, out, str(pipe), resume=True)


def test_an_output_of_an_earlier_rerankit_is_resumed_with_a_warning(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    old = [{k: v for k, v in row.items() if k != "reranked_by"} for row in lines(out)[:2]]
    write_jsonl(out, old)  # as the previous version wrote it: no record of its pipeline
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--resume"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "2 rows already written, skipped" in err
    assert "warning: 2 of them record no pipeline, written by an earlier rerankit" in err
    assert len(lines(out)) == 4


def test_every_refusal_of_what_to_do_with_out_exits_2(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    other = write_jsonl(tmp_path / "other.jsonl", ROWS[:2])
    shifted = write_jsonl(tmp_path / "shifted.jsonl", ROWS[1:] + ROWS[:1])
    base = ["-r", "bm25", "--no-progress"]
    cases = {
        "already holds 4 rows": ["-i", str(src), "--out", str(out)],
        "more than the 2 of": ["-i", str(other), "--out", str(out), "--resume"],
        "does not match": ["-i", str(shifted), "--out", str(out), "--resume"],
        "needs a .jsonl --out": ["-i", str(src), "--out", str(tmp_path / "o.parquet"), "--resume"],
        "not both": ["-i", str(src), "--out", str(out), "--resume", "--overwrite"],
    }
    for said, args in cases.items():
        assert main(["batch", *args, *base]) == 2, said
        assert said in capsys.readouterr().err


FIELDED = [
    {
        "query_id": f"q{i}",
        "query": f"capital {i}",
        "candidates": [{"title": "Paris", "body": "capital of France"}, {"title": f"x {i}"}],
    }
    for i in range(4)
]


def test_resuming_with_options_that_change_the_rows_is_refused(tmp_path, capsys):
    """--top-k, --text-fields and --no-candidates change what a row holds: a run resumed
    with other values would mix two kinds of rows; the same values go on, and the library
    and the command give one tag for one run."""
    src, out = write_jsonl(tmp_path / "in.jsonl", FIELDED), tmp_path / "out.jsonl"
    base = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--no-progress"]
    assert main([*base, "--text-fields", "title,body", "--top-k", "1"]) == 0
    tag = lines(out)[0]["reranked_by"]
    kept = out.read_text().splitlines(keepends=True)[:2]
    run_batch(src, tmp_path / "plain.jsonl", "bm25")
    assert tag != lines(tmp_path / "plain.jsonl")[0]["reranked_by"]  # the options count
    for changed in (
        ["--text-fields", "body,title", "--top-k", "1"],
        ["--text-fields", "title,body"],
        ["--text-fields", "title,body", "--top-k", "1", "--no-candidates"],
    ):
        out.write_text("".join(kept))
        assert main([*base, "--resume", *changed]) == 2, changed
        err = capsys.readouterr().err
        assert f"written by pipeline {tag} (2 rows)" in err and "--top-k" in err
        assert out.read_text() == "".join(kept)  # nothing appended
    from rerankit import InputFields

    summary = run_batch(
        src, out, "bm25", resume=True, top_k=1, fields=InputFields(text_fields=("title", "body"))
    )
    assert summary.skipped == 2 and [r["reranked_by"] for r in lines(out)] == [tag] * 4
