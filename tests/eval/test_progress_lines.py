"""Progress off a terminal (stderr to a file, a CI log): a plain line at a steady
interval, as ``batch`` prints (:data:`~rerankit.cli.console.PROGRESS_EVERY` seconds). The
reader's ``eval`` of 30 slow queries printed only the last line (it was one every 50
queries), and ``models loaded in ...`` came after it, not before the first query."""

from __future__ import annotations

import io
import json
import time
import types
import uuid

import numpy as np

from rerankit.cli import console
from rerankit.eval import evaluate


class Clock:
    """perf_counter that moves ``step`` seconds a call: a query that takes ``step`` s."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def _lines(monkeypatch, every: float, step: float, queries: int) -> list[str]:
    stderr = io.StringIO()
    monkeypatch.setattr(console.sys, "stderr", stderr)
    monkeypatch.setattr(
        console, "time", types.SimpleNamespace(perf_counter=Clock(step).perf_counter)
    )
    monkeypatch.setattr(console, "PROGRESS_EVERY", every)
    assert list(console.progress_bar("hybrid", True)(range(queries))) == list(range(queries))
    return stderr.getvalue().splitlines()


def test_a_log_gets_a_line_at_a_steady_interval_and_one_at_the_end(monkeypatch):
    # 30 queries of 4 s each, a line at most every 10 s: the reader's 30 queries got one
    lines = _lines(monkeypatch, every=10.0, step=4.0, queries=30)
    assert lines[0] == "rerankit: hybrid: 3/30 queries (12.0 s)"
    assert lines[1] == "rerankit: hybrid: 6/30 queries (24.0 s)"
    assert lines[-1] == "rerankit: hybrid: 30/30 queries (120.0 s)"
    assert len(lines) == 10
    # quick queries: the last line only, however many there are
    assert _lines(monkeypatch, every=10.0, step=0.001, queries=200) == [
        "rerankit: hybrid: 200/200 queries (0.2 s)"
    ]


def test_batch_and_the_query_loops_share_the_interval():
    assert console.PROGRESS_EVERY == 10.0
    assert not hasattr(console, "ROWS_EVERY") and not hasattr(console, "PLAIN_EVERY")


def test_the_models_loaded_line_comes_before_the_first_query(tmp_path, monkeypatch):
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers.local import LocalModelScorer

    class SlowToLoad(LocalModelScorer):
        what = "test model"

        def _load(self):
            time.sleep(0.1)  # over the 0.05 s a load note needs
            return object()

        def score_texts(self, query, texts):
            assert self.model is not None
            return np.array([float(len(t)) for t in texts])

    corpus = [("d1", "solar panels"), ("d2", "wind turbines"), ("d3", "pasta")]
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in corpus)
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "solar"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "wind"})
    )
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"
    )
    stderr = io.StringIO()
    monkeypatch.setattr(console.sys, "stderr", stderr)
    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.0)  # a line a query
    scorer = SlowToLoad(f"slow-{uuid.uuid4().hex}", name="slow")  # an id no other test loads
    evaluate(
        tmp_path,
        rerankers={"slow": ScorerReranker(scorer)},
        candidates=3,
        progress=lambda label: console.progress_bar(label, True),
        note=console.note,
    )
    lines = stderr.getvalue().splitlines()
    loaded = [i for i, line in enumerate(lines) if "slow: models loaded in" in line]
    queries = [i for i, line in enumerate(lines) if " queries (" in line]
    assert len(loaded) == 1 and queries and loaded[0] < min(queries), lines
