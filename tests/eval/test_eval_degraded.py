"""A pipeline whose LLM stage failed on some queries (each of them degraded: it fell back to
the earlier stage's order) is marked wherever its figures are read as its own: the table,
the comparison with a baseline (as a pipeline and as the baseline), stderr at the end, and
the files (which queries, why; per_query.csv); when every query degraded, the fallback's
calibration and thresholds are not presented under its name."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from eval_tiny import write_llm_cascade, write_tiny

from rerankit.cli import main
from rerankit.eval import evaluate
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import JaccardScorer

MARK = "1 of 3 queries degraded (fell back to an earlier stage)"


def _judge(request):
    """A judge that answers but for the query 'wind power' (q2), which gets HTTP 500."""
    if "wind power" in request.prompt:
        return Reply(status=500, text="judge exploded")
    return Reply(text='{"score": 7}')


@pytest.fixture
def env(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return tmp_path


def _eval(env, baseline, capsys, collections=("tiny",)):
    data = [a for c in collections for a in ("--data", str(write_tiny(env / c)))]
    with FakeLLMServer(responder=_judge) as server:
        pipeline = write_llm_cascade(env, server.openai_url)
        argv = ["eval", *data, "--rerankers", f"bm25,{pipeline}"]
        argv += ["--candidates", "4", "--baseline", baseline, "--out", str(env / "out")]
        code = main([*argv, "--no-progress"])
    return code, *capsys.readouterr()


def test_some_queries_degraded_are_marked_said_on_stderr_and_recorded(env, capsys):
    code, out, err = _eval(env, "bm25", capsys)
    assert code == 0, err  # as docs/cli.md's exit statuses say: only all degraded exits 1
    table_row = next(line for line in out.splitlines() if line.startswith("| llm-cascade |"))
    head = next(line for line in out.splitlines() if line.startswith("| pipeline | ndcg@10"))
    assert head.endswith("| degraded queries |") and table_row.endswith("| 1 of 3 |")
    verdict = next(line for line in out.splitlines() if line.startswith("| llm-cascade | +"))
    assert MARK in verdict
    last = err.strip().splitlines()[-1]
    assert last.startswith("rerankit: llm-cascade: 1 of 3 queries degraded"), err
    saved = json.loads((env / "out" / "results.json").read_text())
    row = next(r for r in saved["results"] if r["pipeline"] == "llm-cascade")
    assert list(row["degraded_by_query"]) == ["q2"]
    assert "500" in row["degraded_by_query"]["q2"]
    assert next(r for r in saved["results"] if r["pipeline"] == "bm25")["degraded_by_query"] == {}
    (entry,) = [e for e in saved["against_baseline"] if e["pipeline"] == "llm-cascade"]
    assert entry["degraded_queries"] == 1
    with (env / "out" / "per_query.csv").open(encoding="utf-8") as f:
        rows = {r["query_id"]: r for r in csv.DictReader(f)}
    assert rows["q2"]["degraded"] == "llm-cascade"
    assert rows["q1"]["degraded"] == ""


def test_a_degraded_baseline_is_said_in_the_comparison(env, capsys):
    code, out, _ = _eval(env, "llm-cascade", capsys)
    assert code == 0
    comparison = out[out.index("minus llm-cascade's") :]
    assert f"the baseline, llm-cascade: {MARK}" in comparison


def test_the_summary_over_collections_marks_degraded_cells_and_baseline(env, capsys):
    code, out, _ = _eval(env, "bm25", capsys, collections=("one", "two"))
    assert code == 0
    summary = out[out.index("minus bm25's by collection") :]
    one = next(line for line in summary.splitlines() if line.startswith("| one |"))
    assert one.endswith("(1 degraded) |")  # llm-cascade's cell
    code, out, _ = _eval(env, "llm-cascade", capsys, collections=("three", "four"))
    summary = out[out.index("minus llm-cascade's by collection") :]
    assert "the baseline, llm-cascade, degraded on some queries of three, four" in summary


class FallingBack(ScorerReranker):
    """Jaccard whose every answer says it degraded, in probabilities (a cascade whose
    judge failed each time, keeping a calibrated first stage's scores)."""

    def rerank(self, query, documents, **options):
        out = super().rerank(query, documents, **options)
        return dataclasses.replace(
            out, degraded=True, warnings=("stage 'judge': down",), score_scale="probability"
        )


def test_every_query_degraded_shows_no_calibration_or_thresholds_as_its_own(tmp_path):
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    data = write_tiny(tmp_path / "tiny")
    judge = FallingBack(JaccardScorer(), name="judge")
    result = evaluate(data, {"judge": judge}, first_stage="bm25", out=tmp_path / "out")
    row = next(r for r in result.rows if r["pipeline"] == "judge")
    assert row["degraded_queries"] == 3 and row["ece"] is None and "calibration" not in row
    assert "judge" not in result.collections[0].thresholds
    assert not (tmp_path / "out" / "reliability.svg").exists()
    assert not (tmp_path / "out" / "thresholds.csv").exists()
    assert "its calibration and thresholds are left out" in str(result)
