"""``tune --clicks`` on a log with exploration: it counts the explored answers by
pipeline, does not ask for exploration the log has, and after a "not adopted" verdict
says there is nothing to deploy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rerankit.cli.main import main
from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import ClickLog, write_features


def _explored_log(path) -> None:
    """Four queries, ten sessions each; every other session explored, three in five of
    those with the pair 6-7 exchanged; one click (position 1) a session."""
    log = ClickLog(path, store="text")
    docs = [{"id": f"d{i}", "text": f"document {i}"} for i in range(8)]
    for q in range(4):
        for s in range(10):
            shown = list(range(8))
            explore = None
            if s % 2:
                swaps = [6] if s % 4 == 1 else []
                for p in swaps:
                    shown[p - 1], shown[p] = shown[p], shown[p - 1]
                explore = {"swapped": swaps}
            log.log_impression(
                f"q{q}:{s}", f"query {q}", docs, shown, pipeline="hybrid", explore=explore
            )
            log.log_feedback(f"q{q}:{s}", [f"d{shown[0]}"])
    log.close()


def _log_and_features(tmp_path):
    """The explored log and a features file for its four queries (random features)."""
    log = tmp_path / "clicks.jsonl"
    _explored_log(log)
    rng = np.random.default_rng(0)
    rows = {
        f"query {q}": ([f"d{i}" for i in range(8)], rng.random((8, len(FEATURES))))
        for q in range(4)
    }
    features = write_features(rows, tmp_path / "f.npz")
    return log, features


def test_tune_clicks_counts_the_explored_answers_and_does_not_ask_for_exploration(tmp_path, capsys):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log, features = _log_and_features(tmp_path)
    out = tmp_path / "learned.toml"
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--out", str(out)]
    assert main([*argv, "--folds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "sessions by pipeline: hybrid 40 (20 explored, 12 with exchanged pairs)" in printed
    assert "turn on exploration" not in printed
    assert "12 answers had exchanged pairs (the highest at positions 6-7)" in printed
    assert "0 clicks on them: too few to measure a position; log more sessions" in printed
    assert "not adopted" in printed
    assert f"nothing to deploy: {out} is what served the log" in printed


def test_tune_clicks_reads_a_propensities_file_with_0s_at_the_floor_and_says_so(tmp_path, capsys):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log, features = _log_and_features(tmp_path)
    older = tmp_path / "probe.propensities.json"  # as tune --clicks wrote it before
    older.write_text(json.dumps({"by_position": [1.0, 0.65, 0.15, 0.28, 0.08, *[0.0] * 5]}))
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--folds", "2"]
    assert main([*argv, "--propensities", str(older), "--out", str(tmp_path / "x.toml")]) == 0
    printed = capsys.readouterr().out
    assert f"note: {older}: positions 6, 7, 8, 9, 10: 0 (no click there" in printed
    assert "taken as 0.05, the least propensity learning weighs a click by" in printed
    assert "propensities by position (given, 40 sessions): 1: 1.000, 2: 0.650" in printed
