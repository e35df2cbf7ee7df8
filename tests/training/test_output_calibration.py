"""`tune --calibrate` keeping the default's order refits its probabilities only when a refit
predicts held-out queries better (cross-validated log loss, folds by query) by more than the
margin times the noise, as the order's verdict does."""

from __future__ import annotations

import numpy as np
import pytest

from rerankit.calibration import Calibration, sigmoid
from rerankit.training.calibrated import OutputRefit, output_log_losses, output_refit, refit_output


def _queries(truth: Calibration, n: int, seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    logits, labels = {}, {}
    for i in range(n):
        x = rng.normal(0.0, 2.0, 30)
        logits[f"q{i}"] = x
        labels[f"q{i}"] = (rng.random(30) < sigmoid(truth.logit(x))).astype(float)
    return logits, labels


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_a_default_far_from_the_judgments_is_refitted():
    truth = Calibration(slope=2.0, intercept=-3.0)
    logits, labels = _queries(truth, 60, seed=0)
    default = Calibration(slope=0.5, intercept=1.0)
    refit_loss, default_loss = output_log_losses(logits, labels, default)
    x, y = np.concatenate(list(logits.values())), np.concatenate(list(labels.values()))
    assert default_loss == pytest.approx(_log_loss(sigmoid(default.logit(x)), y))
    assert refit_loss < default_loss
    output, *_ = refit_output(logits, labels, default, 5)
    assert output is not default
    assert output.slope == pytest.approx(2.0, abs=0.5)
    assert output.intercept == pytest.approx(-3.0, abs=0.7)


def test_the_true_calibration_is_kept_over_a_refit_of_its_noise():
    truth = Calibration(slope=1.5, intercept=-1.0)
    logits, labels = _queries(truth, 12, seed=3)  # few queries: a refit fits their noise
    output, check = refit_output(logits, labels, truth, 5)
    assert check.refit_loss >= check.default_loss and output is truth
    assert not check.adopt


def test_a_gain_within_the_noise_keeps_the_default():
    # a default a little off the truth: a refit predicts held-out queries slightly better,
    # but by less than twice the noise over queries, so the default's probabilities stay
    truth = Calibration(slope=1.5, intercept=-1.0)
    logits, labels = _queries(truth, 30, seed=0)
    default = Calibration(slope=1.35, intercept=-1.1)
    output, check = refit_output(logits, labels, default, 5)
    assert 0 < check.gain < 2 * check.noise
    assert output is default and not check.adopt
    refitted, loose = refit_output(logits, labels, default, 5, margin=0.1)
    assert loose.adopt and refitted is not default  # the margin decides, not the sign alone


def test_the_check_says_when_the_held_out_ece_got_worse():
    truth = Calibration(slope=2.0, intercept=-3.0)
    logits, labels = _queries(truth, 60, seed=0)
    check = output_refit(logits, labels, Calibration(slope=0.5, intercept=1.0))
    assert check.adopt and check.refit_ece < check.default_ece
    said = check.describe()
    assert "(worse)" not in said and "ECE on the training queries, each held out" in said
    worse = OutputRefit(0.34, 0.35, 0.001, refit_ece=0.036, default_ece=0.030, queries=35)
    assert worse.adopt and "refitted 0.0360 (worse), the default's 0.0300" in worse.describe()


def test_keep_learned_refits_the_probabilities_the_check_did_not_adopt():
    truth = Calibration(slope=1.5, intercept=-1.0)
    logits, labels = _queries(truth, 12, seed=3)
    kept, check = refit_output(logits, labels, truth, 5)
    forced, same = refit_output(logits, labels, truth, 5, force=True)
    assert not check.adopt and kept is truth and same == check  # the check unchanged
    assert forced is not truth and forced.slope == pytest.approx(1.5, abs=0.6)
    constant = {q: np.zeros_like(y) for q, y in labels.items()}  # nothing to fit on
    assert refit_output(logits, constant, truth, 5, force=True)[0] is truth
