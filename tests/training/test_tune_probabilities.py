"""``tune(calibrate=True)`` from Python: the written pipeline's probabilities have a verdict
of their own (a reader's notebook saw ``adopted`` False while the file held probabilities
refitted to its judgments, said only in the account's text): the result says whether they
were refitted, with the check that decided it, as values."""

from __future__ import annotations

import pytest

from rerankit.calibration import Calibration
from rerankit.scorers.recipe import HYBRID_CALIBRATION
from rerankit.training import tune


def _output_calibration(spec: dict) -> Calibration:
    return Calibration.parse(spec["stages"][0]["output_calibration"])


@pytest.mark.slow  # about 15 s: loads the embedding model and reports on the test split
def test_tune_calibrate_says_whether_the_probabilities_were_refitted(
    tmp_path, synthetic, monkeypatch
):
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs the 'torch' extra")
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "embeddings.sqlite"))
    data = synthetic(tmp_path / "data", obvious=True)
    default = Calibration.parse(HYBRID_CALIBRATION["output_calibration"])
    plain = tune(data, candidates=10, calibrate=True, out=tmp_path / "plain.toml")
    forced = tune(
        data, candidates=10, calibrate=True, keep_learned=True, out=tmp_path / "forced.toml"
    )
    for result, asked in ((plain, False), (forced, True)):
        assert not result.adopted  # the default's order kept: the check decides alone
        check = result.probability_check
        assert check is not None and check.queries == 30
        assert check.gain == pytest.approx(check.default_loss - check.refit_loss)
        assert result.probabilities_refitted == (check.adopt or asked)
        written = _output_calibration(result.spec)
        assert (written != default) == result.probabilities_refitted
        said = "probabilities refitted to these judgments" in result.comment
        assert said == result.probabilities_refitted
    assert forced.probabilities_refitted  # keep_learned refits them whatever the check
    assert forced.probability_check == plain.probability_check  # the same check
