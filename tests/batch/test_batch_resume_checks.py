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
    txt = tmp_path / "in.txt"
    txt.write_text(src.read_text())
    base = ["-r", "bm25", "--no-progress"]
    cases = {
        "already holds 4 rows": ["-i", str(src), "--out", str(out)],
        "more than the 2 of": ["-i", str(other), "--out", str(out), "--resume"],
        "does not match": ["-i", str(shifted), "--out", str(out), "--resume"],
        "needs a .jsonl --out": ["-i", str(src), "--out", str(tmp_path / "o.parquet"), "--resume"],
        "not both": ["-i", str(src), "--out", str(out), "--resume", "--overwrite"],
        "or a Parquet file (.parquet, .pq) (got '.csv')": [
            "-i",
            str(src),
            "--out",
            str(out) + ".csv",
        ],
        "in.txt: use a JSON Lines file (.jsonl": [
            "-i",
            str(txt),
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
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
    for changed, named in (
        (["--text-fields", "body,title", "--top-k", "1"], "an option differs: the text fields"),
        (["--text-fields", "title,body"], "an option differs: --top-k (1 there, not set here)"),
        (
            ["--text-fields", "title,body", "--top-k", "1", "--no-candidates"],
            "an option differs: --no-candidates (not given there, given here)",
        ),
    ):
        out.write_text("".join(kept))
        assert main([*base, "--resume", *changed]) == 2, changed
        err = capsys.readouterr().err
        assert f"written by pipeline {tag} (2 rows)" in err and named in err, err
        assert out.read_text() == "".join(kept)  # nothing appended
    from rerankit import InputFields

    summary = run_batch(
        src, out, "bm25", resume=True, top_k=1, fields=InputFields(text_fields=("title", "body"))
    )
    assert summary.skipped == 2 and [r["reranked_by"] for r in lines(out)] == [tag] * 4


def test_a_refusal_names_the_option_that_differs(tmp_path, capsys):
    """--quantize (as --backend and --language) is named with both values, not a list of
    what could have changed; the refusal comes before any model is loaded."""
    from rerankit.batch.resume import pipeline_settings, pipeline_tag

    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    hybrid = {"reranked_by": pipeline_tag("hybrid"), "reranked_with": pipeline_settings("hybrid")}
    write_jsonl(out, [{**row, **hybrid} for row in lines(out)[:2]])  # as `-r hybrid` wrote it
    base = ["batch", "-i", str(src), "--out", str(out), "--resume", "--no-progress"]
    assert main([*base, "-r", "hybrid", "--quantize", "int8"]) == 2
    err = capsys.readouterr().err
    assert 'an option differs: --quantize (not set there, "int8" here)' in err, err
    assert main([*base, "-r", "bm25"]) == 2
    assert "the reranker differs (hybrid there, bm25 here)" in capsys.readouterr().err
    old = [{k: v for k, v in r.items() if k != "reranked_with"} for r in lines(out)]
    write_jsonl(out, old)  # written before rerankit recorded the settings: the list
    assert main([*base, "-r", "hybrid", "--quantize", "int8"]) == 2
    assert "--top-k, the text fields" in capsys.readouterr().err


NIGHT = [
    {
        "query_id": f"q{i}",
        "query": f"capital {i}",
        "candidates": [{"id": "a", "text": "Paris capital"}, {"id": f"b{i}", "text": f"x {i}"}],
    }
    for i in range(4)
]


def test_resuming_onto_rows_ranked_from_other_candidates_is_refused(tmp_path, capsys):
    """A nightly job: the same query ids and queries, tonight's candidates, last night's
    --out. Resuming would keep last night's rankings: refused (exit 2), naming the first
    changed query and both ways on; rows whose candidates are unchanged resume."""
    src, out = write_jsonl(tmp_path / "in.jsonl", NIGHT), tmp_path / "out.jsonl"
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--no-progress"]
    assert main([*args, "--no-candidates"]) == 0
    night = out.read_text()
    tonight = json.loads(json.dumps(NIGHT))
    tonight[2]["candidates"][1]["id"] = "new"  # one other document id, same text
    tonight[3]["candidates"][0]["text"] = "Paris is the capital"  # one other text
    write_jsonl(src, tonight)
    assert main([*args, "--no-candidates", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "was ranked from other candidates" in err and "its row 3, query_id 'q2'" in err
    assert "2 of the 4 rows written have changed" in err
    assert "a new --out" in err and "--overwrite" in err
    assert out.read_text() == night  # kept as it was
    with pytest.raises(InputError, match="query_id 'q2'"):
        run_batch(src, out, "bm25", resume=True, keep_candidates=False)
    write_jsonl(out, lines(out)[:2])  # stopped after the two rows that did not change
    assert main([*args, "--no-candidates", "--resume"]) == 0  # they resume
    assert len(lines(out)) == 4 and "2 rows already written, skipped" in capsys.readouterr().err


def test_an_earlier_rerankit_s_output_is_checked_by_the_candidates_it_holds(tmp_path, capsys):
    """Rows written before rerankit kept a digest: those that hold their candidates are
    compared by them; those written with --no-candidates cannot be, and resume as before
    with a warning."""
    src, out = write_jsonl(tmp_path / "in.jsonl", NIGHT), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    old = [{k: v for k, v in r.items() if k != "candidates_digest"} for r in lines(out)]
    write_jsonl(out, old)
    changed = json.loads(json.dumps(NIGHT))
    changed[1]["candidates"][1]["text"] = "other"
    write_jsonl(src, changed)
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--no-progress", "--resume"]
    assert main(args) == 2
    assert "its row 2, query_id 'q1'" in capsys.readouterr().err
    write_jsonl(src, NIGHT)
    run_batch(src, out, "bm25", overwrite=True, keep_candidates=False)
    blind = [{k: v for k, v in r.items() if k != "candidates_digest"} for r in lines(out)]
    write_jsonl(src, changed)
    write_jsonl(out, blind)  # as --no-candidates wrote it: nothing to compare
    assert run_batch(src, out, "bm25", resume=True, keep_candidates=False).skipped == 4
    write_jsonl(out, blind)
    assert main([*args, "--no-candidates"]) == 0
    assert "4 of them record neither their candidates nor a digest" in capsys.readouterr().err
