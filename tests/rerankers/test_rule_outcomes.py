"""A rule's decide() is checked: anything but an Outcome that lists each position once (in
order or dropped) is a RuleError naming the rule and the problem; in a pipeline its stage
fails as a rule that raises does (the previous stage's order kept, degraded), so no
document is ever lost or repeated silently."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import Pipeline, RerankResult
from rerankit.errors import RuleError
from rerankit.ordering import Outcome, Rule

N = 16
DOCS = [{"id": f"d{i}", "text": f"document {i}"} for i in range(N)]
SCORES = [(i * 7) % N / N for i in range(N)]  # a fixed order that is not the input's
BEST_FIRST = sorted(range(N), key=lambda i: -SCORES[i])


class Returns(Rule):
    """A rule that returns whatever it was given."""

    def __init__(self, value, name="acme_rule"):
        self.value, self.name = value, name

    def decide(self, items):
        return self.value


CASES = [
    (
        Outcome(order=[0, 1, 2], dropped=[]),
        r"left out 13 of 16 positions \(\[3, 4, 5, 6, 7, ...\]\)",
    ),
    (Outcome(order=[0, *range(N)], dropped=[]), r"returned position 0 twice \(order\[1\] repeats"),
    (Outcome(order=list(range(N - 1)), dropped=[0]), r"position 0 twice \(dropped\[0\]"),
    (
        Outcome(order=[*range(N - 1), 99], dropped=[]),
        "returned position 99, but there are 16 items",
    ),
    (
        Outcome(order=[*range(N - 1), -1], dropped=[]),
        "returned position -1, but there are 16 items",
    ),
    (
        Outcome(order=[*range(N - 1), "15"], dropped=[]),
        r"returned '15' \(a str\) in its Outcome's order",
    ),
    (Outcome(order=list(range(N)), dropped=None), "whose dropped is None"),
    (list(range(N)), "returned a list; decide[(][)] must return rerankit.ordering.Outcome"),
    (None, "returned None; decide[(][)] must return rerankit.ordering.Outcome"),
]


@pytest.mark.parametrize(("value", "message"), CASES)
def test_a_pipeline_keeps_the_previous_order_when_a_rule_returns_a_bad_outcome(
    fixed_scorer, value, message
):
    pipeline = Pipeline([fixed_scorer("fixed", SCORES), Returns(value)])
    result = pipeline.rerank("q", DOCS)
    assert result.degraded and result.dropped == ()
    assert [r.index for r in result] == BEST_FIRST  # every document, once, as scored
    [warning] = [w for w in result.warnings if "acme_rule" in w]
    assert warning.startswith("stage 'acme_rule' failed (RuleError: rule 'acme_rule' ")
    assert warning.endswith("the previous stage's order is kept")
    assert re.search(message, warning)


@pytest.mark.parametrize(("value", "message"), CASES)
def test_a_rule_called_directly_raises_naming_itself_and_the_problem(value, message):
    rule = Returns(value)
    with pytest.raises(RuleError, match=message):
        rule(DOCS)
    with pytest.raises(RuleError, match=message):
        rule(Pipeline([Returns(Outcome(list(range(N)), []), name="same")]).rerank("q", DOCS))


def test_numpy_positions_and_tuples_are_fine(fixed_scorer):
    order = np.arange(N)[::-1]
    out = Returns(Outcome(order=order[:-2], dropped=(np.int64(1), 0)))(DOCS)
    assert [d["id"] for d in out] == [f"d{i}" for i in range(N - 1, 1, -1)]
    result = Pipeline([fixed_scorer("fixed", SCORES), Returns(Outcome(list(order), []))]).rerank(
        "q", DOCS
    )
    assert isinstance(result, RerankResult) and not result.degraded
    assert [r.index for r in result] == BEST_FIRST[::-1]


positions = st.lists(st.integers(-2, N + 2), max_size=N + 4)


@settings(max_examples=150, deadline=None)
@given(
    outcome=st.one_of(
        st.builds(Outcome, order=positions, dropped=positions),
        st.permutations(range(N)).flatmap(
            lambda p: st.integers(0, N).map(lambda k: Outcome(order=p[:k], dropped=p[k:]))
        ),
    )
)
def test_a_pipeline_answers_a_permutation_of_its_input_minus_what_it_lists_dropped(
    fixed_scorer, outcome
):
    result = Pipeline([fixed_scorer("fixed", SCORES), Returns(outcome)]).rerank("q", DOCS)
    returned = [r.index for r in result]
    assert sorted(returned + list(result.dropped)) == list(range(N))
    if result.degraded:  # the rule's answer was refused: nothing dropped, the scored order
        assert returned == BEST_FIRST and result.dropped == ()
    else:  # the rule's positions are in its input: the scored order
        assert returned == [BEST_FIRST[i] for i in outcome.order]
        assert list(result.dropped) == [BEST_FIRST[i] for i in outcome.dropped]
