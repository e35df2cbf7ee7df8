"""Ctrl-C during an evaluation: the pipelines that finished are measured, printed and
written as usual, the one it stopped and those not started are said (no row); ``rerankit
eval`` exits 130 with no traceback, and ``evaluate`` raises ``EvaluationInterrupted`` (a
KeyboardInterrupt) carrying that evaluation."""

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
import uuid
from pathlib import Path

import pytest
from eval_tiny import write_tiny

import rerankit
from rerankit import registry
from rerankit.cli import main
from rerankit.eval import evaluate
from rerankit.eval.failures import EvaluationInterrupted
from rerankit.rerankers import ScorerReranker
from rerankit.rerankers.base import Reranker
from rerankit.scorers import BM25Scorer
from rerankit.types import RerankResult

SCIFACT = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"


class StopsAt(ScorerReranker):
    """BM25 whose ``stop_at``-th ``rerank`` call (1-based, over every collection) is a
    Ctrl-C."""

    def __init__(self, stop_at: int, name: str = "stops") -> None:
        super().__init__(BM25Scorer(), name=name)
        self.stop_at, self.calls = stop_at, 0

    def rerank(self, query, documents, **options):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return super().rerank(query, documents, **options)


def test_evaluate_raises_with_what_finished_measured_and_written(tmp_path):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "out"
    rerankers = {"bm25": "bm25", "stops": StopsAt(2), "jaccard": "jaccard"}
    with pytest.raises(EvaluationInterrupted) as caught:
        evaluate(data, rerankers, first_stage="bm25", out=out, embedding_cache=False)
    assert isinstance(caught.value, KeyboardInterrupt)
    result = caught.value.evaluation
    assert [r["pipeline"] for r in result.rows] == ["first stage", "bm25"]
    stopped = {
        "pipeline": "stops",
        "query_id": "q2",
        "reranked_queries": 1,
        "not_started": ["jaccard"],
    }
    assert result.collections[0].interrupted == stopped
    assert result.interrupted == {"collection": "tiny", **stopped, "collections_not_started": []}
    assert "INTERRUPTED: stops stopped by Ctrl-C on query 'q2'" in str(result)
    assert "INTERRUPTED: jaccard not started; not measured" in str(result)
    saved = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in saved["results"]] == ["first stage", "bm25"]
    assert saved["interrupted"] == stopped
    assert (out / "runs" / "bm25.trec").is_file()
    assert not (out / "runs" / "stops.trec").exists()
    assert result.to_dict()["interrupted"]["pipeline"] == "stops"


def test_interrupted_on_a_later_collection_keeps_the_earlier_and_says_the_rest(tmp_path):
    one, two, three = (write_tiny(tmp_path / n) for n in ("one", "two", "three"))
    out = tmp_path / "out"
    stops = StopsAt(5)  # the first collection's three queries, then the second's second
    with pytest.raises(EvaluationInterrupted) as caught:
        evaluate([one, two, three], {"stops": stops, "bm25": "bm25"}, first_stage="bm25", out=out)
    result = caught.value.evaluation
    assert [c.collection for c in result.collections] == ["one", "two"]
    assert [r["pipeline"] for r in result.collections[0].rows] == ["first stage", "stops", "bm25"]
    assert [r["pipeline"] for r in result.collections[1].rows] == ["first stage"]
    assert result.interrupted["collection"] == "two"
    assert result.interrupted["not_started"] == ["bm25"]
    assert result.interrupted["collections_not_started"] == ["three"]
    two_row = next(line for line in result.summary().splitlines() if line.startswith("| two |"))
    assert two_row.split(" | ")[4:6] == ["interrupted", "interrupted |"]
    summary = json.loads((out / "summary.json").read_text())
    assert [c["collection"] for c in summary["collections"]] == ["one", "two"]
    assert summary["collections"][1]["interrupted"]["pipeline"] == "stops"
    assert (out / "one" / "results.json").is_file() and (out / "two" / "results.json").is_file()
    assert not (out / "three").exists()


class _SignalsThenAbsorbs(Reranker):
    """A pipeline whose first call sends this process SIGINT and absorbs the cancellation
    asyncio's own handler would make of it (as a provider call's retry handling may)."""

    name = "absorbs"
    score_scale = "relative"
    calls = 0

    async def arerank(self, query, documents, top_k=None, **kwargs):
        type(self).calls += 1
        if type(self).calls == 1:
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(2)
        return RerankResult(query)

    async def _rank(self, query, docs, **kwargs):  # (arerank above answers)
        raise NotImplementedError


def test_a_real_sigint_in_a_pipeline_exits_130_after_printing_and_writing_the_rest(
    tmp_path, capsys, monkeypatch
):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "out"
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    rerankit.register_reranker("absorbs-sigint", _SignalsThenAbsorbs)
    before = signal.getsignal(signal.SIGINT)
    argv = ["eval", "--data", str(data), "--rerankers", "bm25,absorbs-sigint,jaccard"]
    code = main([*argv, "--first-stage", "bm25", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 130, captured.err
    assert signal.getsignal(signal.SIGINT) is before  # put back
    assert "| bm25 |" in captured.out and "| absorbs-sigint |" not in captured.out
    assert "INTERRUPTED: absorbs-sigint stopped by Ctrl-C on query 'q1'" in captured.err
    assert "INTERRUPTED: jaccard not started; not measured" in captured.err
    assert f"rerankit eval: interrupted: 1 pipeline run measured, written to {out}" in (
        captured.err
    )
    assert f"wrote {out / 'results.json'}" in captured.err
    assert json.loads((out / "results.json").read_text())["interrupted"]["not_started"] == [
        "jaccard"
    ]


#: a plugin whose reranker blocks on its first query, after saying so in a file
BLOCKER = """
import os, time
import rerankit
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import BM25Scorer
from rerankit.types import RerankResult


class Blocks(ScorerReranker):
    def rerank(self, query, documents, **options):
        open(os.environ["BLOCKER_STARTED"], "w").close()
        time.sleep(60)
        return super().rerank(query, documents, **options)


rerankit.register_reranker("{p}", lambda: Blocks(BM25Scorer(), name="{p}"))
"""


def test_sigint_to_the_command_keeps_the_finished_pipelines(tmp_path):
    """A real SIGINT to `rerankit eval` (about 2 s: a process of its own)."""
    name = f"blocker_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(BLOCKER.format(p=name))
    started, out = tmp_path / "started", tmp_path / "out"
    src = Path(rerankit.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{src}"}
    env.update(BLOCKER_STARTED=str(started))
    env.pop("RERANKIT_PLUGINS", None)
    argv = ["eval", "--data", str(SCIFACT), "--rerankers", f"bm25,{name},jaccard"]
    argv += ["--plugin", name, "--first-stage", "bm25", "--candidates", "10"]
    argv += ["--max-queries", "5", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rerankit", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not started.exists():  # bm25 has finished: the blocker is on its first query
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "| bm25 |" in stdout and f"| {name} |" not in stdout
    assert f"INTERRUPTED: {name} stopped by Ctrl-C on query" in stdout  # under the table
    assert "INTERRUPTED: jaccard not started; not measured" in stderr
    saved = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in saved["results"]] == ["first stage", "bm25"]
    assert saved["interrupted"]["pipeline"] == name
    assert (out / "runs" / "bm25.trec").is_file()
