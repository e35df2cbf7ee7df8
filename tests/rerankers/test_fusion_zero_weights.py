"""A strategy weighing 0 is left out whatever the fusion method: it is not run, and the
order and scores are those of the others alone. (Only the hybrid's weighted average left it
out before; comb_sum, rrf and the rest ran it, counted it in ``m``, and comb_mnz's count of
non-zero scores and min/max let it change the order.)"""

from __future__ import annotations

import pytest

from rerankit.fusion import ScoreCombinationMethod, combine_scores, contributions, fuse
from rerankit.rerankers import FusionReranker
from rerankit.scorers import FieldScorer

METHODS = [m.value for m in ScoreCombinationMethod]
# "a" alone puts x first; "b", weighing 0, would put y first under comb_mnz, min and max
A = {"x": 1.0, "y": 0.9, "z": 0.2}
B = {"x": 0.0, "y": 2.0, "z": 0.5}


class Counted(FieldScorer):
    """A field scorer that counts its calls."""

    def __init__(self, field: str) -> None:
        super().__init__(field, name=field)
        self.calls = 0

    async def score(self, query, docs, **context):
        self.calls += 1
        return await super().score(query, docs, **context)


def _order(scores):
    return sorted(scores, key=lambda k: -scores[k])


@pytest.mark.parametrize("method", METHODS)
def test_combine_scores_with_a_zero_weight_equals_the_others_alone(method):
    both = combine_scores({"a": A, "b": B}, method, {"a": 1.0, "b": 0.0})
    alone = combine_scores({"a": A}, method)
    assert both == pytest.approx(alone)
    assert _order(both) == ["x", "y", "z"]


def test_the_zero_weight_row_contributes_nothing_and_the_rest_sum_to_the_scores():
    matrix = [[1.0, 0.9, 0.2], [0.0, 2.0, 0.5]]
    for method in METHODS:
        parts = contributions(matrix, method, [1.0, 0.0])
        assert parts[1].tolist() == [0.0, 0.0, 0.0]
        if method not in ("max", "min"):
            assert parts.sum(axis=0) == pytest.approx(fuse(matrix, method, [1.0, 0.0]))


@pytest.mark.parametrize("method", METHODS)
def test_a_fusion_does_not_run_a_strategy_weighing_0(method):
    docs = [{"text": k, "a": A[k], "b": B[k]} for k in A]
    a, b = Counted("a"), Counted("b")
    fused = FusionReranker([a, b], method, {"a": 1.0, "b": 0.0}, normalize_scores=False)
    result = fused.rerank("q", docs)
    assert b.calls == 0 and a.calls == 1
    assert list(fused.scorers()) == [a]
    assert fused.weights == {"a": 1.0}
    alone = FusionReranker([Counted("a")], method, normalize_scores=False).rerank("q", docs)
    assert [r.index for r in result] == [0, 1, 2] == [r.index for r in alone]
    assert [r.score for r in result] == pytest.approx([r.score for r in alone])
    assert "b" not in result[0].explanation and "b" not in result[0].scores
    # a weight above 0 runs it
    FusionReranker([a, b], method, {"a": 0.9, "b": 0.1}).rerank("q", docs)
    assert b.calls == 1
