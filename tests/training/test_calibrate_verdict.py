"""``tune --calibrate``'s verdict and learning curve (a reader saw the verdict tie the default
to the last digit, with every fold's weights different, and the curve's last row disagree
with it): the verdict scores the weights each fold chose, says a tie on every query is one,
and the curve's last row is the verdict's own figure, whatever the options fit on."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from rerankit.calibration import Calibration
from rerankit.eval.metrics import ranked_ndcg
from rerankit.scorers.recipe import HYBRID_CALIBRATION
from rerankit.training import calibrated, tune
from rerankit.training.crossval import cross_validate, learning_curve, verdict
from rerankit.training.reporting import Reporter
from rerankit.training.selection import cross_validated, curve_trend

QIDS = [f"q{i}" for i in range(20)]
OPTS = SimpleNamespace(folds=5, adopt_margin=None, keep_learned=False)


def _memorising(train):
    """Options fitted on ``train``: one that is perfect on its own queries and worthless on
    others (as a calibration fitted on the queries that choose it flatters them), and one
    as good on every query (each query's own value)."""
    seen = set(train)
    return {
        "memorises": lambda q: 1.0 if q in seen else 0.0,
        "generalises": lambda q: 0.5 + int(q[1:]) / 100,
    }


def test_the_curve_ends_at_the_verdicts_learned_figure_when_options_are_fitted():
    """An in-sample choice takes the option that fits its own queries (0 on the held-out
    fold); the verdict's nested choice takes the one that generalises. The curve chooses as
    the verdict does, so its last row is the verdict's learned nDCG@10, on the queries the
    verdict compares on (``among``) too."""
    default = {q: 0.5 for q in QIDS}
    for among in (None, set(QIDS[::2])):
        found = cross_validated(OPTS, QIDS, _memorising, default, str, Reporter(), among=among)
        assert set(found.cross_validation.chosen_by_fold) == {"generalises"}
        assert found.learning_curve[-1][1] == pytest.approx(found.verdict.learned)
        # every share chooses as the verdict does, so none takes the memorising option
        assert all(value > 0.5 for _, value in found.learning_curve)


def test_the_curve_still_refits_a_given_option_on_each_share():
    cv = cross_validate(QIDS, _memorising, k=5)
    assert [v for _, v in learning_curve(cv, _memorising, "memorises")] == [0.0] * 4


def test_a_tie_on_every_query_is_said_to_be_one():
    """Options that differ but score every query as the default does: the verdict is a
    tie, not a comparison of the default with itself, and it says so; one query apart, it
    is no tie."""
    value = {q: random.Random(q).choice([0.0, 0.6309, 1.0]) for q in QIDS}
    cv = cross_validate(QIDS, lambda train: {"a": value.get, "b": value.get}, k=5)
    tied = verdict(cv, dict(value))
    assert tied.gain == 0 and tied.noise == 0 and tied.differing == 0 and not tied.adopt
    assert (
        "a tie on every query: each of the 20 queries scored exactly the default's nDCG@10 "
        "under the option chosen for its fold"
    ) in tied.describe()
    apart = verdict(cv, {**value, "q3": value["q3"] - 0.1})
    assert apart.differing == 1 and "a tie on every query" not in apart.describe()


@pytest.mark.parametrize(
    ("last", "said"),
    [
        (0.6881, "not rising at the end (-0.05 over the best earlier point; the verdict's noise"),
        (0.6916, "still rising at the end (+0.30 over the best earlier point; the verdict's noise"),
    ],
)
def test_a_curve_against_no_noise_quotes_no_bar_of_zero(last, said):
    trend = curve_trend([(4, 0.6246), (8, 0.6784), (12, 0.6886), (16, last)], 0.0)
    assert trend.startswith(said) and "is 0.00, so any rise counts" in trend
    assert "half the noise, 0.00" not in trend
    # with noise, the bar is quoted as before
    assert "more than half the noise, 1.00" in curve_trend([(4, 0.6246), (16, last)], 0.02)


def _matrices(rng: random.Random, queries: int = 20, depth: int = 10):
    """Per query, ``depth`` candidates with the calibrated hybrid's four raw signals
    (passage, embedding, bm25_background, proximity); one relevant candidate, which only
    background BM25 ranks first (the cosines are noise around the default's scale)."""
    roles = calibrated.reading()["roles"]
    qrels, matrices = {}, {}
    for i in range(queries):
        ids = [f"d{i}-{j}" for j in range(depth)]
        raw = np.array(
            [[rng.gauss(0.4, 0.15) for _ in ids] for _ in roles]  # cosines: noise
        )
        bm25 = roles.index("bm25_background")
        raw[bm25] = [rng.uniform(2, 6) for _ in ids]
        raw[bm25][0] = 6.5  # the relevant one: only BM25 knows, by a little
        qrels[f"q{i}"] = {ids[0]: 1}
        matrices[f"q{i}"] = (ids, raw)
    return roles, SimpleNamespace(qrels=qrels), matrices


def test_the_calibrated_verdict_scores_the_weights_each_fold_chose():
    """Not the default's order: on candidates only background BM25 ranks well, the
    weights the folds choose score above the default's, query by query as those weights
    rank them (calibrations fitted on the other folds)."""
    roles, data, matrices = _matrices(random.Random(3))
    default_cals = [Calibration.parse(HYBRID_CALIBRATION["calibration"][r]) for r in roles]
    default_weights = [HYBRID_CALIBRATION["weights"][r] for r in roles]
    default = {
        q: ranked_ndcg(
            ids, calibrated.fused_logits(raw, default_cals, default_weights), data.qrels[q]
        )
        for q, (ids, raw) in matrices.items()
    }
    fit = calibrated.calibration_options(data, matrices, roles)
    found = cross_validated(OPTS, list(matrices), fit, default, str, Reporter())
    cv = found.cross_validation
    assert found.verdict.learned > found.verdict.default and found.verdict.differing > 0
    for f, chosen in enumerate(cv.chosen_by_fold):
        held = [q for q in matrices if cv.fold_of[q] == f]
        models = fit([q for q in matrices if cv.fold_of[q] != f])
        assert [cv.per_query[q] for q in held] == [models[chosen](q) for q in held]
    assert found.learning_curve[-1][1] == pytest.approx(found.verdict.learned)


@pytest.mark.slow  # about 15 s: loads the embedding model and reports on the test split
def test_tune_calibrate_says_its_tie_and_ends_its_curve_at_the_verdict(
    tmp_path, synthetic, monkeypatch
):
    """The reader's case end to end, on a collection where every signal ranks the judged
    documents first: whatever weights the folds choose, each query scores the default's
    nDCG@10. The account says it is a tie, the curve ends at the verdict's figure and its
    trend quotes no bar of 0.00."""
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs the 'torch' extra")
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "embeddings.sqlite"))
    data = synthetic(tmp_path / "data", obvious=True)
    result = tune(data, candidates=10, calibrate=True, out=tmp_path / "calibrated.toml")
    assert result.verdict.gain == 0 and result.verdict.differing == 0 and not result.adopted
    account = "\n".join(result.lines)
    assert "; a tie on every query: each of the 30 queries scored exactly the default's" in account
    assert result.learning_curve[-1][1] == result.verdict.learned
    assert "not rising at the end (+0.00 over the best earlier point; the verdict's noise is " in (
        account
    )
    assert "half the noise, 0.00" not in account
    assert "kept the default's order" in account
