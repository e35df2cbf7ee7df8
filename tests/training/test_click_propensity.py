"""Position-bias propensities from simulated clicks with known propensities, RandPair, and
the click simulator; the warning when the estimate cannot be trusted."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import estimate_propensities, randpair
from rerankit.training.clicks.given import as_propensities
from rerankit.training.clicks.propensity import randpair_orders, swap_ratios
from rerankit.training.clicks.reliability import MIN_CLICKS, reliability_warning
from rerankit.training.clicks.simulate import (
    EXAMINATION,
    PositionBasedModel,
    grades_0_to_4,
    max_grade,
    simulate_query,
)


def collection(
    eta: float, *, queries: int, sessions: int, seed: int, explore: float = 0.0, protect: int = 3
):
    """A small synthetic collection: 20 candidates a query with random features, grades
    set by the ``cosine`` column, a logging ranker that orders by cosine plus noise (so
    similar documents land at different positions across queries), top 10 shown."""
    rng = np.random.default_rng(seed)
    model = PositionBasedModel(eta=eta)
    logs, rows = {}, {}
    for q in range(queries):
        x = rng.normal(size=(20, len(FEATURES)))
        cos = x[:, FEATURES.index("cosine")]
        grades = np.digitize(cos, [-0.5, 0.3, 1.0, 1.6])
        order = np.argsort(-(cos + rng.normal(size=20)))
        ids = [f"{q}-{i}" for i in range(20)]
        key = str(q)
        log = simulate_query(
            model,
            key=key,
            query="q",
            doc_ids=ids,
            order=order,
            grades=grades,
            sessions=sessions,
            rng=rng,
            explore=explore,
            protect=protect,
        )
        logs[key], rows[key] = log, (ids, x)
    return model, logs, rows


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_regression_em_finds_the_propensities_within_0_05_at_1000_sessions(eta):
    model, logs, rows = collection(eta, queries=200, sessions=1000, seed=1)
    found = estimate_propensities(logs, rows, method="em", features=("cosine", "bm25"))
    assert found.converged
    assert found.values[0] == 1.0
    error = np.abs(found.values - model.propensities(10))
    assert error.max() < 0.05, (found.values, model.propensities(10))
    # one order a query: said so, and what the data cannot tell (not a claim about the ranker)
    assert found.caveat().startswith("no position was measured by exchanged pairs")
    assert "these clicks cannot tell whether they were" in found.caveat()
    assert found.unmeasured() == list(range(2, 11))


def test_a_deterministic_ranker_with_clicks_as_labels_is_far_from_the_truth():
    """The estimate is not the click-through rate by position (which mixes examination
    with the ranker putting the relevant documents on top): the check above can fail."""
    model, logs, _ = collection(1.0, queries=200, sessions=1000, seed=1)
    shows = sum(log.counts()[0].sum(axis=0) for log in logs.values())
    clicks = sum(log.counts()[1].sum(axis=0) for log in logs.values())
    ctr = clicks / shows
    assert np.abs(ctr / ctr[0] - model.propensities(10)).max() > 0.1


def test_randpair_swaps_measure_the_propensities_without_a_relevance_model():
    model, logs, _ = collection(1.0, queries=200, sessions=1000, seed=2, explore=0.2, protect=0)
    found = estimate_propensities(logs, method="swaps")
    assert np.abs(found.values - model.propensities(10)).max() < 0.05
    assert found.method == "swaps"


def test_auto_takes_the_swaps_ratios_below_the_protected_top_3():
    _, logs, rows = collection(1.0, queries=100, sessions=500, seed=3, explore=0.2)
    ratios, weight = swap_ratios(logs)
    assert np.isnan(ratios[:3]).all() and (weight[:3] == 0).all()  # the top 3 never move
    assert (weight[3:] > 0).all()
    found = estimate_propensities(logs, rows, features=("cosine", "bm25"))
    assert "swaps" in found.method
    assert found.swap_ratios[:3] == [None, None, None]
    # below the top 3 measured, but positions 2-4 come from the logged order: said so
    assert found.unmeasured() == [2, 3, 4]
    assert found.caveat().startswith("positions 2-4 were not measured by exchanged pairs")
    one = replace(found, swap_ratios=[None if p == 6 else 1.0 for p in range(9)])
    assert one.caveat().startswith("position 8 was not measured by exchanged pairs")
    assert "its exploration does not fix it" in found.caveat()
    everywhere = estimate_propensities(
        collection(1.0, queries=100, sessions=500, seed=3, explore=0.2, protect=0)[1],
        rows,
        features=("cosine", "bm25"),
    )
    assert everywhere.unmeasured() == [] and everywhere.caveat() is None  # all measured
    with pytest.raises(ValueError, match="positions \\[1, 2, 3\\]"):
        estimate_propensities(logs, method="swaps")


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 30),
    pairs=st.floats(0, 1),
    protect=st.integers(0, 5),
    seed=st.integers(0, 2**31),
)
def test_randpair_never_touches_the_top_and_keeps_a_permutation(n, pairs, protect, seed):
    order = list(np.random.default_rng(seed).permutation(n))
    before = list(order)
    after, swapped = randpair(order, np.random.default_rng(seed + 1), pairs=pairs, protect=protect)
    assert order == before  # the input is not changed
    assert sorted(after) == sorted(before)
    assert after[:protect] == before[:protect]
    assert after[10:] == before[10:]  # only the page of ten is explored
    for p in swapped:
        assert p > protect and p < min(n, 10)
        assert (after[p - 1], after[p]) == (before[p], before[p - 1])
    moved = {i for p in swapped for i in (p - 1, p)}
    assert all(after[i] == before[i] for i in range(n) if i not in moved)


def test_randpair_swaps_about_the_share_asked():
    orders = np.repeat(np.arange(10)[None, :], 20_000, axis=0)
    out = randpair_orders(orders, np.random.default_rng(0), pairs=0.1)
    assert (out[:, :3] == orders[:, :3]).all()
    moved = (out != orders).mean(axis=0)
    assert 0.09 < moved[3] < 0.11  # position 4 moves when the pair (4, 5) is swapped
    assert 0.18 < moved[4] < 0.20  # position 5: with 4, or (when 4 stayed) with 6
    # ``share``, the former name of ``pairs``, still works and means the same
    again = randpair_orders(orders, np.random.default_rng(0), share=0.1)
    assert (again == out).all()
    assert randpair(list(range(10)), np.random.default_rng(3), share=0.5) == randpair(
        list(range(10)), np.random.default_rng(3), pairs=0.5
    )
    with pytest.raises(ValueError, match="pairs must be in"):
        randpair_orders(orders, np.random.default_rng(0), pairs=1.5)


def test_the_simulator_follows_the_position_based_model():
    model = PositionBasedModel(eta=2.0)
    np.testing.assert_allclose(model.examination(12)[:10], np.array(EXAMINATION) ** 2)
    assert model.examination(12)[10:].tolist() == [0.0, 0.0]
    rng = np.random.default_rng(0)
    grades = np.array([4, 0, 2])
    shown = np.repeat(np.array([[0, 1, 2, -1]]), 50_000, axis=0)
    clicks = model.click(shown, grades, rng).mean(axis=0)
    expected = model.examination(4) * np.array([1.0, 0.1, 0.28, 0.0])
    np.testing.assert_allclose(clicks, expected, atol=0.01)


def test_grades_are_mapped_onto_0_to_4_by_the_collection_maximum():
    assert max_grade({"q": {"a": 1, "b": 0}}) == 1
    assert grades_0_to_4(["a", "b", "c"], {"a": 1, "b": 0}, 1).tolist() == [4, 0, 0]
    assert grades_0_to_4(["a", "b", "c"], {"a": 1, "b": 2, "c": -1}, 2).tolist() == [2, 4, 0]
    assert grades_0_to_4(["a", "b"], {"a": 1, "b": 3}, 3).tolist() == [1, 4]


def test_positions_never_shown_have_no_estimate():
    rng = np.random.default_rng(4)
    model = PositionBasedModel()
    logs, rows = {}, {}
    for q in range(60):
        x = rng.normal(size=(6, len(FEATURES)))
        grades = np.digitize(x[:, FEATURES.index("cosine")], [-0.5, 0.3, 1.0, 1.6])
        logs[str(q)] = simulate_query(
            model,
            key=str(q),
            query="q",
            doc_ids=list("abcdef"),
            order=rng.permutation(6),
            grades=grades,
            sessions=200,
            rng=rng,
        )  # six results: positions 7-10 never shown
        rows[str(q)] = (list("abcdef"), x)
    found = estimate_propensities(logs, rows, features=("cosine",))
    assert np.isfinite(found.values[:6]).all() and np.isnan(found.values[6:]).all()
    assert found.as_dict()["by_position"][6:] == [None] * 4
    assert "7: n/a" in found.describe()


# whether the estimate can be trusted: the warning naming the positions that rest on too
# few clicks, or rise down the page, and what to do

FALLING = [1.0, 0.9, 0.7, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05]


def test_a_falling_estimate_on_enough_clicks_gets_no_warning():
    assert reliability_warning(FALLING, [MIN_CLICKS] * 10) is None
    # a position never shown (NaN) is not judged, nor is the one after it against it
    values = [*FALLING[:8], math.nan, math.nan]
    assert reliability_warning(values, [400] * 8 + [0, 0]) is None


def test_positions_on_few_clicks_are_named_with_their_counts_and_what_to_do():
    clicks = [900, 400, 300, 200, 100, 80, 60, 40, MIN_CLICKS - 1, 3]
    warning = reliability_warning(FALLING, clicks)
    assert warning.startswith("propensities not reliable at positions 9-10: ")
    assert f"fewer than {MIN_CLICKS} clicks at positions 9-10 (9: 24, 10: 3), and" in warning
    assert "Log more sessions" in warning and "[server] explore" in warning
    assert "rerankit tune --clicks LOG --propensities 1,0.9,0.7,..." in warning
    assert "already has exchanged pairs" not in warning


def test_a_log_with_exchanged_pairs_is_not_told_to_turn_exploration_on():
    clicks = [900, 400, 300, 200, 100, 80, 60, 40, MIN_CLICKS - 1, 3]
    warning = reliability_warning(FALLING, clicks, measured=[5, 6, 7, 8, 9, 10])
    assert "turn on exploration" not in warning
    assert "This log already has exchanged pairs" in warning
    assert "they measured positions 5-10 against the one above" in warning
    assert "its exploration does not measure positions 2-4: there only more sessions" in warning
    assert "--propensities 1,0.9,0.7,..." in warning
    # pairs that measured position 2 too (two pipelines' orders): only 3-4 are left
    both = reliability_warning(FALLING, clicks, measured=[2, 5, 6])
    assert "its exploration does not measure positions 3-4" in both


def test_a_rise_down_the_page_is_named_with_the_values():
    values = [1.0, 1.015, 0.855, 0.25, 0.3, 0.2, 0.1, 0.1, 0.05, 0.04]
    warning = reliability_warning(values, [1000] * 10)
    assert warning.startswith("propensities not reliable at positions 2, 5: ")
    assert "rises down the page at positions 2, 5 (2: 1.015 after 1.000, 5: 0.300 after 0.250)" in (
        warning
    )
    assert "fewer than" not in warning  # enough clicks everywhere


def test_a_rise_too_small_to_show_in_the_printed_values_is_not_named():
    # 0.05328 after 0.05285 both print 0.053: "0.053 after 0.053" is no rise to a reader
    values = [1.0, 0.62, 0.28, 0.19, 0.13, 0.095, 0.083, 0.05285, 0.05328, 0.041]
    assert reliability_warning(values, [1000] * 10) is None
    values[8] = 0.0538  # prints 0.054 after 0.053: named
    assert "(9: 0.054 after 0.053)" in reliability_warning(values, [1000] * 10)


def test_an_estimate_from_a_small_log_carries_the_warning_and_its_counts():
    _, logs, rows = collection(1.0, queries=5, sessions=8, seed=0)
    found = estimate_propensities(logs, rows, method="em", features=("cosine", "bm25"))
    assert found.sessions_by_position == [40] * 10
    clicks = sum(int(log.clicked.sum()) for log in logs.values())
    assert sum(found.clicks_by_position) == clicks
    assert found.clicks_by_position[0] == sum(int(log.clicked[:, 0].sum()) for log in logs.values())
    warning = found.warning()
    assert warning.startswith("propensities not reliable at positions 1-10: fewer than 25 ")
    recorded = found.as_dict()
    assert recorded["warning"] == warning
    assert recorded["clicks_by_position"] == found.clicks_by_position


def test_a_large_log_gets_no_warning_where_its_estimate_falls():
    _, logs, rows = collection(1.0, queries=100, sessions=300, seed=1)
    found = estimate_propensities(logs, rows, method="em", features=("cosine", "bm25"))
    assert min(found.clicks_by_position) >= MIN_CLICKS
    assert np.all(np.diff(found.values) <= 0), found.values
    assert found.warning() is None


def test_given_propensities_are_not_judged():
    _, logs, rows = collection(1.0, queries=5, sessions=8, seed=0)
    given = as_propensities([1.0, 0.5, 0.6], logs, rows, 3, True)
    assert given.warning() is None and given.as_dict()["warning"] is None
