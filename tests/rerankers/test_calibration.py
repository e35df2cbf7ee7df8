"""Calibrated, pair-wise scores: logistic fits, reliability, and fusions whose scores do not
depend on the other documents of a request."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import load
from rerankit.calibration import (
    Calibration,
    expected_calibration_error,
    fit_calibration,
    fit_logistic,
    reliability_bins,
    reliability_svg,
    sigmoid,
)
from rerankit.normalize import SCORE_SCALES, scale_to_unit, unit_scale
from rerankit.rerankers import FusionReranker, HybridReranker
from rerankit.scorers import EmbeddingScorer
from rerankit.scorers.coverage import CoverageScorer
from rerankit.scorers.lexical import BM25Scorer, JaccardScorer
from rerankit.text import CorpusStats

QUERY = "solar power on roofs"
POOL = [
    "solar panels on roofs make power",
    "wind farms at sea",
    "roofs of old houses",
    "power stations burn coal",
    "solar power, solar roofs, solar everything",
    "a recipe for bread",
]


def test_a_logistic_fit_recovers_the_model_that_made_the_labels():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(20000, 2))
    y = (rng.random(20000) < sigmoid(x @ np.array([2.0, -1.0]) - 0.5)).astype(float)
    coef, intercept = fit_logistic(x, y)
    np.testing.assert_allclose(coef, [2.0, -1.0], atol=0.1)
    assert intercept == pytest.approx(-0.5, abs=0.1)


def test_weighted_rows_count_as_repeated_rows():
    """A weight of 3 on a row fits exactly as the row written three times; equal weights
    change nothing."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=300)
    y = (rng.random(300) < sigmoid(1.5 * x)).astype(float)
    weight = np.where(np.arange(300) < 100, 3.0, 1.0)
    # the ridge penalty scales with the rows: compare without it
    repeated = fit_logistic(
        np.concatenate([x[:100]] * 3 + [x[100:]]),
        np.concatenate([y[:100]] * 3 + [y[100:]]),
        l2=0.0,
    )
    weighted = fit_logistic(x, y, sample_weight=weight, l2=0.0)
    np.testing.assert_allclose(weighted[0], repeated[0], rtol=1e-6)
    assert weighted[1] == pytest.approx(repeated[1], rel=1e-6)
    plain = fit_logistic(x, y)
    np.testing.assert_allclose(fit_logistic(x, y, sample_weight=np.full(300, 5.0))[0], plain[0])
    with pytest.raises(ValueError, match="sample_weight"):
        fit_logistic(x, y, sample_weight=-weight)


def test_logistic_fit_refuses_what_it_cannot_fit():
    with pytest.raises(ValueError, match="both relevant"):
        fit_logistic([1.0, 2.0], [1, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        fit_logistic([1.0, 2.0], [0, 2])
    with pytest.raises(ValueError, match="equal"):
        fit_logistic([1.0, 2.0, 3.0], [0, 1])
    with pytest.raises(ValueError, match="finite"):
        fit_logistic([1.0, float("nan")], [0, 1])


def test_ece_is_small_for_calibrated_and_large_for_shifted_probabilities():
    rng = np.random.default_rng(3)
    p = rng.random(50000)
    y = (rng.random(50000) < p).astype(float)
    assert expected_calibration_error(p, y) < 0.01
    assert expected_calibration_error(np.clip(p + 0.2, 0, 1), y) > 0.15
    bins = reliability_bins(p, y)
    assert sum(b["count"] for b in bins) == p.size and len(bins) == 10
    assert all(b["low"] <= b["predicted"] <= b["high"] for b in bins)
    # a fitted calibration turns a raw score into probabilities with a small ECE
    raw = rng.normal(size=50000)
    labels = (rng.random(50000) < sigmoid(3 * raw - 1)).astype(float)
    cal = fit_calibration(raw, labels)
    assert expected_calibration_error(cal.probability(raw), labels) < 0.01
    assert expected_calibration_error(sigmoid(raw), labels) > 0.05  # uncalibrated


def test_the_reliability_diagram_is_an_svg_with_a_line_per_curve():
    p = np.linspace(0, 1, 100)
    svg = reliability_svg({"a <b>": reliability_bins(p, p > 0.5), "c": reliability_bins(p, p)})
    assert svg.startswith("<svg") and svg.count("<polyline") == 2 and "a &lt;b&gt;" in svg


def test_calibration_values_are_checked():
    assert Calibration.parse({"slope": 2, "intercept": -1}) == Calibration(2.0, -1.0)
    with pytest.raises(ValueError, match="unknown keys"):
        Calibration.parse({"slope": 1, "bias": 0})
    with pytest.raises(ValueError, match="finite"):
        Calibration(float("inf"), 0)
    with pytest.raises(ValueError, match="finite"):
        Calibration(True, 0)


def test_scales_map_into_the_unit_interval_one_score_at_a_time():
    np.testing.assert_allclose(scale_to_unit([-0.2, 0.5, 1.0], "cosine"), [0, 0.5, 1])
    np.testing.assert_allclose(scale_to_unit([0.0, 2.0], "logit"), [0.5, sigmoid(2.0)])
    np.testing.assert_allclose(scale_to_unit([3.0, 10.0], "grade10"), [0.3, 1.0])
    np.testing.assert_allclose(scale_to_unit([2.0, 4.0], "relative"), [0, 1])
    with pytest.raises(ValueError, match="unknown score scale"):
        scale_to_unit([1.0], "percent")


def test_relative_scores_are_min_max_normalised_even_inside_the_unit_interval():
    # relative scores that happen to lie in [0, 1] (BM25 over a few candidates, RRF) still
    # mean nothing alone: best 1, worst 0, nothing to tell apart 0.5
    np.testing.assert_allclose(scale_to_unit([0.45, 0.40, 0.0], "relative"), [1, 0.4 / 0.45, 0])
    np.testing.assert_allclose(scale_to_unit([0.0326, 0.0324], "relative"), [1, 0])
    np.testing.assert_allclose(scale_to_unit([0.3], "relative"), [0.5])
    np.testing.assert_allclose(scale_to_unit([0.3, 0.3], "relative"), [0.5, 0.5])


def test_unit_scale_names_the_scale_scale_to_unit_gives():
    said = {scale: unit_scale(scale) for scale in SCORE_SCALES}
    assert said == {
        "probability": "probability",
        "relative": "relative",
        **{s: "unit" for s in ("unit", "cosine", "grade10", "logit")},
    }
    with pytest.raises(ValueError, match="unknown score scale"):
        unit_scale("percent")


def _calibrated_fusion() -> FusionReranker:
    return FusionReranker(
        [CoverageScorer(), JaccardScorer()],
        weights={"coverage": 0.7, "jaccard": 0.3},
        normalization_method="calibrated",
        calibration={"coverage": {"slope": 4, "intercept": -2}, "jaccard": Calibration(6, -1)},
        output_calibration={"slope": 1.5, "intercept": 0.25},
    )


def test_a_calibrated_fusion_is_the_documented_formula():
    fusion = _calibrated_fusion()
    assert fusion.score_scale == "probability"
    result = fusion.rerank(QUERY, POOL)
    assert result.score_scale == "probability"
    for r in result:
        logit = 0.7 * (4 * r.scores["coverage"] - 2) + 0.3 * (6 * r.scores["jaccard"] - 1)
        assert r.score == pytest.approx(float(sigmoid(1.5 * logit + 0.25)))
        parts = r.explanation
        assert sum(p["contribution"] for p in parts.values()) == pytest.approx(
            float(np.log(r.score / (1 - r.score)))
        )
        assert parts["(intercept)"]["contribution"] == pytest.approx(0.25)
        assert parts["coverage"]["normalized"] == pytest.approx(
            float(sigmoid(4 * r.scores["coverage"] - 2))
        )


@settings(max_examples=40, deadline=None)
@given(
    target=st.integers(0, len(POOL) - 1),
    others=st.lists(st.integers(0, len(POOL) - 1), max_size=5),
)
def test_a_calibrated_score_does_not_depend_on_the_other_documents(target, others):
    fusion = _calibrated_fusion()
    alone = fusion.rerank(QUERY, [POOL[target]])[0].score
    docs = [POOL[i] for i in others] + [POOL[target]]
    together = next(r for r in fusion.rerank(QUERY, docs) if r.index == len(docs) - 1)
    assert together.score == pytest.approx(alone, abs=1e-12)


def test_a_min_max_fusion_is_relative_and_says_so():
    fusion = FusionReranker([CoverageScorer(), JaccardScorer()])
    assert fusion.score_scale == "relative"
    assert fusion.rerank(QUERY, POOL[:1]).score_scale == "relative"


def test_calibrated_fusion_mistakes_are_named():
    with pytest.raises(ValueError, match=r"missing \['jaccard'\]"):
        FusionReranker(
            [CoverageScorer(), JaccardScorer()],
            normalization_method="calibrated",
            calibration={"coverage": {"slope": 1, "intercept": 0}},
        )
    with pytest.raises(ValueError, match="weighted_average"):
        FusionReranker(
            [CoverageScorer()],
            "rrf",
            normalization_method="calibrated",
            calibration={"coverage": {"slope": 1, "intercept": 0}},
        )
    with pytest.raises(ValueError, match="only with normalization"):
        FusionReranker([CoverageScorer()], calibration={"coverage": {"slope": 1, "intercept": 0}})


def test_a_calibrated_fusion_is_declared_in_a_pipeline_file(tmp_path):
    path = tmp_path / "calibrated.toml"
    path.write_text(
        'normalization = "calibrated"\n'
        "output_calibration = { slope = 1.5, intercept = 0.25 }\n"
        "scorers = [\n"
        '  { type = "coverage", weight = 0.7, calibration = { slope = 4, intercept = -2 } },\n'
        '  { type = "jaccard", weight = 0.3, calibration = { slope = 6, intercept = -1 } },\n'
        "]\n"
    )
    declared = load(path)
    direct = _calibrated_fusion()
    assert [r.score for r in declared.rerank(QUERY, POOL)] == pytest.approx(
        [r.score for r in direct.rerank(QUERY, POOL)]
    )


def test_bm25_with_fixed_statistics_is_pair_wise_and_query_normalised():
    stats = CorpusStats({"solar": 3, "power": 10, "roof": 5}, n_docs=1000)
    scorer = BM25Scorer(idf=stats, avgdl=8, query_normalized=True)
    assert scorer.score_scale == "unit" and BM25Scorer().score_scale == "relative"
    together = scorer.score_texts(QUERY, POOL)
    alone = [scorer.score_texts(QUERY, [d])[0] for d in POOL]
    np.testing.assert_allclose(together, alone)
    assert together.min() >= 0 and together.max() < 1
    # without query normalisation the same numbers times the query's ceiling
    plain = BM25Scorer(idf=stats, avgdl=8).score_texts(QUERY, POOL)
    ratio = plain[together > 0] / together[together > 0]
    np.testing.assert_allclose(ratio, ratio[0])
    with pytest.raises(ValueError, match="avgdl"):
        BM25Scorer(avgdl=0)


def test_a_calibrated_explanation_adds_up_to_the_score():
    """Each signal's contribution and the calibration's constant sum to the score's logit,
    so a person can read how a probability came about."""
    import math

    from rerankit.rerankers import FusionReranker
    from rerankit.scorers import BM25Scorer, JaccardScorer

    reranker = FusionReranker(
        [BM25Scorer(), JaccardScorer()],
        weights={"bm25": 0.6, "jaccard": 0.4},
        normalization_method="calibrated",
        calibration={
            "bm25": {"slope": 1.2, "intercept": -2.0},
            "jaccard": {"slope": 4.0, "intercept": -1.0},
        },
        output_calibration={"slope": 1.5, "intercept": 0.7},
    )
    docs = ["solar power plants", "wind", "solar panels on roofs", "bread"]
    result = reranker.rerank("solar power", docs)
    assert result.score_scale == "probability"
    for r in result:
        total = sum(part["contribution"] for part in r.explanation.values())
        assert 1 / (1 + math.exp(-total)) == pytest.approx(r.score, abs=1e-12)
        assert r.explanation["(intercept)"]["contribution"] == pytest.approx(0.7)
    assert "score = sigmoid(sum of contrib)" in result.explain_table()


def test_the_note_on_another_embedding_model_names_the_model(caplog):
    """It named the scorer ('embedding'), the same for every model."""
    with caplog.at_level(logging.WARNING, logger="rerankit.rerankers.hybrid"):
        HybridReranker(EmbeddingScorer("./ml-embed"))  # loads nothing until it scores
        HybridReranker(model="org/some-multilingual-model")
    said = [r.getMessage() for r in caplog.records if "built-in calibration" in r.getMessage()]
    assert len(said) == 2
    assert "bundled all-MiniLM-L6-v2, not './ml-embed'; scores are relative" in said[0]
    assert "not 'org/some-multilingual-model'" in said[1]
