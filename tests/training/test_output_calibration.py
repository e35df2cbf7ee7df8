"""`tune --calibrate` keeping the default's order refits its probabilities only when a refit
predicts held-out queries better (cross-validated log loss, folds by query)."""

from __future__ import annotations

import numpy as np
import pytest

from rerankit.calibration import Calibration, sigmoid
from rerankit.training.calibrated import output_log_losses, refit_output


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
    output, refit_loss, default_loss = refit_output(logits, labels, truth, 5)
    assert refit_loss >= default_loss and output is truth
