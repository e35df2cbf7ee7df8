"""``tune`` from Python refuses the options of one way of learning given with another, as
``rerankit tune`` refuses their flags: ``calibrate=True`` with ``method="ltr"`` silently
refitted the hybrid and ignored the ranker asked for; ``seeds`` without ``method="ltr"``
was read by nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from rerankit.training import tune

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"calibrate": True, "method": "ltr"}, "method='ltr' (--method): not used with calibrate"),
        ({"calibrate": True, "strategies": "bm25,embedding"}, "strategies='bm25,embedding'"),
        ({"method": "ltr", "strategies": "bm25,embedding"}, "learns from every signal"),
        ({"seeds": 3}, "seeds=3 (--seeds): only method='ltr' reads seeds and unjudged"),
        ({"unjudged": "skip", "calibrate": True}, "unjudged='skip' (--unjudged): only"),
    ],
)
def test_options_of_another_way_of_learning_are_refused_before_any_work(tmp_path, options, said):
    out = tmp_path / "tuned.toml"
    with pytest.raises(ValueError, match="leave it out") as caught:
        tune(SAMPLE, candidates=5, out=out, **options)
    assert said in str(caught.value)
    assert not out.exists()  # refused before anything was read or written


def test_the_options_of_the_way_asked_and_the_defaults_given_explicitly_pass_the_check():
    from rerankit.training.tuning import TuneOptions

    for options in (
        {"method": "ltr", "seeds": 3, "unjudged": "skip"},
        {"calibrate": True},
        {"strategies": ("first_stage", "bm25", "embedding"), "seeds": 1},
        {"method": "fusion", "strategies": "first-stage,bm25"},
    ):
        TuneOptions(data=SAMPLE, **options).check()  # no ValueError
