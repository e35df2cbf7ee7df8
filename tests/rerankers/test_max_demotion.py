"""A stage's ``max_demotion``: no document ends more than N places below its place in the
previous stage's order (the bound on how far recency may push a stale best match down)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.cli.main import main
from rerankit.config import build
from rerankit.errors import ConfigError
from rerankit.ordering import Outcome, Rule
from rerankit.rerankers import FusionReranker, Pipeline, Stage
from rerankit.rerankers.placement import bounded_order
from rerankit.scorers import FieldScorer, PositionScorer, RecencyScorer


@st.composite
def _orders(draw):
    n = draw(st.integers(0, 30))
    previous = draw(st.permutations(range(n)))
    proposed = draw(st.permutations(range(n)))
    return list(previous), list(proposed), draw(st.integers(0, 8))


@settings(max_examples=300, deadline=None)
@given(_orders())
def test_bounded_order_keeps_every_document_within_its_bound(case):
    previous, proposed, limit = case
    out = bounded_order(previous, proposed, limit)
    assert sorted(out) == sorted(previous)
    for doc in out:
        assert out.index(doc) <= previous.index(doc) + limit
    if all(proposed.index(d) <= previous.index(d) + limit for d in proposed):
        assert out == proposed  # an order within the bound is left as it is
    assert bounded_order(previous, proposed, 0) == previous


def _fresh(w_recency: float) -> FusionReranker:
    return FusionReranker(
        [PositionScorer(), RecencyScorer("date", half_life_days=365, now="2025-12-31")],
        weights={"position": 1 - w_recency, "recency": w_recency},
    )


YEARS = st.integers(2000, 2025)


@settings(max_examples=60, deadline=None)
@given(
    years=st.lists(YEARS, min_size=1, max_size=40),
    w_recency=st.sampled_from([0.1, 0.4, 0.8]),
    limit=st.integers(0, 5),
)
def test_no_document_ends_more_than_max_demotion_below_its_relevance_rank(years, w_recency, limit):
    docs = [
        {"id": i, "text": f"doc {i}", "relevance": (7 * i) % 11, "date": f"{y}-06-01"}
        for i, y in enumerate(years)
    ]
    relevance = FieldScorer("relevance")
    by_relevance = [r.index for r in relevance_order(relevance, docs)]
    result = Pipeline([relevance, Stage(_fresh(w_recency), max_demotion=limit)]).rerank("q", docs)
    for r in result:
        assert r.rank - 1 <= by_relevance.index(r.index) + limit


def relevance_order(scorer, docs):
    return Pipeline([scorer]).rerank("q", docs)


def test_a_stale_best_match_falls_far_without_the_bound_and_n_places_with_it():
    docs = [
        {"id": f"d{i}", "text": "x", "relevance": 100 - i, "date": "2025-12-01"} for i in range(100)
    ]
    docs[0]["date"] = "2005-01-01"
    relevance = FieldScorer("relevance")
    free = Pipeline([relevance, _fresh(0.4)]).rerank("q", docs)
    assert [r.id for r in free].index("d0") == 65
    capped = Pipeline([relevance, Stage(_fresh(0.4), max_demotion=3)]).rerank("q", docs)
    ids = [r.id for r in capped]
    assert ids.index("d0") == 3
    assert ids[:3] == ["d1", "d2", "d3"]  # the fresh ones still take the places left


class DropFirstReverseRest(Rule):
    name = "reverse"

    def decide(self, items):
        return Outcome(order=list(range(len(items) - 1, 0, -1)), dropped=[0])


def test_a_stage_that_drops_is_bounded_among_the_documents_it_keeps():
    docs = [{"id": i, "text": "x", "at": i} for i in range(5)]
    first = FieldScorer("at", higher_is_better=False)
    free = Pipeline([first, DropFirstReverseRest()]).rerank("q", docs)
    assert [r.id for r in free] == [4, 3, 2, 1] and free.dropped == (0,)
    bounded = Pipeline([first, Stage(DropFirstReverseRest(), max_demotion=1)]).rerank("q", docs)
    assert [r.id for r in bounded] == [4, 1, 2, 3]  # each at most 1 below its place


def test_a_pipeline_file_takes_max_demotion_on_a_stage():
    spec = {
        "stages": [
            {"scorer": {"type": "field", "field": "relevance"}},
            {
                "max_demotion": 2,
                "scorers": [
                    {"type": "position", "weight": 0.5},
                    {"type": "recency", "field": "date", "weight": 0.5},
                ],
            },
        ]
    }
    pipeline = build(spec)
    assert [s.max_demotion for s in pipeline.stages] == [None, 2]
    one = build({"scorer": {"type": "bm25"}, "max_demotion": 1})  # one stage: still bounded
    assert isinstance(one, Pipeline) and one.stages[0].max_demotion == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_a_bad_max_demotion_is_an_error_naming_the_key(bad):
    with pytest.raises(ConfigError, match=r"stages\[1\]\.max_demotion: must be an integer >= 0"):
        build(
            {
                "stages": [
                    {"scorer": {"type": "bm25"}},
                    {"scorer": {"type": "bm25"}, "max_demotion": bad},
                ]
            }
        )
    with pytest.raises(ConfigError, match="max_demotion: must be an integer >= 0"):
        Stage(PositionScorer(), max_demotion=bad)


def test_check_says_a_stage_s_max_demotion(tmp_path, capsys):
    path = tmp_path / "recent.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n[[stages]]\nmax_demotion = 3\nscorers = [\n'
        '  { type = "position", weight = 0.6 },\n'
        '  { type = "recency", field = "date", weight = 0.4 },\n]\n'
    )
    assert main(["check", str(path)]) == 0
    assert "fusion: fusion (position, recency), max_demotion 3; scores" in capsys.readouterr().out
