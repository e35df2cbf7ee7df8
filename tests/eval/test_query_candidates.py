"""One judged query's candidates out of an evaluation, to rank again: ``--out`` writes
``candidates.jsonl`` (a row per query: ``query_id``, ``query``, ``candidates``), and
``Evaluation.query_candidates(qid)`` gives one; ranked again they give the evaluation's run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rerankit
from rerankit.cli import main
from rerankit.errors import InputError
from rerankit.eval import load_beir

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO / "examples" / "scifact-mini"


def _trec(path: Path, qid: str) -> list[str]:
    """One query's ranking in a TREC run file, best first."""
    rows = [line.split() for line in path.read_text().splitlines()]
    return [r[2] for r in sorted((r for r in rows if r[0] == qid), key=lambda r: int(r[3]))]


def test_a_query_s_candidates_rank_again_as_the_evaluation_ranked_them(tmp_path, capsys):
    out = tmp_path / "results"
    args = ["eval", "--data", str(SCIFACT), "--rerankers", "bm25", "--candidates", "20"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert f"wrote {out / 'candidates.jsonl'}" in capsys.readouterr().err
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    data = load_beir(SCIFACT)
    assert [r["query_id"] for r in rows] == list(data.queries)
    row = rows[3]
    assert row["query"] == data.queries[row["query_id"]] and len(row["candidates"]) == 20
    assert set(row["candidates"][0]) == {"id", "title", "text", "first_stage_score"}
    # the documented route: the query's candidates to a file, ranked with `rank`
    cands = tmp_path / "cands.jsonl"
    cands.write_text("".join(json.dumps(c) + "\n" for c in row["candidates"]))
    assert main(["rank", "-q", row["query"], "-i", str(cands), "-r", "bm25"]) == 0
    ranked = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
    assert ranked[:10] == _trec(out / "runs" / "bm25.trec", row["query_id"])[:10]
    assert [c["id"] for c in row["candidates"]][:10] == _trec(
        out / "runs" / "first_stage.trec", row["query_id"]
    )[:10]


def test_query_candidates_in_python():
    result = rerankit.evaluate(SCIFACT, "bm25", candidates=10, max_queries=3)
    qid = next(iter(result.rows[1]["per_query_ndcg@10"]))
    one = result.query_candidates(qid)
    assert one["query_id"] == qid and len(one["candidates"]) == 10
    again = rerankit.load("bm25").rerank(one["query"], one["candidates"])
    run = result.collections[0].runs[1]
    assert run.name == "bm25"
    assert [r.document["id"] for r in again] == sorted(run.run[qid], key=lambda d: -run.run[qid][d])
    with pytest.raises(InputError, match="'nope' is not among the 3 queries evaluated"):
        result.query_candidates("nope")
