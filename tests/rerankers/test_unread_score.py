"""rerankit 0.1.0's hybrid fused a document's ``score``; now the retriever's score comes
from ``first_stage_score`` or ``first_stage_field=``. Documents that still carry only
``score`` get a warning saying so (an upgrading reader's ranking changed silently)."""

from __future__ import annotations

import pytest

from rerankit import rerank

QUERY = "how do vaccines train the immune system"
DOCS = [
    {"id": "a", "text": "Vaccine storage needs fridges between 2 and 8 degrees.", "score": 0.9},
    {"id": "b", "text": "A vaccine trains the immune system: B and T cells.", "score": 0.2},
]
SAID = "every document carries a 'score' field, which is not read as the retriever's score"


@pytest.mark.parametrize("reranker", ["hybrid", "hybrid-relative"])
def test_a_score_field_left_unread_is_said(reranker):
    result = rerank(QUERY, [dict(d) for d in DOCS], reranker=reranker)
    said = [w for w in result.warnings if SAID in w]
    assert len(said) == 1 and "first_stage_field='score' reads this one" in said[0]


def test_named_or_absent_it_is_not_said():
    named = rerank(QUERY, DOCS, reranker="hybrid-relative", first_stage_field="score")
    assert not any(SAID in w for w in named.warnings)
    plain = [{k: v for k, v in d.items() if k != "score"} for d in DOCS]
    assert not any(SAID in w for w in rerank(QUERY, plain, reranker="hybrid-relative").warnings)
    some = [DOCS[0], plain[1]]  # only every document's score reads as a retriever's
    assert not any(SAID in w for w in rerank(QUERY, some, reranker="hybrid-relative").warnings)
