"""The scale an evaluation records for a pipeline is that of the scores it got: a hybrid
given a ``first_stage_weight`` fuses the first stage's scores (every candidate carries one)
and its scores are ``relative``, though its own ``score_scale`` (that of a call with texts
only) is ``probability``; results.json said ``probability`` beside relative scores."""

from __future__ import annotations

from eval_tiny import tiny_dataset

from rerankit.eval import evaluate
from rerankit.rerankers import HybridReranker
from rerankit.scorers import JaccardScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATION

SPEC = {  # a calibrated hybrid with a cheap stand-in for the embedding model
    "weights": {"embedding": 0.5, "bm25_background": 0.5},
    "calibration": {
        k: HYBRID_CALIBRATION["calibration"][k] for k in ("embedding", "bm25_background")
    },
    "output_calibration": {"slope": 1.2, "intercept": 0.1},
}


def _hybrid(**options) -> HybridReranker:
    return HybridReranker(JaccardScorer(name="embedding"), calibration=SPEC, **options)


def _recorded(result, name: str) -> str:
    return result.collections[0].meta["pipelines"][name]["score_scale"]


def test_the_recorded_scale_is_that_of_the_scores_the_pipeline_gave():
    fusing = _hybrid(first_stage_weight=0.1)
    assert fusing.score_scale == "probability"  # a call with texts only
    rerankers = {"fusing": fusing, "texts": _hybrid()}
    result = evaluate(tiny_dataset(), rerankers, candidates=3)
    assert _recorded(result, "fusing") == "relative"
    assert _recorded(result, "texts") == "probability"  # it does not fuse the first stage
    # without the first stage's scores, the fusing hybrid ranks by the texts: probabilities
    hidden = evaluate(tiny_dataset(), {"fusing": fusing}, candidates=3, texts_only=True)
    assert _recorded(hidden, "fusing") == "probability"
