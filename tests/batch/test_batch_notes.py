"""A note about the pipeline's settings that every row would get (the default hybrid does
not fuse the candidates' first-stage scores, as rerankit's own candidates.jsonl carry) is
said once in the summary, not counted as a row "with warnings"."""

from __future__ import annotations

import json

import pytest

from rerankit.batch import run_batch
from rerankit.cli import main
from rerankit.rerankers import HybridReranker
from rerankit.scorers import BM25Scorer

ROWS = [
    {
        "query_id": f"q{i}",
        "query": f"capital city {i}",
        "candidates": [
            {"id": "a", "text": "Paris is the capital city", "first_stage_score": 3.0},
            {"id": "b", "text": f"a city {i}", "first_stage_score": 1.0},
        ],
    }
    for i in range(3)
]
EMPTY = {"query_id": "empty", "query": "x", "candidates": []}  # a real problem: warned
UNFUSED = (
    "{} a first-stage (retriever) score, which this hybrid does not fuse: it ranks by the "
    "texts alone (probabilities); to fuse the retriever's score too (scores then relative "
    "to the call), set the hybrid's first_stage_weight (e.g. 0.1)"
)


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class SaysUnfused(BM25Scorer):
    """A stand-in for the default hybrid's words (the slow test below reads the real
    hybrid's): a note on every row, worded with the row's own count."""

    async def score(self, query, docs, **context):
        batch = await super().score(query, docs, **context)
        batch.warnings.append(UNFUSED.format(f"{len(docs)} of {len(docs) + 1} documents carry"))
        return batch


def test_a_note_every_row_gets_is_counted_once_not_as_warned(tmp_path):
    src, out = write_rows(tmp_path / "in.jsonl", [*ROWS, EMPTY]), tmp_path / "out.jsonl"
    summary = run_batch(src, out, SaysUnfused())
    assert summary.warned == 1  # the empty candidate list only
    assert summary.notes == {UNFUSED.format("documents carry"): 3}
    assert summary.to_dict()["notes"] == summary.notes
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [bool(r["warnings"]) for r in written] == [False, False, False, True]
    assert all("_notes" not in r for r in written)


@pytest.mark.slow  # loads the bundled MiniLM (about 15 s here)
def test_the_default_hybrids_note_is_said_once_by_the_command(tmp_path, capsys):
    src, out = write_rows(tmp_path / "in.jsonl", [*ROWS, EMPTY]), tmp_path / "out.jsonl"
    args = ["batch", "-i", str(src), "--out", str(out), "-r", "hybrid", "--no-progress"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "1 with warnings" in err  # the empty candidate list
    assert err.count(f"note (3 rows): {UNFUSED.format('documents carry')}") == 1
    summary = run_batch(src, out, HybridReranker(first_stage_weight=0.0), overwrite=True)
    assert summary.notes == {} and summary.warned == 1  # a weight chosen: nothing to say


def test_long_documents_read_in_part_are_counted_apart_from_warned(
    tmp_path, judge_spec, monkeypatch, capsys
):
    """A scorer reading long documents in part (here an LLM judge's max_chars) is routine
    on a corpus of long documents: counted as ``truncated``, kept in the row's warnings
    and flags, and not in ``warned``, which a nightly monitor alerts on."""
    from rerankit.llm.testing import FakeLLMServer, Reply

    monkeypatch.setenv("RERANKIT_TRUNCATED_TEST_KEY", "k")
    rows = [
        {"query_id": "long", "query": "capital", "candidates": ["Paris is the capital", "x"]},
        {"query_id": "short", "query": "capital", "candidates": ["Paris", "x"]},
        EMPTY,
    ]
    reply = Reply(text=json.dumps({"score": 3}))
    with FakeLLMServer(responder=lambda request: reply) as server:
        spec = judge_spec(server.openai_url, "RERANKIT_TRUNCATED_TEST_KEY")
        spec["stages"][0]["scorer"]["max_chars"] = 10
        pipe = write_rows(tmp_path / "judge.json", [])
        pipe.write_text(json.dumps(spec))
        src, out = write_rows(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
        summary_file = tmp_path / "s.json"
        args = ["batch", "-i", str(src), "--out", str(out), "-r", str(pipe), "--no-progress"]
        assert main([*args, "--summary", str(summary_file)]) == 0
    err = capsys.readouterr().err
    summary = json.loads(summary_file.read_text())
    assert (summary["warned"], summary["truncated"]) == (1, 1), summary  # the empty list
    assert "1 with warnings, 1 with long documents read in part (truncated)" in err
    long = json.loads(out.read_text().splitlines()[0])
    said = "1 document longer than 10 characters was read on its first 10 (max_chars)"
    assert long["warnings"] and said in long["warnings"][0]
