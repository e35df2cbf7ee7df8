"""A stage that is a reranker whose own rules drop documents (a registered pipeline ending in
``min_score``, a ``cap`` with ``rest = "drop"``) drops them from the cascade too: the next
stage sees the rest, and the result lists the dropped ones by input position (it raised
``RuntimeError: coroutine raised StopIteration``)."""

from __future__ import annotations

from rerankit import Pipeline
from rerankit.ordering import Cap, MinScore
from rerankit.rerankers import Stage
from rerankit.scorers import BM25Scorer, FieldScorer

DOCS = [
    {"id": "wind", "text": "wind farms at sea", "stars": 5, "source": "news"},
    {"id": "guide", "text": "solar panels for homes", "stars": 1, "source": "blog"},
    {"id": "prices", "text": "solar panel prices fall", "stars": 3, "source": "news"},
    {"id": "faq", "text": "questions we are asked", "stars": 4, "source": "support"},
]


def test_a_nested_pipeline_that_drops_hands_the_rest_to_the_next_stage():
    floor = Pipeline([BM25Scorer(), MinScore(0.5)], name="floor")
    cascade = Pipeline([Stage(floor, keep=3), FieldScorer("stars")])
    result = cascade.rerank("solar panels", DOCS)
    assert [r.id for r in result] == ["prices", "guide"]
    assert sorted(result.dropped) == [0, 3]
    assert any("dropped 2 document" in w for w in result.warnings)


def test_a_nested_drop_after_a_scoring_stage_keeps_the_tail():
    capped = Pipeline([FieldScorer("stars"), Cap(field="source", limit=1, rest="drop")])
    cascade = Pipeline([(BM25Scorer(), 3), capped])
    result = cascade.rerank("solar panels", DOCS)
    # BM25 keeps guide, prices and one more; the cap drops the second "news" among them
    assert len(result) + len(result.dropped) == len(DOCS)
    assert len(set(r.index for r in result) | set(result.dropped)) == len(DOCS)
