"""``rerankit rank --deadline SECONDS``: a cascade whose later stage is still running then
writes its first stage's order, the warning on stderr saying which stage did not finish;
with no stage finished it is an error (exit 1). Bounds are loose: the held stage would take
30 s without the deadline."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np
import pytest

from rerankit.cli import main
from rerankit.registry import register

DOCS = [
    {"id": "w", "text": "wind farms"},
    {"id": "s", "text": "solar power and solar panels"},
    {"id": "b", "text": "battery storage"},
]
GATE = {"event": threading.Event()}


class HeldCli:
    """A stage whose work on a thread waits until the test ends (at most 30 s)."""

    name = "rank_deadline_held"

    async def score(self, query, docs, **context):
        await asyncio.to_thread(GATE["event"].wait, 30)
        return np.arange(len(docs), dtype=float)


register("scorer", "rank_deadline_held", HeldCli)

STAGES = '[[stages]]\n[stages.scorer]\ntype = "{0}"\n\n[[stages]]\n[stages.scorer]\ntype = "{1}"\n'


@pytest.fixture
def files(tmp_path):
    event = threading.Event()
    GATE["event"] = event
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    cascade, first = tmp_path / "cascade.toml", tmp_path / "held_first.toml"
    cascade.write_text(STAGES.format("bm25", "rank_deadline_held"))
    first.write_text(STAGES.format("rank_deadline_held", "bm25"))
    yield docs, cascade, first
    event.set()


def _rank(capsys, docs, spec, *flags):
    start = time.monotonic()
    code = main(["rank", "-q", "solar power", "-i", str(docs), "-r", str(spec), *flags])
    out, err = capsys.readouterr()
    return code, out, err, time.monotonic() - start


def test_rank_deadline_prints_the_first_stage_order_degraded(capsys, files):
    docs, cascade, _ = files
    code, out, err, elapsed = _rank(capsys, docs, cascade, "--deadline", "0.3", "--details")
    assert code == 0, err
    assert elapsed < 0.3 + 3.0, elapsed
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in records] == ["s", "w", "b"]  # bm25's order; held's is b, ...
    assert all(r["degraded"] for r in records)
    assert (
        "rerankit: warning: stage 'rank_deadline_held' did not finish within the 0.3 s "
        "deadline; its documents keep the previous stage's order and scores"
    ) in err


def test_rank_deadline_no_stage_meets_is_an_error(capsys, files):
    docs, _, first = files
    code, out, err, elapsed = _rank(capsys, docs, first, "--deadline", "0.3")
    assert code == 1 and out == ""
    assert elapsed < 0.3 + 3.0, elapsed
    assert err.startswith(
        "rerankit rank: error: pipeline 'held_first': stage 'rank_deadline_held' did not "
        "finish within the 0.3 s deadline, and no stage had finished before it: no order to "
        "return"
    ), err


@pytest.mark.parametrize("declared", ["", 'name = "slow-judge"\n'])
def test_rank_deadline_names_a_one_scorer_file_as_check_does_not_by_its_type(
    capsys, files, tmp_path, declared
):
    """A judge's file (one scorer) was said by its scorer's type; ``check`` says it by the
    file's declared name, else its file name: so does the refusal."""
    docs = files[0]
    judge = tmp_path / "judge.toml"
    judge.write_text(f'{declared}[scorer]\ntype = "rank_deadline_held"\n')
    code, out, err, _ = _rank(capsys, docs, judge, "--deadline", "0.3")
    said = "slow-judge" if declared else "judge"
    assert code == 1 and out == ""
    assert err.startswith(
        f"rerankit rank: error: reranker '{said}' did not finish within the 0.3 s deadline"
    ), err
    # the fix in the command line's words, not Python's (a Pipeline)
    assert (
        "(give a longer --deadline, or rank with a pipeline file whose first [[stages]] "
        "entry is fast, such as bm25)"
    ) in err, err
    assert "Pipeline" not in err
    assert main(["check", str(judge)]) == 0
    assert f"{judge}: ok: '{said}': " in capsys.readouterr().out


def test_rank_deadline_must_be_a_positive_number(capsys, files):
    docs, cascade, _ = files
    with pytest.raises(SystemExit) as exited:
        _rank(capsys, docs, cascade, "--deadline", "0")
    assert exited.value.code == 2
    assert "argument --deadline: expected a positive number, got 0" in capsys.readouterr().err
