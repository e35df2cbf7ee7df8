"""Learning from clicks: relevance estimates by inverse propensity, the counterfactual
metric, and the verdict that keeps what served the log when the clicks carry no signal."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rerankit.config import build
from rerankit.scorers.learned import FEATURES
from rerankit.training import ltr
from rerankit.training.clicks import (
    QueryLog,
    counterfactual_ndcg,
    ips_relevance,
    learn_from_clicks,
)
from rerankit.training.clicks.counterfactual import served_ndcg
from rerankit.training.clicks.simulate import PositionBasedModel, simulate_query

pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")

SMALL = {
    "settings": {"7 leaves": ltr.SETTINGS["7 leaves"]},
    "trees": (25, 50),
    "blends": (0.5, 1.0),
    "curve": (0.5, 1.0),
}


def _log(shown, clicked, n=4):
    return QueryLog(
        "q",
        "query",
        [f"d{i}" for i in range(n)],
        np.array(shown, dtype=np.int32),
        np.array(clicked, dtype=bool),
        np.full(n, np.nan),
    )


def test_relevance_estimates_divide_clicks_by_expected_examinations():
    log = _log([[0, 1, 2], [1, 0, 2], [0, 1, 2]], [[1, 0, 0], [1, 0, 0], [0, 1, 0]])
    estimate, mass = ips_relevance(log, np.array([1.0, 0.5, 0.25]))
    # d0: at 1, 2, 1 -> 1 + 0.5 + 1 examinations, 1 click; d1: at 2, 1, 2 -> 2, 2 clicks
    np.testing.assert_allclose(mass[:3], [2.5, 2.0, 0.75])
    np.testing.assert_allclose(estimate[:3], [1 / 2.5, 2 / 2.0, 0.0])
    assert math.isnan(estimate[3]) and mass[3] == 0  # never shown: no estimate
    clipped, _ = ips_relevance(log, np.array([1.0, 0.5, 0.01]), clip=0.05)
    assert clipped[2] == 0.0
    np.testing.assert_allclose(
        ips_relevance(log, np.array([1.0, 0.5, 0.01]), clip=0.05)[1][2], 0.15
    )


def test_training_labels_are_clicks_over_expected_examinations_plus_the_smoothing():
    from rerankit.training.clicks.learn import SMOOTHING, _labels

    # d0 at the top in 20 sessions, clicked in 14; d1 always at 10 % examination, clicked once
    shown = [[0, 1, 2, 3]] * 20
    clicked = [[i < 14, i == 0, False, False] for i in range(20)]
    log = _log(shown, clicked)
    theta = np.array([1.0, 0.1, 0.5, 0.5])
    estimate, mass = ips_relevance(log, theta)
    np.testing.assert_allclose(mass, [20.0, 2.0, 10.0, 10.0])
    plain = _labels(estimate, mass, 10)
    smoothed = _labels(estimate, mass, 10, SMOOTHING)
    assert plain.tolist() == [7, 5, 0, 0]  # one click where few look: half the top label
    clicks = np.array([14, 1, 0, 0])
    expected = np.rint(10 * np.clip(clicks / (mass + SMOOTHING), 0, 1)).astype(int)
    assert smoothed.tolist() == expected.tolist() == [6, 2, 0, 0]


@pytest.mark.parametrize("bad", [-1.0, math.nan, "3"])
def test_a_smoothing_that_is_not_a_number_of_examinations_is_refused(bad):
    _, logs, rows = _collection("coverage", queries=12, sessions=5)
    with pytest.raises(ValueError, match="smoothing must be a number >= 0"):
        learn_from_clicks(logs, rows, smoothing=bad, **SMALL)


def test_counterfactual_ndcg_by_hand():
    gains = np.array([0.0, 1.0, np.nan, 0.5])
    ideal = 1 + 0.5 / math.log2(3)
    assert counterfactual_ndcg(np.array([4, 3, 2, 1]), gains) == pytest.approx(
        (1 / math.log2(3) + 0.5 / math.log2(5)) / ideal
    )
    assert counterfactual_ndcg(np.array([0, 9, 0, 5]), gains) == pytest.approx(1.0)
    assert math.isnan(counterfactual_ndcg(np.array([1, 2]), np.array([0.0, np.nan])))


def test_what_was_served_is_scored_session_by_session():
    log = _log([[0, 1, 2], [1, 0, 2]], [[0, 0, 0], [0, 0, 0]], n=3)
    gains = np.array([1.0, 0.0, 0.0])
    assert served_ndcg(log, gains) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert served_ndcg(log.head(1), gains) == pytest.approx(
        counterfactual_ndcg(np.array([3, 2, 1]), gains)
    )


def _collection(relevance: str, *, queries=120, sessions=100, seed=0):
    """30 candidates a query with random features; the logging ranker orders by
    ``first_stage`` plus noise; grades follow ``coverage`` (``relevance="coverage"``) or
    nothing at all (``"none"``: each document's grade drawn at random)."""
    rng = np.random.default_rng(seed)
    model = PositionBasedModel(eta=1.0)
    logs, rows = {}, {}
    for q in range(queries):
        x = rng.normal(size=(30, len(FEATURES)))
        if relevance == "coverage":
            grades = np.digitize(x[:, FEATURES.index("coverage")], [0.0, 0.7, 1.2, 1.8])
        else:
            grades = rng.integers(0, 5, 30)
        order = np.argsort(-(x[:, FEATURES.index("first_stage")] + rng.normal(size=30)))
        ids = [f"{q}-{i}" for i in range(30)]
        logs[str(q)] = simulate_query(
            model,
            key=str(q),
            query="q",
            doc_ids=ids,
            order=order,
            grades=grades,
            sessions=sessions,
            rng=rng,
        )
        rows[str(q)] = (ids, x)
    return model, logs, rows


def test_clicks_without_signal_keep_what_served_the_log():
    model, logs, rows = _collection("none")
    result = learn_from_clicks(logs, rows, propensities=model.propensities(10), **SMALL)
    assert not result.adopt
    assert result.booster is None
    assert "not adopted: it does not beat what served the log" in result.describe()
    with pytest.raises(ValueError, match="nothing to save"):
        result.save("never-written.lgb.txt")
    assert result.verdict.gain < result.verdict.margin * result.verdict.noise


def test_clicks_with_signal_are_learned_and_adopted(tmp_path):
    model, logs, rows = _collection("coverage")
    result = learn_from_clicks(logs, rows, **SMALL)  # propensities estimated from the log
    assert result.adopt and result.booster is not None
    assert result.verdict.gain > 0.05
    assert np.abs(result.propensities.values - model.propensities(10)).max() < 0.15
    # the learning curve refits on half and all of each query's sessions
    assert [round(s) for s, _ in result.curve] == [50, 100]
    report = result.report()
    assert report["adopted"] is True
    assert len(report["propensities"]["by_position"]) == 10
    # the learned ranker orders held-out candidates by coverage, not by the logger's order
    _, x = rows["0"]
    names = list(result.features)
    scores = result.booster.predict(x[:, [FEATURES.index(n) for n in names]])
    coverage = x[:, FEATURES.index("coverage")]
    assert np.corrcoef(scores, coverage)[0, 1] > 0.5
    # saved: the model, its report, and the pipeline that serves it
    spec = result.save(tmp_path / "clicks.lgb.txt")
    written = json.loads((tmp_path / "clicks.lgb.json").read_text())
    assert written["propensities"]["by_position"][0] == 1.0
    scorers = spec["stages"][0].get("scorers", [spec["stages"][0].get("scorer")])
    assert scorers[0]["type"] == "learned" and Path(scorers[0]["model"]).is_file()
    build(spec)  # a pipeline rerankit can load


def test_rows_must_cover_the_logged_queries():
    _, logs, rows = _collection("none", queries=8, sessions=2)
    del rows["3"]
    with pytest.raises(ValueError, match="no features for 1 logged queries"):
        learn_from_clicks(logs, rows, **SMALL)


def test_staged_predictions_equal_predicting_at_each_number_of_trees():
    import lightgbm as lgb

    from rerankit.training.clicks.learn import staged_predictions

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(600, 4)), rng.integers(0, 4, 600)
    params = {"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1}
    booster = lgb.train(params, lgb.Dataset(x, y, group=[20] * 30), num_boost_round=40)
    staged = staged_predictions(booster, x, (1, 10, 40, 80), chunk=250)
    for t in (1, 10, 40):
        np.testing.assert_allclose(staged[t], booster.predict(x, num_iteration=t), atol=1e-12)
    np.testing.assert_allclose(staged[80], booster.predict(x), atol=1e-12)  # only 40 grown


@pytest.mark.parametrize("carried", [False, True])
def test_a_log_without_first_stage_scores_gives_a_pipeline_that_reads_none(carried, tmp_path):
    """Without first-stage scores in the log, the model reads no first-stage feature and
    the blend is with MiniLM alone, so the pipeline never asks for first_stage_score."""
    from rerankit.config import to_toml

    _, logs, rows = _collection("coverage", queries=24, sessions=20)
    if carried:
        for log in logs.values():
            log.first_stage = np.linspace(1.0, 0.0, len(log.doc_ids))
    options = {**SMALL, "blends": (0.5,), "curve": None}
    result = learn_from_clicks(logs, rows, folds=3, keep_learned=True, **options)
    assert result.first_stage is carried
    assert any(n.startswith("first_stage") for n in result.features) is carried
    spec = result.save(tmp_path / "clicks.lgb.txt")
    scorers = spec["stages"][0]["scorers"]
    kinds = [(s["type"], s["weight"]) for s in scorers]
    if carried:
        assert kinds == [("learned", 0.5), ("field", 0.15), ("embedding", 0.35)]
        assert "first_stage_score" in to_toml(spec)
    else:
        assert kinds == [("learned", 0.5), ("embedding", 0.5)]
        assert "first_stage_score" not in to_toml(spec) and "field" not in to_toml(spec)
        assert "with MiniLM" in result.describe() and "first stage" not in result.describe()
    assert json.loads((tmp_path / "clicks.lgb.json").read_text())["first_stage"] is carried
    build(spec)


def test_features_from_another_embedding_model_are_what_the_pipeline_reads(tmp_path):
    """Learned over another model's cosines (``tune --clicks --embedding-model``), the
    pipeline names that model for the learned scorer and for the blend's embedding, and the
    model's report records it."""
    from dataclasses import replace

    from rerankit.backends.bundled import bundled_model_path

    _, logs, rows = _collection("coverage", queries=24, sessions=20)
    options = {**SMALL, "blends": (0.5,), "curve": None}
    result = learn_from_clicks(logs, rows, folds=3, keep_learned=True, **options)
    folder = str(bundled_model_path())  # a folder, standing in for a fine-tuned model
    spec = replace(result, embedding=folder).save(tmp_path / "clicks.lgb.txt")
    learned_entry, embedding_entry = spec["stages"][0]["scorers"]
    assert learned_entry["type"] == "learned" and learned_entry["embedding"] == folder
    assert embedding_entry["type"] == "embedding" and embedding_entry["model"] == folder
    report = json.loads((tmp_path / "clicks.lgb.json").read_text())
    assert report["embedding_model"] == folder
    plain = result.save(tmp_path / "plain.lgb.txt")  # the bundled model: nothing named
    assert "embedding" not in plain["stages"][0]["scorers"][0]
    assert "embedding_model" not in json.loads((tmp_path / "plain.lgb.json").read_text())


def test_the_learning_curve_has_each_point_once_when_shares_take_the_same_sessions():
    from rerankit.training.clicks.learn import SESSION_SHARES

    _, logs, rows = _collection("coverage", queries=24, sessions=2)
    # of 2 sessions, 10, 25 and 50 % all take the first one
    result = learn_from_clicks(logs, rows, folds=3, **{**SMALL, "curve": SESSION_SHARES})
    assert [s for s, _ in result.curve] == [1.0, 2.0]
