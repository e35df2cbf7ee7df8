"""``eval --strict`` for CI: exit 4 when some pipeline had degraded queries, after printing and
writing everything as usual (a failed pipeline still exits 3); ``Evaluation.degraded`` names
each pipeline's degraded queries; and with first-stage candidates given in memory the advice
to refit a pipeline's probabilities names a file that holds them, not a placeholder."""

from __future__ import annotations

import dataclasses
import json

import pytest
from eval_tiny import tiny_dataset, write_tiny

from rerankit import register_reranker, registry
from rerankit.cli import main
from rerankit.errors import InputError
from rerankit.eval import evaluate
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import BM25Scorer


class DegradesOn(ScorerReranker):
    """BM25 whose result for each query in ``queries`` (texts) says it degraded, as a
    cascade's does when its LLM stage failed there."""

    def __init__(self, *queries: str, name: str = "shaky") -> None:
        super().__init__(BM25Scorer(), name=name)
        self.queries = queries

    def rerank(self, query, documents, **options):
        result = super().rerank(query, documents, **options)
        if query in self.queries:
            return dataclasses.replace(result, degraded=True, warnings=("judge exploded",))
        return result


def test_degraded_names_each_pipelines_degraded_queries():
    result = evaluate(tiny_dataset(), {"shaky": DegradesOn("wind power", "pasta"), "bm25": "bm25"})
    assert result.degraded == {"shaky": ["q2", "q3"]}
    assert result.collections[0].degraded == result.degraded
    steady = evaluate(tiny_dataset(), "bm25")
    assert steady.degraded == {}


def test_degraded_over_several_collections_is_read_from_each(tmp_path):
    one, two = write_tiny(tmp_path / "one"), write_tiny(tmp_path / "two")
    result = evaluate([one, two], {"shaky": DegradesOn("pasta")}, first_stage="bm25")
    assert [c.degraded for c in result.collections] == [{"shaky": ["q3"]}] * 2
    with pytest.raises(InputError, match=r"read each one's from \.collections"):
        _ = result.degraded


@pytest.fixture
def shaky(monkeypatch):
    """``shaky`` registered for this test: BM25 that degrades on the query 'pasta'."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    register_reranker("shaky", lambda: DegradesOn("pasta"))
    return "shaky"


def _eval(tmp_path, rerankers, *flags):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["eval", "--data", str(data), "--rerankers", rerankers, "--first-stage", "bm25"]
    return main([*argv, "--out", str(out), "--no-progress", *flags]), out


def test_strict_exits_4_on_degraded_queries_after_writing_everything(tmp_path, shaky, capsys):
    code, out = _eval(tmp_path, "bm25,shaky", "--strict")
    captured = capsys.readouterr()
    assert code == 4, captured.err
    assert "| shaky |" in captured.out
    assert "rerankit: --strict: shaky had 1 degraded queries (q3): exit 4" in captured.err
    saved = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in saved["results"]] == ["first stage", "bm25", "shaky"]
    # without --strict, the same evaluation exits 0, as it did
    assert _eval(tmp_path / "again", "bm25,shaky")[0] == 0


def test_strict_with_nothing_degraded_exits_0(tmp_path, capsys):
    code, _ = _eval(tmp_path, "bm25", "--strict")
    assert code == 0, capsys.readouterr().err


def test_the_refit_advice_names_the_file_that_holds_candidates_given_in_memory(tmp_path):
    """tune takes the same mapping (the call names it by a placeholder); the file out=
    wrote is said as another way."""
    given = {"q1": ["d1", "d3"], "q2": ["d2", "d1"], "q3": ["d4", "d1"]}
    result = evaluate(tiny_dataset(), "bm25", first_stage=given)
    collection = result.collections[0]
    rows = [{**r, "ece": 0.3} if r["pipeline"] == "bm25" else r for r in collection.rows]
    unwritten = dataclasses.replace(collection, rows=rows).table()
    assert "YOUR_RUN_FILE" not in unwritten
    assert "first_stage=<the same mapping you passed>" in unwritten
    assert "candidates.jsonl" not in unwritten
    out = tmp_path / "out"
    written = evaluate(tiny_dataset(), "bm25", first_stage=given, out=out).collections[0]
    table = dataclasses.replace(written, rows=rows).table()
    assert "first_stage=<the same mapping you passed>" in table
    assert f"or {out / 'candidates.jsonl'}, where out= wrote them" in table
    lines = (out / "candidates.jsonl").read_text().splitlines()
    assert [json.loads(line)["query_id"] for line in lines] == ["q1", "q2", "q3"]
