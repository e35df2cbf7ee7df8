"""Cross-validation by query: folds, the nested estimate, the verdict, the learning curve."""

from __future__ import annotations

import math
import random
import statistics
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rerankit.training.crossval import (
    ADOPT_MARGIN,
    Verdict,
    cross_validate,
    fold_standard_error,
    folds_for,
    kfold,
    learning_curve,
    verdict,
)
from rerankit.training.reporting import Reporter
from rerankit.training.selection import cross_validated

QIDS = [f"q{i}" for i in range(50)]


@given(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=60, unique=True), st.data())
def test_folds_partition_the_queries_whatever_their_order(qids, data):
    k = data.draw(st.integers(min_value=2, max_value=len(qids)))
    folds = kfold(qids, k)
    assert len(folds) == k
    assert sorted(q for f in folds for q in f) == sorted(qids)  # each query exactly once
    assert max(map(len, folds)) - min(map(len, folds)) <= 1
    shuffled = data.draw(st.permutations(qids))
    assert kfold(shuffled, k) == folds


def test_too_few_queries_for_folds_are_refused():
    with pytest.raises(ValueError, match="cannot make 5 folds"):
        kfold(["a", "b"], 5)
    with pytest.raises(ValueError, match="at least 4"):
        folds_for(3)
    assert folds_for(6) == 3 and folds_for(100) == 5 and folds_for(4) == 3


def test_the_folds_help_says_what_happens(capsys):
    from rerankit.cli import main

    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "half as many folds as queries, but 3 at least" in shown
    assert "it needs 4 training queries" in shown
    # which is what happens: 8 queries make 4 folds, 5 make 3, 3 are refused
    assert folds_for(8, 5) == 4 and folds_for(5, 5) == 3 and folds_for(50, 5) == 5
    with pytest.raises(ValueError, match="at least 4"):
        folds_for(3, 5)


def test_a_clearly_better_option_is_chosen_on_every_fold():
    def fit(train):
        assert len(train) < len(QIDS)  # never the whole set inside the cross-validation
        return {"good": lambda q: 0.9, "bad": lambda q: 0.1}

    cv = cross_validate(QIDS, fit, k=5)
    assert cv.chosen_by_fold == ["good"] * 5 and cv.best == "good"
    assert cv.per_query == dict.fromkeys(QIDS, 0.9)
    assert set(cv.fold_of) == set(QIDS) and set(cv.fold_of.values()) == set(range(5))


def test_each_fold_is_scored_by_a_choice_made_without_it():
    """Options that are each perfect on one fold only: a choice that saw the fold would
    pick its perfect option; the nested choice cannot, so every fold scores 0."""
    folds = kfold(QIDS, 5)
    fold_of = {q: f for f, members in enumerate(folds) for q in members}

    def fit(train):
        return {f: (lambda q, f=f: 1.0 if fold_of[q] == f else 0.0) for f in range(5)}

    cv = cross_validate(QIDS, fit, k=5)
    assert cv.mean == 0.0
    assert all(cv.chosen_by_fold[f] != f for f in range(5))


def test_the_nested_estimate_is_not_flattered_by_choosing_among_noise():
    """Many options of pure noise: the best one's plain cross-validated mean is flattered by
    the choice; the nested estimate of choosing is not."""
    rng = random.Random(7)
    noise = {o: {q: rng.random() for q in QIDS} for o in range(200)}
    cv = cross_validate(QIDS, lambda train: {o: v.__getitem__ for o, v in noise.items()}, k=5)
    expected = statistics.fmean(v for values in noise.values() for v in values.values())
    assert cv.options[cv.best] > expected + 0.07
    assert abs(cv.mean - expected) < 0.06


def test_the_verdict_adopts_only_a_gain_above_its_standard_error():
    cv = cross_validate(QIDS, lambda train: {"x": lambda q: 0.6}, k=5)
    # the default loses 0.1 on every query: a sure gain
    sure = verdict(cv, dict.fromkeys(QIDS, 0.5))
    assert sure.gain == pytest.approx(0.1) and sure.noise == pytest.approx(0.0)
    assert sure.adopt and sure.queries == 50 and sure.fold_gains == pytest.approx([0.1] * 5)
    # the same mean gain, made of large swings either way: noise
    swings = {q: 0.5 + (0.9 if i % 2 else -0.7) for i, q in enumerate(QIDS)}
    shaky = verdict(cv, {q: 0.6 - (swings[q] - 0.6) for q in QIDS})
    diffs = [cv.per_query[q] - (0.6 - (swings[q] - 0.6)) for q in QIDS]
    assert shaky.gain == pytest.approx(statistics.fmean(diffs))
    assert shaky.query_noise == pytest.approx(statistics.stdev(diffs) / math.sqrt(50))
    assert shaky.noise == max(shaky.query_noise, shaky.fold_noise)
    assert not shaky.adopt
    assert "learned" in shaky.describe() and "standard error" in shaky.describe()


def test_the_verdict_counts_folds_that_disagree_as_noise():
    """Every query of three folds gains 0.3 and every query of the other two loses 0.2: the
    per-query standard error is small (0.035, below the mean gain of 0.1), but the gain
    depends on which fold's model one gets, and the folds' corrected standard error says so."""
    cv = cross_validate(QIDS, lambda train: {"x": lambda q: 0.6}, k=5)
    default = {q: 0.3 if cv.fold_of[q] < 3 else 0.8 for q in QIDS}
    v = verdict(cv, default)
    diffs = [0.6 - default[q] for q in QIDS]
    assert v.gain == pytest.approx(statistics.fmean(diffs))
    assert v.query_noise == pytest.approx(statistics.stdev(diffs) / math.sqrt(50))
    assert v.query_noise < v.gain  # the per-query standard error alone would adopt
    assert v.fold_gains == pytest.approx([0.3, 0.3, 0.3, -0.2, -0.2])
    # Nadeau and Bengio: the folds' sample variance times 1/k + 1/(k - 1)
    expected = math.sqrt((1 / 5 + 1 / 4) * statistics.variance([0.3, 0.3, 0.3, -0.2, -0.2]))
    assert v.fold_noise == pytest.approx(expected) and v.noise == pytest.approx(expected)
    assert not v.adopt
    assert f"{100 * expected:.2f} over folds" in v.describe()
    assert fold_standard_error([0.1]) == math.inf  # one fold: no estimate of the noise


def test_a_learning_curve_rises_when_more_queries_help():
    def fit(train):  # a model that improves with its training size
        size = len(train)
        return {"m": lambda q: min(1.0, size / 40)}

    cv = cross_validate(QIDS, fit, k=5)
    curve = learning_curve(cv, fit, "m")
    sizes = [n for n, _ in curve]
    values = [v for _, v in curve]
    assert sizes == sorted(sizes) and sizes[-1] == 40
    assert values == sorted(values) and values[-1] == 1.0 and values[0] == 0.25

    # without an option, each share chooses as the verdict does (a fixed choice here)
    def fixed(train):
        return {"a": lambda q: 0.3}

    assert learning_curve(cross_validate(QIDS, fixed, k=5), fixed) == [(n, 0.3) for n in sizes]


def test_a_learning_curve_on_few_queries_shows_each_size_of_fit_once():
    """7 training queries in 3 folds: each fit sees 4 or 5, and a quarter and a half of
    them both round to 2 queries (the least a fit takes): the same fits, one row."""
    fits = []

    def fit(train):
        fits.append(len(train))
        size = len(train)
        return {"m": lambda q: size / 10}

    seven = QIDS[:7]
    cv = cross_validate(seven, fit, k=3)
    fits.clear()
    curve = learning_curve(cv, fit, "m")
    sizes = [n for n, _ in curve]
    # before: [2, 2, 4, 5], the first two rows the same fits printed twice
    assert sizes == sorted(set(sizes)) and sizes[0] == 2 and sizes[-1] == 5
    assert len(fits) == 3 * len(curve)  # no fit made twice for a row left out


def test_a_learning_curve_shows_each_training_size_once_when_folds_differ_in_size():
    """5 queries in 3 folds: fits see 3, 3 and 4; three quarters of each rounds to 2, 2
    and 3 (2.33 on average, printed 2): one row per size, the larger share's fits."""

    def fit(train):
        size = len(train)
        return {"m": lambda q: size / 10}

    five = QIDS[:5]
    curve = learning_curve(cross_validate(five, fit, k=3), fit, "m")
    # before: [(2, 0.2), (2, 0.233...), (3, 0.333...)], two rows of the same size
    assert [n for n, _ in curve] == [2, 3]
    assert curve[0][1] == pytest.approx((4 * 0.2 + 0.3) / 5)  # fits of 2, 2 and 3 queries


def test_a_margin_asks_for_a_gain_that_many_times_the_noise():
    """Per-query gains of 0.1 +- 0.4 over 50 queries, alternating within each fold: a
    standard error near 0.057, so the gain is about 1.75 times it: adopted at one noise, not
    at two (the default margin, whoever made the labels)."""
    cv = cross_validate(QIDS, lambda train: {"x": lambda q: 0.6}, k=5)
    default = {}
    for f in range(5):
        for i, q in enumerate(q for q in QIDS if cv.fold_of[q] == f):
            default[q] = 0.5 - (0.4 if i % 2 else -0.4)
    one, two = verdict(cv, default, margin=1), verdict(cv, default)
    assert two.margin == ADOPT_MARGIN == 2
    assert one.gain == two.gain and one.noise == two.noise  # the same measurement
    assert one.noise < one.gain < 2 * one.noise
    assert one.adopt and not two.adopt
    assert "x the noise" not in one.describe()
    assert "; adopted only when the gain exceeds twice the noise" in two.describe()
    assert "adopting takes" not in two.describe()
    three = verdict(cv, default, margin=3)
    assert three.describe().endswith(  # widened for the 50 queries: Student's t
        "; adopted only when the gain exceeds 3 times the noise (3.08 times with 50 queries, "
        "whose noise is itself uncertain: Student's t)"
    )
    assert verdict(cv, default, margin=0.5).adopt
    for bad in (0, -1.0, math.nan):
        with pytest.raises(ValueError, match="margin must be positive"):
            verdict(cv, default, margin=bad)


@pytest.mark.parametrize(
    ("curve", "rising"),
    [
        ((59.22, 60.38, 59.26, 60.35), False),  # a zig-zag: its last step rises, the curve not
        ((79.35, 78.80, 78.88, 79.26), False),  # below its first point: said too, not silent
        ((55.00, 57.00, 59.00, 61.00), True),
    ],
)
def test_tune_says_a_learning_curve_rises_only_past_its_best_earlier_point(curve, rising):
    """The curve of a model whose cross-validated nDCG@10 depends only on how many queries
    it was fitted on (about 10, 20, 30, 40 of 50 with 5 folds), against a default as good on
    every query (no noise): the line under the curve says whether the last point beats the
    best earlier one, whatever the step before it did."""
    by_size = {10: curve[0], 20: curve[1], 30: curve[2], 40: curve[3]}

    def fit(train):
        value = by_size[round(len(train), -1)] / 100
        return {"m": lambda q: value}

    opts = SimpleNamespace(folds=5, adopt_margin=None, keep_learned=False)
    report = Reporter()
    found = cross_validated(opts, QIDS, fit, {q: 0.5 for q in QIDS}, str, report, refit=True)
    assert [round(100 * v, 2) for _, v in found.learning_curve] == list(curve)
    said = [line.strip() for line in report.lines if "at the end" in line]
    assert len(said) == 1 and said[0].startswith(
        "still rising at the end" if rising else "not rising at the end"  # no noise here
    )


def test_a_learned_file_written_without_adoption_says_so_in_its_header():
    """A pipeline file written only because keep_learned asked must not pass for an
    adopted one when it is read on its own."""
    kept = Verdict(0.60, 0.65, -0.0409, 0.01, 0.01, [-0.04, -0.05, -0.03], 40)
    assert not kept.adopt
    assert kept.as_written().startswith(kept.describe())
    assert kept.as_written().endswith(
        "NOT ADOPTED: written anyway, as keep_learned=True (--keep-learned) asked"
    )
    adopted = Verdict(0.70, 0.65, 0.05, 0.01, 0.01, [0.05, 0.04, 0.06], 40)
    assert adopted.adopt and adopted.as_written() == adopted.describe()


def test_a_positive_gain_not_adopted_says_how_many_queries_would_clear_the_noise():
    """The noise falls with the square root of the queries: a gain of 2.35 with a noise of
    1.61 on 100 queries clears twice the noise at about 188, if it holds; a gain at or
    below 0, or one adopted, gets no such figure."""
    from rerankit.eval.compare import queries_to_clear

    def needs(v):
        return queries_to_clear(v.gain, v.noise, v.queries, v.margin)

    ahead = Verdict(0.8148, 0.7913, 0.0235, 0.0105, 0.0161, [0.02, 0.03], 100)
    assert not ahead.adopt
    needed = needs(ahead)
    assert needed == math.ceil(100 * (2 * 0.0161 / 0.0235) ** 2) == 188
    # at that many queries, the same gain with the noise scaled down clears the margin
    scaled = 0.0161 * math.sqrt(100 / needed)
    assert 2 * scaled < 0.0235
    behind = Verdict(0.60, 0.65, -0.0409, 0.01, 0.01, [-0.04, -0.05, -0.03], 40)
    adopted = Verdict(0.70, 0.65, 0.05, 0.01, 0.01, [0.05, 0.04, 0.06], 40)
    assert needs(behind) is None and needs(adopted) is None


def test_tune_says_the_queries_a_gain_ahead_but_within_the_noise_would_need():
    gains = {q: (0.30 if i % 2 else -0.26) for i, q in enumerate(QIDS)}  # mean +0.02

    def fit(train):
        return {"m": lambda q: 0.5 + gains[q]}

    opts = SimpleNamespace(folds=5, adopt_margin=None, keep_learned=False)
    report = Reporter()
    found = cross_validated(opts, QIDS, fit, {q: 0.5 for q in QIDS}, str, report)
    assert not found.verdict.adopt and found.verdict.gain > 0
    said = [line for line in report.lines if line.startswith("(its gain, +")]
    v = found.verdict
    needed = math.ceil(len(QIDS) * (2 * v.noise / v.gain) ** 2)
    assert len(said) == 1 and f"about {needed} judged queries" in said[0]
