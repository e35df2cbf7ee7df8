"""A learned pipeline is adopted when its cross-validated gain over the default exceeds
twice the noise; the noise is a standard error, and one measured on a handful of queries is
itself uncertain, so the margin widens by Student's t (a reader's tune on 5 labelled queries
adopted a gain of 0.63 over a noise of 0.27, and the pipeline it wrote was worse on test)."""

from __future__ import annotations

import itertools
import math

import pytest

from rerankit.eval.refit_check import ADOPT_MARGIN, few_queries_margin, student_t975
from rerankit.training.crossval import Verdict

# Student's t, 97.5 %, from published tables (beyond the module's own table to 30)
PUBLISHED = {1: 12.706, 4: 2.776, 10: 2.228, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


@pytest.mark.parametrize(("df", "t"), sorted(PUBLISHED.items()))
def test_the_quantile_is_the_published_one(df, t):
    assert student_t975(df) == pytest.approx(t, abs=0.0015)


def test_the_quantile_agrees_with_scipy_everywhere():
    stats = pytest.importorskip("scipy.stats", reason="scipy gives the reference quantile")
    for df in range(1, 1001):
        assert student_t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=0.0015), df


def test_the_margin_widens_for_few_queries_and_never_narrows():
    margins = [few_queries_margin(ADOPT_MARGIN, n) for n in range(2, 2000)]
    assert all(a >= b for a, b in itertools.pairwise(margins))  # fewer queries: wider
    assert all(m >= ADOPT_MARGIN for m in margins)
    assert few_queries_margin(ADOPT_MARGIN, 5) == pytest.approx(2 * 2.776 / 1.96, abs=0.01)
    assert few_queries_margin(ADOPT_MARGIN, 809) == pytest.approx(ADOPT_MARGIN, abs=0.005)
    assert few_queries_margin(ADOPT_MARGIN, 1) == math.inf  # no noise can be measured


def verdict(queries: int, gain: float = 0.0063, noise: float = 0.0027) -> Verdict:
    return Verdict(
        learned=0.9 + gain,
        default=0.9,
        gain=gain,
        query_noise=noise,
        fold_noise=noise / 2,
        fold_gains=[gain] * 3,
        queries=queries,
    )


def test_the_readers_five_query_gain_is_not_adopted_but_the_same_on_many_queries_is():
    few, many = verdict(5), verdict(809)
    assert not few.adopt and many.adopt  # 2.33 times the noise: under 2.83, over 2.00
    assert "(2.83 times with 5 queries" in few.describe()
    assert "times with" not in many.describe()  # twice, as always, on many queries


def test_a_gain_well_over_the_widened_margin_is_still_adopted_on_few_queries():
    assert verdict(5, gain=0.0080).adopt  # 2.96 times the noise
