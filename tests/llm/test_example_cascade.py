"""examples/learn/cascade.toml, the hybrid's best 5 then an LLM judge, run as scorers.md
and pipelines.md run it: against the shipped local judge (here on a free port), the judge
gets exactly ``keep`` calls, judges the order of those 5, and a rerun is free."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_the_example_cascade_judges_the_hybrid_s_best_five(tmp_path, capsys, monkeypatch):
    shipped = (EXAMPLES / "learn" / "cascade.toml").read_text()
    assert 'base_url = "http://127.0.0.1:8011/v1"' in shipped  # local_judge.py's default
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pipeline = tmp_path / "cascade.toml"
    pipeline.write_text(shipped.replace(":8011/", f":{port}/"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "learn" / "local_judge.py"), "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    query = "how do vaccines train the immune system"
    args = ["rank", "-q", query, "-i", str(EXAMPLES / "sample.jsonl"), "-r", str(pipeline)]
    try:
        assert f"judge listening at http://127.0.0.1:{port}/v1" in judge.stdout.readline()
        assert main([*args, "--top-k", "5"]) == 0
        first = capsys.readouterr()
        assert main([*args, "--top-k", "5"]) == 0
        again = capsys.readouterr()
    finally:
        judge.terminate()
        judge.wait(timeout=10)
    assert "LLM usage: cache_hits 0, calls 5, failures 0" in first.err
    assert "cache_hits 5, calls 0" in again.err
    lines = [json.loads(line) for line in first.out.splitlines()]
    assert len(lines) == 5 and {d["score_scale"] for d in lines} == {"grade10"}
    grades = [d["rerank_score"] for d in lines]
    assert grades == sorted(grades, reverse=True)
