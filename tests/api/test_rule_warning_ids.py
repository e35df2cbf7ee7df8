"""A rule that drops documents names them in the result's warning by the ids the caller
gave (``id_field``), and by their input positions when they have none."""

from __future__ import annotations

from rerankit import Pipeline, rerank
from rerankit.ordering import MinScore
from rerankit.scorers import BM25Scorer


def test_dropped_documents_are_named_by_their_ids():
    docs = [
        {"doc_id": "d1", "body": "solar panels turn sunlight into electricity"},
        {"doc_id": "d2", "body": "how to cook pasta"},
        {"doc_id": "d3", "body": "solar power and solar cells"},
        {"doc_id": "d4", "body": "a history of knitting"},
    ]
    pipeline = Pipeline([BM25Scorer(), MinScore(0.01)])
    result = rerank("solar", docs, reranker=pipeline, text_field="body", id_field="doc_id")
    (said,) = [w for w in result.warnings if "min_score dropped" in w]
    assert said.endswith(": min_score dropped 2 documents ['d2', 'd4']: score below 0.01")
    assert result.dropped == (1, 3)  # the result's field keeps the positions


def test_documents_without_ids_are_named_by_their_positions():
    texts = ["solar panels", "pasta", "solar cells", "knitting"]
    result = rerank("solar", texts, reranker=Pipeline([BM25Scorer(), MinScore(0.01)]))
    (said,) = [w for w in result.warnings if "min_score dropped" in w]
    assert said.endswith(": min_score dropped 2 documents [1, 3]: score below 0.01")
