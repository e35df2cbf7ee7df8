"""``rerankit eval`` of a cascade whose LLM judge is a local OpenAI-compatible server: a
judge that failed every call is said under the table (its row measures the fallback) and
makes the command exit 1, and judgments read from the cache are counted and said, so a
warm cache does not pass for a free judge."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from eval_tiny import write_llm_cascade, write_tiny

from rerankit.cli import main
from rerankit.eval.runner import calibration_note
from rerankit.llm.testing import FakeLLMServer, Reply


def _collection(tmp_path):
    return write_tiny(tmp_path / "tiny")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return tmp_path


def _eval(folder, pipeline, out):
    argv = ["eval", "--data", str(folder), "--rerankers", f"bm25,{pipeline}", "--no-progress"]
    return main([*argv, "--candidates", "4", "--out", str(out)])


def test_a_judge_that_failed_every_call_is_said_and_exits_1(env, capsys):
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    folder = _collection(env)
    with FakeLLMServer(responder=lambda request: Reply(status=500, text="down")) as server:
        code = _eval(folder, write_llm_cascade(env, server.openai_url), env / "out")
    captured = capsys.readouterr()
    assert code == 1
    assert "| llm-cascade |" in captured.out  # the table is still printed
    note = next(line for line in captured.out.splitlines() if line.startswith("llm-cascade: "))
    assert note.startswith("llm-cascade: 3 of 3 queries degraded (first cause: ")
    assert "its row measures the fallback, not the LLM stage" in note
    assert "500" in note
    assert "refit" not in captured.out  # its scores are the fallback's: no calibration advice
    assert "every query of llm-cascade degraded" in captured.err
    results = json.loads((env / "out" / "results.json").read_text())  # written all the same
    row = next(r for r in results["results"] if r["pipeline"] == "llm-cascade")
    assert row["degraded_queries"] == 3 and "500" in row["degraded_cause"]
    assert results["degraded_note"] == [note]


def test_judgments_read_from_the_cache_are_counted_and_said(env, capsys):
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    folder = _collection(env)
    with FakeLLMServer(responder=lambda request: Reply(text='{"score": 7}')) as server:
        pipeline = write_llm_cascade(env, server.openai_url)
        assert _eval(folder, pipeline, env / "cold") == 0
        cold = capsys.readouterr().out
        assert _eval(folder, pipeline, env / "warm") == 0
        warm = capsys.readouterr().out
    first = json.loads((env / "cold" / "results.json").read_text())["results"][-1]
    again = json.loads((env / "warm" / "results.json").read_text())["results"][-1]
    assert first["llm_calls"] == 5 and first["llm_cache_hits"] == 0
    assert first["input_tokens"] > 0 and first["output_tokens"] > 0
    assert first["tokens"] == first["input_tokens"] + first["output_tokens"]
    assert "from the judgment cache" not in cold
    assert again["llm_calls"] == 0 and again["tokens"] == 0 and again["llm_cache_hits"] == 5
    assert "llm-cascade read 5 LLM judgments from the judgment cache" in warm


def test_a_pipeline_with_degraded_answers_is_not_told_to_refit_its_calibration():
    rows = [{"pipeline": "hybrid", "ece": 0.11, "degraded_queries": 0}]
    rows += [{"pipeline": "llm-cascade", "ece": 0.11, "degraded_queries": 8}]
    note = calibration_note(rows)
    assert "Above 0.05 for hybrid:" in note and "llm-cascade" not in note
