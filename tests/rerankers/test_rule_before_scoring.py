"""A rule that sets an order followed by a scoring stage that sorts by its own scores (a
pin before an LLM judge) is warned of when the pipeline is built: the judge silently undid
the pin (a pinned document ended at rank 2). Pinning before the cut and again after the
judge, the pattern pipelines.md shows, is not warned of, and holds."""

from __future__ import annotations

from rerankit import Pipeline
from rerankit.ordering import MMR, Deduplicate, Pin
from rerankit.rerankers import FusionReranker, Stage
from rerankit.scorers import BM25Scorer, PositionScorer, RecencyScorer

GRADES = {"guide": 3, "news": 2, "faq": 1}


class Judge:
    """Stands in for an LLM judge: its own grade of each document."""

    name = "judge"

    async def score(self, query, docs, **context):
        return [GRADES.get(d.id, 0) for d in docs]


DOCS = [
    {"id": "ad", "text": "solar panels, solar panels: buy solar panels"},
    {"id": "guide", "text": "how solar panels work on a roof"},
    {"id": "news", "text": "solar panel prices fall"},
    {"id": "faq", "text": "questions we are asked"},
    {"id": "wind", "text": "wind farms at sea"},
]
PINS = Pin(pin={"solar panels": ["faq"]}, bury={"solar panels": ["ad"]})


def _replaced(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "after it replaces" in r.getMessage()]


def test_a_rule_before_a_judge_is_warned_of_and_the_judge_undoes_it(caplog):
    with caplog.at_level("WARNING", logger="rerankit"):
        before = Pipeline([BM25Scorer(), Stage(PINS, keep=3, name="pins"), Judge()], name="p")
    [said] = _replaced(caplog)
    assert said.startswith("pipeline 'p': rule stage 'pins' sets an order that scoring stage")
    assert "'judge'" in said and "repeat the rule after 'judge'" in said
    ids = [r.id for r in before.rerank("solar panels", DOCS)]
    assert ids.index("faq") != 0  # what it warns of


def test_pinning_before_the_cut_and_again_after_the_judge_holds_without_a_warning(caplog):
    with caplog.at_level("WARNING", logger="rerankit"):
        both = Pipeline([BM25Scorer(), Stage(PINS, keep=3), Judge(), PINS])
        Pipeline([BM25Scorer(), PINS, FusionReranker([PositionScorer(), RecencyScorer()])])
        Pipeline([BM25Scorer(), Deduplicate(), Judge()])  # a rule that only drops
    assert _replaced(caplog) == []
    assert [r.id for r in both.rerank("solar panels", DOCS)] == [
        "faq", "guide", "news", "wind", "ad",
    ]  # fmt: skip


def test_every_rule_whose_order_a_scoring_stage_replaces_is_named(caplog):
    with caplog.at_level("WARNING", logger="rerankit"):
        Pipeline([BM25Scorer(), PINS, MMR(0.7), Judge()])
    [said] = _replaced(caplog)
    assert "rule stages 'pin', 'mmr' set an order" in said


def test_a_nested_pipeline_ending_in_a_rule_before_a_judge_is_warned_of_too(caplog):
    """A registered pipeline ending in a cap or a pin, used as the first stage of a cascade:
    the judge after it replaces the rule's order as it would a rule stage's."""
    pinned = Pipeline([BM25Scorer(), PINS], name="pinned")
    with caplog.at_level("WARNING", logger="rerankit"):
        Pipeline([Stage(pinned, keep=3, name="first"), Judge()])
    assert any("rule stage 'first/pin' sets an order" in m for m in _replaced(caplog))
    caplog.clear()
    with caplog.at_level("WARNING", logger="rerankit"):
        Pipeline([Stage(pinned, keep=3, name="first"), Judge(), PINS])  # the rule again
        Pipeline([Stage(Pipeline([BM25Scorer(), Deduplicate(0.8)]), keep=3), Judge()])  # drops
    assert _replaced(caplog) == []
