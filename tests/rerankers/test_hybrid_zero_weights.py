"""A hybrid signal weighing 0 adds nothing to the score: it is not run, nor its model
loaded (``weights = { bm25_background = 1.0 }`` ran the embedding model on every call), and
the scores are those the weighted sum with its 0 gives."""

from __future__ import annotations

import numpy as np
import pytest

from rerankit.rerankers import HybridReranker
from rerankit.rerankers.fused import FusionReranker
from rerankit.rerankers.hybrid import HYBRID_METHOD, relative_hybrid
from rerankit.scorers import EmbeddingScorer, JaccardScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATION

QUERY = "solar power on roofs"
DOCS = ["solar panels on roofs make power", "wind farms at sea", "roofs of old houses"]
SPEC = {
    "weights": {"embedding": 0.5, "bm25_background": 0.5},
    "calibration": {
        k: HYBRID_CALIBRATION["calibration"][k] for k in ("embedding", "bm25_background")
    },
    "output_calibration": {"slope": 1.2, "intercept": 0.1},
}


class Counted(JaccardScorer):
    """A cheap stand-in for the embedding that counts the texts it is asked to score."""

    def __init__(self) -> None:
        super().__init__(name="embedding")
        self.calls = 0

    def score_texts(self, query, texts):
        self.calls += 1
        return super().score_texts(query, texts)


def _scores(result):
    return {r.index: r.score for r in result}


def test_the_calibrated_hybrid_does_not_run_a_signal_weighing_0():
    embedding = Counted()
    hybrid = HybridReranker(embedding, calibration=SPEC, weights={"bm25_background": 1.0})
    result = hybrid.rerank(QUERY, DOCS)
    assert embedding.calls == 0
    assert embedding not in list(hybrid.scorers())
    # the same scores as the calibration of bm25_background alone (the embedding's 0 x its
    # logit added nothing), and the explanation names what ran
    alone = {**SPEC, "weights": {"bm25_background": 1.0}}
    alone["calibration"] = {"bm25_background": SPEC["calibration"]["bm25_background"]}
    expected = HybridReranker(JaccardScorer(name="embedding"), calibration=alone)
    assert _scores(result) == pytest.approx(_scores(expected.rerank(QUERY, DOCS)))
    assert "embedding" not in result[0].explanation
    # a weight above 0 runs it
    HybridReranker(embedding, calibration=SPEC, weights={"bm25_background": 0.9}).rerank(
        QUERY, DOCS
    )
    assert embedding.calls == 1


def test_the_default_hybrid_weighing_only_bm25_builds_no_model_to_load():
    hybrid = HybridReranker(weights={"bm25_background": 1.0})
    assert not [s for s in hybrid.scorers() if isinstance(s, EmbeddingScorer)]
    assert [s.name for s in hybrid.scorers()] == ["bm25_background"]
    assert not hybrid.english_model  # nor is the English-only model warned of
    assert (
        HybridReranker(weights={"bm25_background": 1.0}, language="fr")
        .rerank("panneaux solaires", ["les panneaux solaires", "le vent"])
        .warnings
        == ()
    )
    assert HybridReranker(language="fr").language_setting_note() is not None


def test_the_relative_hybrid_whose_text_weights_leave_the_embedding_0_does_not_run_it():
    embedding = Counted()
    hybrid = relative_hybrid(embedding, text_weights=(0.5, 0.5))
    result = hybrid.rerank(QUERY, DOCS)
    assert embedding.calls == 0
    # the scores of the weighted sum with the embedding's 0: those of the two BM25s alone
    bm25, background = hybrid.texts_only.strategies
    weights = {"bm25": 0.5, "bm25_background": 0.5}
    alone = FusionReranker(
        [bm25, background], HYBRID_METHOD, weights, normalization_method="min_max"
    ).rerank(QUERY, DOCS)
    assert _scores(result) == pytest.approx(_scores(alone))
    # every combination leaves it out (comb_mnz's count of signals included)
    for method in ("comb_mnz", "rrf", "comb_sum"):
        counted = Counted()
        other = relative_hybrid(counted, text_weights=(0.5, 0.5), combination_method=method)
        assert [s.name for s in other.scorers()] == ["bm25", "bm25_background"]
        assert np.isfinite([r.score for r in other.rerank(QUERY, DOCS)]).all()
        assert counted.calls == 0
