from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rerankit.fusion import (
    NORMALIZATION_METHODS,
    ScoreCombinationMethod,
    combine_scores,
    fuse,
    normalize_scores,
    rank_positions,
    resolve_weights,
)

M = ScoreCombinationMethod


def test_spec3_min_max_example_holds_exactly():
    assert normalize_scores([10, 25, 15, 30, 20], "min_max").tolist() == [0.0, 0.75, 0.25, 1.0, 0.5]


def test_spec3_weighted_combination_example_holds_exactly():
    combined = combine_scores(
        [{"entity1": 0.8, "entity2": 0.6}, {"entity1": 0.7, "entity2": 0.9}],
        method=M.WEIGHTED_AVERAGE,
        weights={"strategy_0": 0.6, "strategy_1": 0.4},
    )
    assert combined == {"entity1": 0.76, "entity2": 0.72}


def test_z_score_is_sigmoid_of_standard_score():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    z = (x - x.mean()) / x.std()
    np.testing.assert_allclose(normalize_scores(x, "z_score"), 1 / (1 + np.exp(-z)))


def test_softmax_and_rank_normalisation():
    x = [1.0, 3.0, 2.0, 3.0]
    soft = normalize_scores(x, "softmax")
    np.testing.assert_allclose(soft, np.exp(x) / np.exp(x).sum())
    # ranks: the two 3.0 share rank 1.5; 2.0 is third; 1.0 fourth -> (n - rank) / (n - 1)
    np.testing.assert_allclose(normalize_scores(x, "rank"), [0.0, 2.5 / 3, 1 / 3, 2.5 / 3])


@pytest.mark.parametrize("method", NORMALIZATION_METHODS)
def test_constant_single_and_empty_inputs(method):
    expected = 0.25 if method == "softmax" else 0.5
    np.testing.assert_allclose(normalize_scores([7.0] * 4, method), [expected] * 4)
    assert normalize_scores([3.0], method).tolist() == [1.0 if method == "softmax" else 0.5]
    assert normalize_scores([], method).tolist() == []


def test_normalize_rejects_non_finite_and_unknown_methods():
    with pytest.raises(ValueError, match=r"non-finite values at positions \[1\]"):
        normalize_scores([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="unknown normalization"):
        normalize_scores([1.0], "l2")


def test_rank_positions_average_ties():
    np.testing.assert_allclose(rank_positions([5, 9, 5, 1]), [2.5, 1.0, 2.5, 4.0])


def test_methods_on_a_hand_computed_example():
    a = {"x": 0.9, "y": 0.5, "z": 0.0}
    b = {"x": 0.2, "y": 0.8, "z": 0.4}
    both = [a, b]
    assert combine_scores(both, M.MAX) == {"x": 0.9, "y": 0.8, "z": 0.4}
    assert combine_scores(both, M.MIN) == {"x": 0.2, "y": 0.5, "z": 0.0}
    assert combine_scores(both, M.COMB_SUM) == pytest.approx({"x": 1.1, "y": 1.3, "z": 0.4})
    # MNZ counts strategies with a non-zero score: z has one
    assert combine_scores(both, M.COMB_MNZ) == pytest.approx({"x": 2.2, "y": 2.6, "z": 0.4})
    # ranks: a -> x1 y2 z3 ; b -> y1 z2 x3
    rrf = combine_scores(both, M.RRF)
    assert rrf == pytest.approx({"x": 1 / 61 + 1 / 63, "y": 1 / 62 + 1 / 61, "z": 1 / 63 + 1 / 62})
    assert combine_scores(both, M.RRF, rrf_k=0)["x"] == pytest.approx(1 + 1 / 3)
    borda = combine_scores(both, M.BORDA)
    assert borda == pytest.approx({"x": 3 + 1, "y": 2 + 3, "z": 1 + 2})
    weighted_rrf = combine_scores(both, "rrf", weights={"strategy_0": 3, "strategy_1": 1})
    assert weighted_rrf["x"] == pytest.approx(1.5 / 61 + 0.5 / 63)


def test_named_strategies_and_missing_entities():
    combined = combine_scores(
        {"text": {"a": 1.0, "b": 0.5}, "semantic": {"b": 1.0, "c": 0.2}},
        M.WEIGHTED_AVERAGE,
        weights={"text": 0.5, "semantic": 0.5},
    )
    assert combined == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.1})
    assert combine_scores({"t": {"a": 1.0}, "s": {"b": 0.3}}, M.MIN) == {"a": 1.0, "b": 0.3}
    # RRF ranks each strategy over the entities it scored
    rrf = combine_scores({"t": {"a": 1.0, "b": 0.5}, "s": {"b": 1.0}}, M.RRF)
    assert rrf == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61})
    assert combine_scores([]) == {}


def test_weight_errors_are_explicit():
    names = ["text", "semantic"]
    with pytest.raises(ValueError, match=r"unknown strategies \['graph'\]"):
        resolve_weights(names, {"text": 0.5, "semantic": 0.3, "graph": 0.2})
    with pytest.raises(ValueError, match=r"missing \['semantic'\]"):
        resolve_weights(names, {"text": 1.0})
    with pytest.raises(ValueError, match=">= 0"):
        resolve_weights(names, {"text": -1.0, "semantic": 2.0})
    with pytest.raises(ValueError, match="all be zero"):
        resolve_weights(names, {"text": 0.0, "semantic": 0.0})
    np.testing.assert_allclose(resolve_weights(names, {"text": 2, "semantic": 6}), [0.25, 0.75])
    np.testing.assert_allclose(resolve_weights(names, None), [0.5, 0.5])
    with pytest.raises(ValueError, match="non-finite"):
        combine_scores([{"a": math.inf}])
    with pytest.raises(ValueError, match="unknown combination method"):
        ScoreCombinationMethod.parse("median")
    assert ScoreCombinationMethod.parse("WEIGHTED_AVERAGE") is M.WEIGHTED_AVERAGE


FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    matrix=st.integers(1, 4).flatmap(
        lambda m: st.integers(1, 12).flatmap(lambda n: arrays(np.float64, (m, n), elements=FINITE))
    ),
    norm=st.sampled_from(NORMALIZATION_METHODS),
    method=st.sampled_from(list(M)),
    raw_weights=st.lists(st.floats(0.01, 10), min_size=4, max_size=4),
)
def test_fusion_of_finite_scores_is_finite_and_in_range(matrix, norm, method, raw_weights):
    m, n = matrix.shape
    normalized = np.vstack([normalize_scores(row, norm) for row in matrix])
    assert np.all((normalized >= 0) & (normalized <= 1))
    names = [f"s{i}" for i in range(m)]
    w = resolve_weights(names, dict(zip(names, raw_weights[:m], strict=True)))
    out = fuse(normalized, method, w)
    assert out.shape == (n,) and np.all(np.isfinite(out))
    upper = {
        M.WEIGHTED_AVERAGE: 1.0,
        M.MAX: 1.0,
        M.MIN: 1.0,
        M.COMB_SUM: m,
        M.COMB_MNZ: m * m,
        M.RRF: m / 61,
        M.BORDA: m * n,
    }[method]
    assert np.all(out >= 0) and np.all(out <= upper + 1e-9)
