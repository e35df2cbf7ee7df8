"""The default hybrid with other weights: ``weights`` names the signals it changes (the
rest keep the default's proportions), its scores say they are no fitted probability, and
``text_weights`` (the relative hybrid's) or a half-written ``calibration`` given to it is a
clear error, never ignored."""

from __future__ import annotations

import pytest

from rerankit import load
from rerankit.cli.models import describe
from rerankit.errors import ConfigError
from rerankit.rerankers import HybridReranker
from rerankit.rerankers.fused import INTERCEPT
from rerankit.rerankers.hybrid import relative_hybrid
from rerankit.scorers import JaccardScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATION, reweighted

QUERY = "solar power on roofs"
DOCS = ["solar panels on roofs make power", "wind farms at sea", "roofs of old houses"]
DEFAULT = HYBRID_CALIBRATION["weights"]
#: a calibration without passages, so that a cheap scorer can stand in for the bi-encoder
SPEC = {
    "weights": {"embedding": 0.5, "bm25_background": 0.5},
    "calibration": {
        k: HYBRID_CALIBRATION["calibration"][k] for k in ("embedding", "bm25_background")
    },
    "output_calibration": {"slope": 1.2, "intercept": 0.1},
}


def cheap(**options):
    return HybridReranker(JaccardScorer(name="embedding"), **options)


def weights_of(result):
    return {k: v["weight"] for k, v in result[0].explanation.items() if k != INTERCEPT}


def test_named_weights_are_used_as_written_and_the_rest_keep_the_defaults_proportions():
    assert reweighted(DEFAULT, {"bm25_background": 0.7}) == pytest.approx(
        {
            "passage": 0.3 / 0.525 * 0.3,
            "embedding": 0.15 / 0.525 * 0.3,
            "bm25_background": 0.7,
            "proximity": 0.075 / 0.525 * 0.3,
        }
    )
    given = {"bm25_background": 0.7}
    reweighted(DEFAULT, given)
    assert given == {"bm25_background": 0.7}  # the caller's mapping is not changed
    result = cheap(calibration=SPEC, weights={"bm25_background": 0.8}).rerank(QUERY, DOCS)
    assert weights_of(result) == pytest.approx({"embedding": 0.2, "bm25_background": 0.8})
    # the output calibration was fitted for other weights: pair-wise, but no probability
    assert result.score_scale == "unit"
    assert cheap(calibration=SPEC).rerank(QUERY, DOCS).score_scale == "probability"
    # weights equal to the fitted ones change nothing
    same = cheap(calibration=SPEC, weights={"embedding": 0.5})
    assert same.score_scale == "probability" and not same.reweighted


def test_a_pipeline_file_reweighs_the_default_and_check_says_the_scores_are_no_probability():
    spec = {
        "name": "bm25-heavy",
        "reranker": {"type": "hybrid", "weights": {"bm25_background": 0.7}},
    }
    reranker = load(spec)
    assert reranker.score_scale == "unit" and reranker.reweighted
    line = describe(reranker)
    assert "scores unit" in line and "fitted for other weights" in line
    # the weights it resolved, the ones left out sharing the rest in the default's shares
    assert "weights passage 0.1714, embedding 0.0857, bm25_background 0.7, proximity 0.0429" in line
    assert "fitted" not in describe(load({"reranker": "hybrid"}))
    assert describe(load({"reranker": "hybrid"})).endswith("scores probability")


def test_check_says_a_later_stage_gives_the_scores_after_a_reweighted_hybrid():
    """Behind a cross-encoder or a recency fusion, the hybrid's weights are named, but the
    scale said is the later stage's, not "scores in [0, 1] but no fitted probability"."""
    hybrid = {"reranker": {"type": "hybrid", "weights": {"bm25_background": 0.7}}}
    fresh = {"scorers": [{"type": "position"}, {"type": "recency", "field": "date"}]}
    line = describe(load({"stages": [hybrid, fresh]}))
    assert "scores relative (a hybrid with weights passage 0.1714," in line
    assert "a later stage gives the scores" in line and "fitted" not in line
    capped = describe(load({"stages": [hybrid, {"rule": {"type": "cap", "field": "source"}}]}))
    assert "scores unit (weights passage 0.1714," in capped and "fitted for other" in capped


@pytest.mark.parametrize(
    ("weights", "said"),
    [
        (
            {"bm25": 0.7},
            "unknown signal ['bm25']; the signals are passage, embedding, "
            "bm25_background, proximity",
        ),
        ({"bm25": 0.5, "dense": 0.5}, "unknown signals ['bm25', 'dense']; the signals are"),
        ({"passage": 0.8, "embedding": 0.5}, "sum to 1.3"),
        ({"passage": 0.3, "embedding": 0.1, "bm25_background": 0.1, "proximity": 0.1}, "exactly 1"),
        ({"passage": "high"}, "each weight is a number in [0, 1]"),
        ([0.3, 0.7], "a table of signal names to weights"),
    ],
)
def test_weights_that_cannot_be_read_are_named(weights, said):
    with pytest.raises(ValueError) as caught:
        HybridReranker(weights=weights)
    assert said in str(caught.value)


def test_text_weights_on_the_calibrated_hybrid_are_an_error_naming_the_fix():
    with pytest.raises(ValueError) as caught:
        HybridReranker(text_weights=[0.3, 0.7])
    said = str(caught.value)
    assert "weights = { bm25_background = 0.7 }" in said and 'type = "hybrid-relative"' in said
    with pytest.raises(ConfigError, match="the calibrated hybrid does not read them"):
        load({"reranker": {"type": "hybrid", "text_weights": [0.3, 0.7]}})
    # the relative hybrid reads them; weights are the calibrated one's
    assert relative_hybrid(JaccardScorer(name="embedding"), text_weights=[0.3, 0.5])
    with pytest.raises(ValueError, match="text_weights = \\[bm25, bm25_background\\]"):
        relative_hybrid(weights={"bm25_background": 0.7})


@pytest.mark.parametrize(
    ("text_weights", "said"),
    [
        ({"embedding": 0.3, "bm25": 0.7}, "not a table"),
        ("0.3, 0.7", "two numbers [bm25, bm25_background]"),
        ([0.3, "a"], "two numbers [bm25, bm25_background]"),
        ([0.6, 0.7], "[bm25, bm25_background] >= 0 with sum <= 1"),
    ],
)
def test_text_weights_of_the_wrong_kind_get_a_message_not_a_type_error(text_weights, said):
    with pytest.raises(ConfigError) as caught:
        load({"reranker": {"type": "hybrid-relative", "text_weights": text_weights}})
    assert said in str(caught.value) and "not supported between" not in str(caught.value)


def test_a_calibration_table_missing_keys_names_them_all_at_once():
    with pytest.raises(ValueError) as caught:
        HybridReranker(calibration={"weights": {"passage": 0.5, "embedding": 0.5}})
    assert "missing ['calibration', 'output_calibration', 'passage_words']" in str(caught.value)


def test_a_copied_calibration_with_other_weights_is_no_probability():
    copied = {**HYBRID_CALIBRATION, "weights": {**DEFAULT, "bm25_background": 0.7}}
    assert HybridReranker(calibration=copied).score_scale == "unit"
    assert HybridReranker(calibration=dict(HYBRID_CALIBRATION)).score_scale == "probability"


def test_weights_beside_a_model_the_calibration_does_not_fit_say_why_and_the_fixes():
    """A multilingual model's hybrid falls back to relative scores; its ``weights`` were
    refused as if the caller had asked for hybrid-relative."""
    model = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    with pytest.raises(ValueError) as err:
        HybridReranker(model=model, language="de", weights={"bm25_background": 0.7})
    message = str(err.value)
    assert f"fits the bundled all-MiniLM-L6-v2, not {model!r}" in message
    assert "give calibration=" in message and "text_weights = [bm25, bm25_background]" in message
    relative = HybridReranker(model=model, language="de", text_weights=[0.2, 0.5])
    assert relative.score_scale == "relative"
