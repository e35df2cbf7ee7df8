"""A pipeline that raises while reranking (a provider error that escapes, a plugin's bug):
``evaluate`` records it as failed (which pipeline, which query, the error) and measures the
others; ``rerankit eval`` prints and writes what finished, says which failed and why, and
exits 3 (1 when every pipeline failed)."""

from __future__ import annotations

import json
import sys
import uuid

import pytest
from eval_tiny import write_tiny

from rerankit import registry
from rerankit.cli import main
from rerankit.eval import evaluate
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import BM25Scorer


class FlakyReranker(ScorerReranker):
    """BM25 whose ``rerank`` raises on its ``fail_at``-th call (1-based)."""

    def __init__(self, fail_at: int, name: str = "flaky") -> None:
        super().__init__(BM25Scorer(), name=name)
        self.fail_at, self.calls = fail_at, 0

    def rerank(self, query, documents, **options):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("provider exploded")
        return super().rerank(query, documents, **options)


#: a plugin registering a reranker named after the module, failing on its second query
PLUGIN = """
import rerankit
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import BM25Scorer


class Flaky(ScorerReranker):
    calls = 0

    def rerank(self, query, documents, **options):
        type(self).calls += 1
        if type(self).calls == 2:
            raise RuntimeError("provider exploded")
        return super().rerank(query, documents, **options)


rerankit.register_reranker("{p}", lambda: Flaky(BM25Scorer(), name="{p}"))
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module of a name of its own on sys.path, the registry and sys.modules put
    back after the test."""
    name = f"flaky_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(PLUGIN.format(p=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.delenv("RERANKIT_PLUGINS", raising=False)
    return name


def test_evaluate_records_the_failed_pipeline_and_measures_the_others(tmp_path, caplog):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "out"
    flaky = FlakyReranker(fail_at=2)
    with caplog.at_level("WARNING", logger="rerankit.eval.evaluation"):
        result = evaluate(data, {"flaky": flaky, "bm25": "bm25"}, first_stage="bm25", out=out)
    assert [r["pipeline"] for r in result.rows] == ["first stage", "bm25"]
    assert result.failed == [
        {
            "collection": "tiny",
            "pipeline": "flaky",
            "query_id": "q2",
            "error_type": "RuntimeError",
            "error": "provider exploded",
            "reranked_queries": 1,
        }
    ]
    assert "FAILED: flaky raised on query 'q2'" in str(result)
    assert "RuntimeError: provider exploded" in caplog.text
    saved = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in saved["results"]] == ["first stage", "bm25"]
    assert saved["failed"][0]["pipeline"] == "flaky"
    assert saved["failed"][0]["query_id"] == "q2"
    assert (out / "runs" / "bm25.trec").is_file()
    assert not (out / "runs" / "flaky.trec").exists()
    assert result.to_dict()["failed"][0]["error_type"] == "RuntimeError"


def test_a_failed_baseline_is_said_and_the_summary_marks_it_failed(tmp_path):
    one, two = write_tiny(tmp_path / "one"), write_tiny(tmp_path / "two")
    flaky = FlakyReranker(fail_at=4)  # the first collection's three queries go through
    result = evaluate(
        [one, two], {"flaky": flaky, "bm25": "bm25"}, first_stage="bm25", baseline="flaky"
    )
    first, second = result.collections
    assert [r["pipeline"] for r in first.rows] == ["first stage", "flaky", "bm25"]
    assert [f["pipeline"] for f in second.failed] == ["flaky"]
    assert second.against is None
    assert "no comparison with flaky: it failed (see above)" in second.table()
    assert "no comparison with flaky: it failed on some collection" in result.summary()
    two_row = next(line for line in result.summary().splitlines() if line.startswith("| two |"))
    assert two_row.split(" | ")[4] == "failed"  # flaky's cell
    assert set(result.mean_ndcg()) == {"first stage", "bm25"}
    assert result.mean_against() is None


def test_cli_prints_and_writes_the_rest_then_exits_3(plugin, tmp_path, capsys):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["eval", "--data", str(data), "--rerankers", f"{plugin},bm25", "--plugin", plugin]
    code = main([*argv, "--first-stage", "bm25", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 3
    assert "| bm25 |" in captured.out
    assert f"| {plugin} |" not in captured.out
    assert f"FAILED: {plugin} raised on query 'q2'" in captured.out
    assert "RuntimeError: provider exploded" in captured.err
    saved = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in saved["results"]] == ["first stage", "bm25"]
    assert saved["failed"][0]["error"] == "provider exploded"


def test_cli_exits_1_when_every_pipeline_failed(plugin, tmp_path, capsys):
    data = write_tiny(tmp_path / "tiny")
    argv = ["eval", "--data", str(data), "--rerankers", plugin, "--plugin", plugin]
    code = main([*argv, "--first-stage", "bm25", "--baseline", plugin, "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    assert f"no comparison with {plugin}: it failed" in captured.out
    assert f"FAILED: {plugin} raised on query 'q2'" in captured.err
