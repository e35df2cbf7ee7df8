"""What the propensities say of a log's exploration: a log with exchanged pairs that
measured nothing is told so (not asked to turn exploration on), a log explored from the
top (``randpair(..., protect=0)``) is not told that exploration never moves the top, no
position's estimate is 0, and what ``tune --clicks`` writes is what ``--propensities``
reads."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import ClickLog, estimate_propensities, learn_from_log
from rerankit.training.clicks.exploration import Exploration, count_exploration
from rerankit.training.clicks.given import read_propensities
from rerankit.training.clicks.propensity import Propensities
from rerankit.training.clicks.reader import read_log
from rerankit.training.clicks.reliability import reliability_warning
from rerankit.training.clicks.simulate import PositionBasedModel, simulate_query

FALLING = [1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1]
FEW = [900, 400, 300, 200, 100, 80, 60, 40, 24, 3]


def _explored_log(path, *, swapped_at=6):
    """Four queries, ten sessions each over six documents; every other session explored,
    half of those with the pair at ``swapped_at`` exchanged; a click on position 1."""
    log = ClickLog(path, store="text")
    docs = [{"id": f"d{i}", "text": f"document {i}"} for i in range(8)]
    for q in range(4):
        for s in range(10):
            rid = f"q{q}:{s}"
            shown = list(range(8))
            explore = None
            if s % 2:
                swaps = [swapped_at] if s % 4 == 1 else []
                for p in swaps:
                    shown[p - 1], shown[p] = shown[p], shown[p - 1]
                explore = {"swapped": swaps}
            log.log_impression(rid, f"query {q}", docs, shown, pipeline="old", explore=explore)
            clicked = [f"d{shown[0]}"] + ([f"d{shown[swapped_at]}"] if (q, s) == (0, 1) else [])
            log.log_feedback(rid, clicked)
    log.close()


def test_the_exploration_of_a_log_is_counted(tmp_path):
    _explored_log(tmp_path / "clicks.jsonl", swapped_at=2)
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    found = count_exploration(sessions, depth=10)
    # 20 explored, 12 with the pair 2-3 exchanged; one click landed on it
    assert found == Exploration(sessions=20, exchanged=12, clicks=1, lowest=2)
    assert found.moved_top and found.describe() == "20 explored, 12 with exchanged pairs"
    assert count_exploration(sessions, depth=2).exchanged == 0  # the pair starts past depth


def test_a_log_whose_exchanged_pairs_measured_nothing_is_not_asked_to_explore():
    exploration = Exploration(sessions=33, exchanged=15, clicks=1, lowest=5)
    warning = reliability_warning(FALLING, FEW, measured=[], exploration=exploration)
    assert "turn on exploration" not in warning
    assert "15 answers had exchanged pairs (the highest at positions 5-6)" in warning
    assert "1 click on them: too few to measure a position; log more sessions" in warning
    # explored, but no pair exchanged: say that, not "turn it on"
    none = Exploration(sessions=33, exchanged=0, clicks=0, lowest=None)
    warning = reliability_warning(FALLING, FEW, measured=[], exploration=none)
    assert "turn on exploration" not in warning and "raise [server] explore_pairs" in warning
    # nothing known of exploration: as before
    assert "turn on exploration" in reliability_warning(FALLING, FEW, measured=[])


def test_a_log_explored_from_the_top_is_not_told_the_top_never_moves():
    top = Exploration(sessions=90, exchanged=60, clicks=40, lowest=1)  # protect=0
    measured = [2, 4, 6, 7, 9, 10]
    warning = reliability_warning(FALLING, FEW, measured=measured, exploration=top)
    assert "never moves the top" not in warning
    assert "(the highest at positions 1-2)" in warning
    assert "too few to measure position 3; log more sessions" in warning
    ratios = [0.8 if p in measured else None for p in range(2, 11)]
    found = Propensities(np.array(FALLING), "regression EM, adjacent ratios", 300)
    found.swap_ratios, found.exploration = ratios, top
    assert "never moves the top" not in found.caveat()
    assert "too few to measure position 3" in found.caveat()
    # the service's RandPair (protect 3): its exploration cannot measure the top, said so
    found.exploration = Exploration(sessions=90, exchanged=60, clicks=40, lowest=4)
    assert "RandPair in the service never moves the top 3" in found.caveat()


def _protect_0_logs(queries: int, sessions: int, seed: int):
    """Query logs of 20 candidates with random features, ordered by cosine plus noise,
    explored by RandPair from the top (protect=0, 30 % of the pairs)."""
    rng = np.random.default_rng(seed)
    logs, rows = {}, {}
    for q in range(queries):
        x = rng.normal(size=(20, len(FEATURES)))
        cos = x[:, FEATURES.index("cosine")]
        ids = [f"{q}-{i}" for i in range(20)]
        logs[str(q)] = simulate_query(
            PositionBasedModel(),
            key=str(q),
            query="q",
            doc_ids=ids,
            order=np.argsort(-(cos + rng.normal(size=20))),
            grades=np.digitize(cos, [-0.5, 0.3, 1.0, 1.6]),
            sessions=sessions,
            rng=rng,
            explore=0.3,
            protect=0,
        )
        rows[str(q)] = (ids, x)
    return logs, rows


def test_no_position_is_estimated_0_and_the_file_written_is_read_back(tmp_path):
    """Exchanged pairs with no click at the lower position measure nothing (a ratio of 0
    made every position below it 0, and --propensities then refused the file)."""
    logs, rows = _protect_0_logs(queries=40, sessions=100, seed=4)
    for log in logs.values():
        log.clicked[:, 5:] = False  # no click at position 6 or below
    found = estimate_propensities(logs, rows, features=("cosine", "bm25"))
    assert found.swap_ratios[4] is None  # positions 5-6: no click at 6, nothing measured
    assert np.all(found.values > 0), found.values
    assert "0.000" not in found.describe()
    written = tmp_path / "learned.propensities.json"
    written.write_text(json.dumps(found.as_dict()))
    assert read_propensities(written) == pytest.approx(found.values.tolist())


def test_a_file_with_0_from_an_older_tune_is_read_at_the_floor_with_a_warning(tmp_path, caplog):
    written = tmp_path / "learned.propensities.json"
    written.write_text(json.dumps({"by_position": [1.0, 0.65, 0.15, 0.28, 0.08, *[0.0] * 5]}))
    with caplog.at_level(logging.WARNING):
        values = read_propensities(written)
    assert values[5:] == [0.05] * 5 and values[:5] == [1.0, 0.65, 0.15, 0.28, 0.08]
    assert "position 6: 0 (no click there in the log it was estimated from" in caplog.text
    assert "taken as 0.05, the least propensity learning weighs a click by" in caplog.text


def test_learning_from_an_explored_log_counts_and_says_its_exploration(tmp_path):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    path = tmp_path / "clicks.jsonl"
    _explored_log(path)
    rng = np.random.default_rng(0)
    rows = {
        f"query {q}": ([f"d{i}" for i in range(8)], rng.random((8, len(FEATURES))))
        for q in range(4)
    }
    found = learn_from_log(path, rows=rows, folds=2, curve=None)
    assert found.explored["old"] == Exploration(20, 12, 1, 6)
    warning = found.learning.propensities.warning()
    assert "turn on exploration" not in warning
    assert "12 answers had exchanged pairs (the highest at positions 6-7)" in warning
    assert found.learning.propensities.as_dict()["exploration"]["exchanged"] == 12
