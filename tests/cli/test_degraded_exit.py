"""A scorer that raises degrades a ``rank`` or ``batch`` result (the earlier order is kept):
``rank``'s lines say ``"degraded": true`` (``--details`` records say ``degraded`` either
way), ``--strict`` makes it an error for a CI smoke test, and the warning says where the
traceback is."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main
from rerankit.registry import register

DOCS = [{"id": "w", "text": "wind farms"}, {"id": "s", "text": "solar power and solar panels"}]


class Boom:
    """A plugin scorer that reads a field the documents lack."""

    name = "deg_boom"

    async def score(self, query, docs, **context):
        return [d.metadata["boost"] for d in docs]


register("scorer", "deg_boom", Boom)

CASCADE = '[[stages]]\nreranker = "bm25"\n\n[[stages]]\n[stages.scorer]\ntype = "{second}"\n'


@pytest.fixture
def files(tmp_path):
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    broken, fine = tmp_path / "broken.toml", tmp_path / "fine.toml"
    broken.write_text(CASCADE.format(second="deg_boom"))
    fine.write_text(CASCADE.format(second="jaccard"))
    return docs, broken, fine


def _rank(capsys, docs, spec, *flags):
    code = main(["rank", "-q", "solar", "-i", str(docs), "-r", str(spec), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_details_say_whether_the_result_degraded(capsys, files):
    docs, broken, fine = files
    code, out, err = _rank(capsys, docs, broken, "--details")
    assert code == 0, err
    assert [json.loads(line)["degraded"] for line in out.splitlines()] == [True, True]
    code, out, err = _rank(capsys, docs, fine, "--details")
    assert code == 0, err
    assert [json.loads(line)["degraded"] for line in out.splitlines()] == [False, False]


def test_default_lines_mark_a_degraded_ranking_and_only_it(capsys, tmp_path, files):
    """Without --details each line is the input object: a degraded ranking's lines carry
    ``"degraded": true`` (batch rows' and --details records' name), a sound one's none, and
    stderr says it once, so a script reading the lines can tell the fallback's order."""
    docs, broken, fine = files
    code, out, err = _rank(capsys, docs, broken)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["id"], r["degraded"]) for r in lines] == [("s", True), ("w", True)]
    said = [line for line in err.splitlines() if "degraded ranking" in line]
    assert said == [
        "rerankit: warning: degraded ranking: a scorer or stage failed for some documents or "
        "all, or did not finish (the warnings above say which, and what ranked in its place); "
        "each line says "
        '"degraded": true (--strict makes it an error)'
    ], err
    code, out, err = _rank(capsys, docs, fine)
    assert code == 0, err
    assert all("degraded" not in json.loads(line) for line in out.splitlines()), out
    assert "degraded" not in err
    strings = tmp_path / "s.jsonl"  # a string input line comes out as an object too
    strings.write_text("".join(json.dumps(d["text"]) + "\n" for d in DOCS))
    code, out, err = _rank(capsys, strings, broken)
    assert code == 0, err
    assert [json.loads(line)["degraded"] for line in out.splitlines()] == [True, True]
    code, out, err = _rank(capsys, docs, broken, "--format", "table")
    assert code == 0 and "degraded ranking" in err and "each line" not in err, err


def test_an_input_degraded_field_is_said_on_stderr(capsys, tmp_path, files):
    _, broken, fine = files
    docs = tmp_path / "own.jsonl"
    docs.write_text("".join(json.dumps({**d, "degraded": "no"}) + "\n" for d in DOCS))
    code, out, err = _rank(capsys, docs, broken)
    assert code == 0 and {json.loads(line)["degraded"] for line in out.splitlines()} == {True}
    assert "2 input objects already had a 'degraded' field" in err, err
    code, out, err = _rank(capsys, docs, fine)
    assert code == 0 and {json.loads(line)["degraded"] for line in out.splitlines()} == {"no"}
    assert "theirs is passed on as it was (this ranking did not degrade)" in err, err


def test_strict_makes_a_degraded_rank_an_error(capsys, files):
    docs, broken, fine = files
    code, out, err = _rank(capsys, docs, broken, "--strict")
    assert code == 1 and out == "", (code, out)
    assert "scorer 'deg_boom' failed: KeyError: 'boost'" in err
    assert (
        err.strip().splitlines()[-1].startswith("rerankit rank: error: degraded result (--strict)")
    ), err
    code, out, err = _rank(capsys, docs, fine, "--strict")
    assert code == 0 and len(out.splitlines()) == 2, err


def test_a_failed_scorer_s_warning_says_where_the_traceback_is_once(capsys, files):
    docs, broken, _ = files
    code, _, err = _rank(capsys, docs, broken)
    assert code == 0
    failed = [line for line in err.splitlines() if "failed" in line]
    assert failed[0].endswith("(rerankit -v rank ... shows the traceback)"), err
    assert err.count("shows the traceback") == 1, err


def test_batch_strict_counts_degraded_rows_as_failed(capsys, tmp_path, files):
    _, broken, _ = files
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps({"query": q, "candidates": DOCS}) + "\n" for q in ("solar", "wind"))
    )
    args = ["batch", "--input", str(rows), "-r", str(broken), "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert main([*args, "--out", str(tmp_path / "b.jsonl"), "--strict"]) == 1
    assert "--strict: 2 degraded rows count as failed" in capsys.readouterr().err
    one = tmp_path / "one.jsonl"  # and one, in its number
    one.write_text(rows.read_text().splitlines()[0] + "\n")
    args = ["batch", "--input", str(one), "-r", str(broken), "--no-progress", "--strict"]
    assert main([*args, "--out", str(tmp_path / "c.jsonl")]) == 1
    assert "--strict: 1 degraded row counts as failed" in capsys.readouterr().err
