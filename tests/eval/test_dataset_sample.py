"""Dataset.sample: a random subset of a collection's queries, to evaluate from Python."""

from __future__ import annotations

import pytest
from eval_tiny import QRELS, QUERIES, tiny_dataset

import rerankit
from rerankit.errors import InputError


def test_a_sample_keeps_n_random_queries_their_judgments_and_the_whole_corpus():
    data = tiny_dataset()
    data.run_scores = {q: [("d1", 1.0)] for q in QUERIES}
    two = data.sample(2, seed=1)
    assert len(two.queries) == 2 and set(two.queries) <= set(QUERIES)
    assert two.qrels == {q: QRELS[q] for q in two.queries}
    assert set(two.run_scores) == set(two.queries) and two.corpus == data.corpus
    assert two.sample(2, seed=1).queries == two.queries == data.sample(2, seed=1).queries
    assert {tuple(data.sample(1, seed=s).queries) for s in range(20)} == {(q,) for q in QUERIES}
    assert data.queries == QUERIES and data.sample(10).queries == QUERIES  # all, unchanged
    result = rerankit.evaluate(two, ["bm25"], candidates=4)
    assert set(result.rows[1]["per_query_ndcg@10"]) == set(two.queries)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="n must be a positive number of queries"):
            data.sample(bad)
