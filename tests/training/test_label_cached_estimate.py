"""What the judgment cache already holds is free, for a listwise judge's windows as for a
pointwise judge's documents: ``label --dry-run`` estimates only the calls the run will
make and says how many the cache answers, and ``--max-calls`` / ``--budget`` let a run read
what the cache holds (a listwise run counted each cached window as a call to pay for, and
stopped before it). Through the real openai SDK against a local server."""

from __future__ import annotations

import json
import re

import pytest
from fake_judge import cached_judge_file

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.llm.testing import FakeLLMServer, Reply

CHUNKS = re.compile(r"Chunks \(JSON array\):\n(.*)\n\nQuestion", re.S)
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')
#: calls a query's 6 candidates take: one per document, or two windows (4 wide, step 2)
CALLS = {"pointwise": 6, "listwise": 2}


def answer(request) -> Reply:
    chunks = CHUNKS.search(request.prompt)
    if chunks is None:  # pointwise: a grade for the one document asked about
        doc = json.loads(DOC.search(request.prompt).group(1))
        return Reply(text=json.dumps({"id": doc, "score": 7}))
    n = len(json.loads(chunks.group(1)))  # listwise: the window's order, reversed
    order = {"reranked_indices": list(range(n))[::-1], "is_rejected": False}
    return Reply(text=json.dumps({**order, "rejection_reason": ""}))


def judge_file(tmp_path, server, monkeypatch, kind):
    window = "window = 4\nstep = 2\n" if kind == "listwise" else ""
    return cached_judge_file(tmp_path, server, monkeypatch, kind, window)


def run_label(collection, judge, out, queries, *extra):
    args = ["label", "--data", str(collection), "--judge", str(judge), "--candidates", "6"]
    return main([*args, "--max-queries", str(queries), "--out", str(out), "--no-progress", *extra])


@pytest.mark.parametrize("kind", ["pointwise", "listwise"])
def test_the_dry_run_counts_only_the_calls_the_cache_does_not_answer(
    tmp_path, synthetic, monkeypatch, capsys, kind
):
    collection = synthetic(tmp_path / "data")
    with FakeLLMServer(responder=answer) as server:
        judge = judge_file(tmp_path, server, monkeypatch, kind)
        assert run_label(collection, judge, tmp_path / "dry", 3, "--dry-run") == 0
        said = capsys.readouterr().err
        assert f"up to {3 * CALLS[kind]} calls, about" in said
        assert "; the judgment cache holds none of them yet" in said
        assert run_label(collection, judge, tmp_path / "first", 2) == 0
        assert len(server.requests) == 2 * CALLS[kind]
        capsys.readouterr()
        assert run_label(collection, judge, tmp_path / "dry", 3, "--dry-run") == 0
        said = capsys.readouterr().err
        assert f"up to {CALLS[kind]} calls, about" in said  # the third query's
        assert f"; {2 * CALLS[kind]} more calls the judgment cache answers, for free" in said
        assert run_label(collection, judge, tmp_path / "all", 3) == 0
        assert len(server.requests) == 3 * CALLS[kind]  # as estimated: one query's more


@pytest.mark.parametrize("limit", [("--max-calls", "1"), ("--budget", "0.000001")])
def test_a_listwise_run_reads_the_cached_windows_under_a_limit(
    tmp_path, synthetic, monkeypatch, capsys, limit
):
    collection = synthetic(tmp_path / "data")
    with FakeLLMServer(responder=answer) as server:
        judge = judge_file(tmp_path, server, monkeypatch, "listwise")
        assert run_label(collection, judge, tmp_path / "first", 2) == 0
        sent = len(server.requests)
        # a limit below one query's calls: the two cached queries cost nothing
        assert run_label(collection, judge, tmp_path / "again", 3, *limit) == 3  # stopped
        assert len(server.requests) == sent
    report = json.loads((tmp_path / "again" / "label_report.json").read_text())
    assert report["labelled_queries"] == 2 and report["calls"] == 0
    assert report["cache_hits"] == 2 * CALLS["listwise"]
