from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from rerankit.compat import (
    RerankerStrategy,
    ResultReranker,
    ScoreCombinationMethod,
    TextSimilarityReranker,
    combine_scores,
    entity_text,
    normalize_scores,
)


@dataclass
class Entity:
    id: str
    entity_type: str
    properties: dict = field(default_factory=dict)


class PopularityStrategy(RerankerStrategy):
    """A user-defined strategy reading the entity objects directly."""

    def __init__(self):
        self.seen_kwargs = None

    @property
    def name(self) -> str:
        return "popularity"

    async def score(self, query, entities, **kwargs):
        self.seen_kwargs = kwargs
        return [e.properties.get("views", 0) / 100 for e in entities]


ENTITIES = [
    Entity("e1", "Paper", {"name": "Deep learning for protein folding", "views": 90}),
    Entity("e2", "Paper", {"name": "Machine learning papers: a survey", "views": 10}),
    Entity("e3", "Paper", {"name": "Gardening with tomatoes", "views": 50}),
]


def test_spec3_utility_examples():
    assert normalize_scores([10, 25, 15, 30, 20], method="min_max") == [0.0, 0.75, 0.25, 1.0, 0.5]
    assert combine_scores(
        [{"entity1": 0.8, "entity2": 0.6}, {"entity1": 0.7, "entity2": 0.9}],
        method=ScoreCombinationMethod.WEIGHTED_AVERAGE,
        weights={"strategy_0": 0.6, "strategy_1": 0.4},
    ) == {"entity1": 0.76, "entity2": 0.72}


def test_result_reranker_returns_original_entities_with_scores():
    popularity = PopularityStrategy()
    reranker = ResultReranker(
        strategies=[TextSimilarityReranker(bm25_weight=0.7, jaccard_weight=0.3), popularity],
        combination_method=ScoreCombinationMethod.WEIGHTED_AVERAGE,
        weights={"text": 0.6, "popularity": 0.4},
    )
    ranked = asyncio.run(
        reranker.rerank("machine learning papers", ENTITIES, top_k=2, query_embedding=[1.0])
    )
    assert len(ranked) == 2
    assert ranked[0][0] is ENTITIES[1]  # best text match outweighs low popularity
    assert all(isinstance(s, float) for _, s in ranked)
    assert ranked[0][1] >= ranked[1][1]
    assert popularity.seen_kwargs == {"query_embedding": [1.0]}


def test_rrf_max_min_and_defaults():
    for method in (
        ScoreCombinationMethod.RRF,
        ScoreCombinationMethod.MAX,
        ScoreCombinationMethod.MIN,
    ):
        ranked = asyncio.run(
            ResultReranker([TextSimilarityReranker(), PopularityStrategy()], method).rerank(
                "protein folding", ENTITIES
            )
        )
        assert sorted(e.id for e, _ in ranked) == ["e1", "e2", "e3"]
        assert ranked[0][0].id == "e1"
    with pytest.raises(ValueError, match="unknown strategies"):
        ResultReranker([TextSimilarityReranker()], weights={"semantic": 1.0, "text": 1.0})


def test_entity_text_rules():
    assert entity_text("plain") == "plain"
    assert entity_text({"title": "T", "content": "body"}) == "T\nbody"
    assert entity_text(ENTITIES[0]) == "Deep learning for protein folding"

    class Named:
        name = "n"
        description = "d"

    assert entity_text(Named()) == "n\nd"
    with pytest.raises(TypeError, match="text_getter"):
        entity_text(42)
    custom = TextSimilarityReranker(text_getter=lambda e: e["body"])
    assert asyncio.run(custom.score("cats", [{"body": "cats"}, {"body": "dogs"}]))[1] == 0.0
