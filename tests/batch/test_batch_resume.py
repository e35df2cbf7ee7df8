"""An existing batch output: refused by default, started again with --overwrite, resumed
with --resume (finished rows skipped, a cut last line dropped); Ctrl-C ends with one line,
exit 130 and the summary written; --no-candidates leaves the candidates out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rerankit import register_reranker, registry
from rerankit.batch import BatchInterrupted, read_rows, run_batch
from rerankit.cli import main
from rerankit.errors import InputError
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers.base import Reranker
from rerankit.scorers import BM25Scorer
from rerankit.types import RerankResult

ROWS = [
    {"query_id": f"q{i}", "query": f"capital {i}", "candidates": ["Paris capital", f"x {i}"]}
    for i in range(5)
]
KEY_ENV = "RERANKIT_RESUME_TEST_KEY"


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_rerun_onto_an_output_with_rows_is_refused_and_overwrite_starts_again(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    run_batch(src, out, "bm25")
    before = out.read_text()
    with pytest.raises(InputError) as caught:
        run_batch(src, out, "bm25")
    message = str(caught.value)
    assert f"{out} already holds 5 rows" in message
    assert "--resume" in message and "--overwrite" in message
    assert out.read_text() == before  # untouched
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25"]
    assert main(args) == 2  # a refusal before any work: a usage error
    assert "already holds 5 rows" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert [r["query_id"] for r in lines(out)] == [r["query_id"] for r in ROWS]  # not 10
    assert run_batch(src, out, "bm25", overwrite=True).rows == 5


def test_resume_skips_the_finished_rows_drops_a_cut_line_and_appends_the_rest(tmp_path, capsys):
    src, full = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "full.jsonl"
    run_batch(src, full, "bm25")
    whole = full.read_text().splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    out.write_text(whole[0] + whole[1] + whole[2][:25])  # killed while writing row 3
    assert main(["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "2 rows already written, skipped" in err and "3 rows" in err
    assert [r["query_id"] for r in lines(out)] == [r["query_id"] for r in ROWS]
    assert [r["results"] for r in lines(out)] == [r["results"] for r in lines(full)]
    again = run_batch(src, out, "bm25", resume=True)  # all done: nothing to add
    assert (again.skipped, again.rows) == (5, 0) and len(lines(out)) == 5


def test_resume_of_a_complete_output_says_it_is_complete_not_appending(tmp_path, capsys):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25"]
    assert main([*args[:2], str(write_jsonl(tmp_path / "one.jsonl", ROWS[:1])), *args[3:]]) == 0
    assert ": 1 row in " in capsys.readouterr().err  # said "1 rows"
    assert main([*args, "--overwrite"]) == 0
    before = out.read_text()
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "5 rows already written, skipped" in err
    assert "the output is already complete" in err and "appending" not in err
    assert ": 0 rows in " in err
    assert out.read_text() == before


def test_resume_counts_the_skipped_rows_that_failed_in_the_exit_status(tmp_path, capsys):
    """A nightly job that always passes --resume: rows written with an error are not
    ranked again, and they keep the run's exit status at 1 (all failed) or 3 (some)."""
    bad = {"query_id": "q9", "query": "", "candidates": ["x"]}  # fails: an empty query
    src, out = write_jsonl(tmp_path / "in.jsonl", [ROWS[0], bad]), tmp_path / "out.jsonl"
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--no-progress"]
    assert main(args) == 3
    capsys.readouterr()
    assert main([*args, "--resume"]) == 3  # nothing left to rank, one row failed
    err = capsys.readouterr().err
    assert "2 rows already written, skipped (1 of them with an error" in err
    assert "--overwrite ranks every row again" in err
    assert "2 skipped (already written, 1 of them with an error)" in err
    # the summary counts the failed rows the output holds, not "0 failed", and says why 3
    assert "0 failed" not in err
    assert "1 failed in the output (0 this run, 1 from an earlier run, not ranked again)" in err
    assert f"exit status 3: 1 of the 2 rows in {out} failed, each written with its error" in err
    summary = run_batch(src, out, "bm25", resume=True)
    assert (summary.skipped, summary.skipped_failures, summary.exit_status) == (2, 1, 3)
    assert summary.to_dict()["skipped_failures"] == 1
    assert summary.to_dict()["failed_in_output"] == 1
    every = write_jsonl(tmp_path / "bad.jsonl", [bad, bad])
    failed = tmp_path / "failed.jsonl"
    assert run_batch(every, failed, "bm25").exit_status == 1
    assert main(["batch", "-i", str(every), "--out", str(failed), "-r", "bm25", "--resume"]) == 1
    assert main(["batch", "-i", str(every), "--out", str(failed), "-r", "bm25", "--overwrite"]) == 1
    good = write_jsonl(tmp_path / "ok.jsonl", ROWS[:1])
    assert run_batch(good, tmp_path / "o.jsonl", "bm25").exit_status == 0


def test_resume_refuses_an_output_of_other_rows(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    other = write_jsonl(tmp_path / "other.jsonl", [ROWS[0], ROWS[2]])
    out = tmp_path / "out.jsonl"
    run_batch(other, out, "bm25")
    before = out.read_text()
    with pytest.raises(InputError, match=r"does not match .*row 2 is query_id 'q2'.*'q1'"):
        run_batch(src, out, "bm25", resume=True)
    run_batch(src, tmp_path / "long.jsonl", "bm25")
    with pytest.raises(InputError, match="holds 5 rows, more than the 2"):
        run_batch(other, tmp_path / "long.jsonl", "bm25", resume=True)
    assert out.read_text() == before
    with pytest.raises(InputError, match=r"needs a \.jsonl --out"):
        run_batch(src, tmp_path / "out.parquet", "bm25", resume=True)
    with pytest.raises(InputError, match="not both"):
        run_batch(src, out, "bm25", resume=True, overwrite=True)


def test_no_candidates_leaves_them_out(tmp_path):
    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    assert main(["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--no-candidates"]) == 0
    rows = lines(out)
    assert all("candidates" not in r and r["results"] for r in rows)
    assert rows[0]["results"][0]["index"] == 0 and rows[0]["query"] == ROWS[0]["query"]


def test_ctrl_c_in_python_raises_batch_interrupted_with_the_rows_written(tmp_path):
    class StopsAtThird(BM25Scorer):  # Ctrl-C arriving while the third row is scored
        calls = 0

        async def score(self, query, docs, **context):
            StopsAtThird.calls += 1
            if StopsAtThird.calls == 3:
                raise KeyboardInterrupt
            return await super().score(query, docs, **context)

    src, out = write_jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    with pytest.raises(BatchInterrupted) as caught:
        run_batch(src, out, StopsAtThird(), batch_size=1)
    assert caught.value.summary.rows == 2 and caught.value.summary.interrupted
    assert [r["query_id"] for r in lines(out)] == ["q0", "q1"]


@pytest.mark.slow  # about 8 s: a process of its own
def test_sigint_ends_with_one_line_exit_130_and_the_summary(tmp_path, judge_spec, monkeypatch):
    """A real SIGINT to `rerankit batch` (a judge that answers in 0.3 s), then --resume."""
    slow = {"on": True}

    def judge(request):
        return Reply(text=json.dumps({"id": "0", "score": 3}), delay=0.3 if slow["on"] else 0)

    with FakeLLMServer(responder=judge) as server:
        pipe = tmp_path / "judge.json"
        pipe.write_text(json.dumps(judge_spec(server.openai_url, KEY_ENV)))
        src = write_jsonl(tmp_path / "in.jsonl", ROWS * 4)  # 20 rows, ids repeat
        out, summary = tmp_path / "out.jsonl", tmp_path / "sum.json"
        args = ["batch", "-i", str(src), "--out", str(out), "-r", str(pipe), "--no-progress"]
        env = {**os.environ, KEY_ENV: "k", "PYTHONPATH": str(Path("src").resolve())}
        proc = subprocess.Popen(
            [sys.executable, "-m", "rerankit", *args, "--summary", str(summary)],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().count("\n") >= 2):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode == 130, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        written = lines(out)
        assert 2 <= len(written) < 20 and f"{len(written)} rows in {out}" in err
        assert "--resume" in err.split("go on with: ")[1]
        assert json.loads(summary.read_text())["interrupted"] is True
        slow["on"] = False
        monkeypatch.setenv(KEY_ENV, "k")
        assert main([*args, "--resume"]) == 0
    assert [r["query_id"] for r in read_rows(out)] == [r["query_id"] for r in ROWS * 4]


class _AbsorbsCancellation(Reranker):
    """A pipeline whose call absorbs a cancellation and answers anyway (as a provider
    call's retry handling may): asyncio's own SIGINT handling cancels the task, so without
    a handler of batch's own the interrupt would be lost."""

    name = "absorbs"
    score_scale = "relative"

    async def arerank(self, query, documents, top_k=None, **kwargs):
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        with contextlib.suppress(asyncio.CancelledError):  # absorbed: it answers anyway
            await asyncio.sleep(2)
        return RerankResult(query)

    async def _rank(self, query, docs, **kwargs):  # (arerank above answers)
        raise NotImplementedError


def test_ctrl_c_stops_batch_even_where_a_row_absorbs_the_cancellation(
    tmp_path, capsys, monkeypatch
):
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    # registered for this test only: other tests list the registered names
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("absorbs-cancellation", _AbsorbsCancellation)
    before = signal.getsignal(signal.SIGINT)
    code = main(["batch", "-i", str(src), "--out", str(out), "-r", "absorbs-cancellation"])
    assert code == 130, capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before  # put back


class _LeavesAFailedTask(Reranker):
    """A row whose call started a task that failed, then Ctrl-C: the task, never awaited,
    is left behind as a row's provider calls are."""

    name = "leaves-a-task"
    score_scale = "relative"

    async def arerank(self, query, documents, top_k=None, **kwargs):
        async def fails():
            raise RuntimeError("a call cut short")

        task = asyncio.get_running_loop().create_task(fails())
        await asyncio.sleep(0)
        assert task.done()
        raise KeyboardInterrupt

    async def _rank(self, query, docs, **kwargs):  # (arerank above answers)
        raise NotImplementedError


def test_ctrl_c_says_one_line_without_asyncio_s_reports_of_the_tasks_left(
    tmp_path, capsys, caplog, monkeypatch
):
    import gc
    import logging

    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("leaves-a-task", _LeavesAFailedTask)
    asyncio_logger = logging.getLogger("asyncio")
    monkeypatch.setattr(asyncio_logger, "level", asyncio_logger.level)  # put back after
    with caplog.at_level("ERROR", logger="asyncio"):
        code = main(
            ["batch", "-i", str(src), "--out", str(tmp_path / "o.jsonl"), "-r", "leaves-a-task"]
        )
        gc.collect()  # the task left behind is destroyed: asyncio would report it
    assert code == 130
    assert "interrupted" in capsys.readouterr().err
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text
