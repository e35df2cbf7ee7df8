"""An evaluation advises refitting a pipeline's probabilities only where a refit would pay:
the same cross-validated check ``tune --calibrate`` makes before it writes one, run on the
queries evaluated (:func:`rerankit.eval.refit_check.probability_refit`)."""

from __future__ import annotations

import numpy as np

from rerankit.eval.data import Dataset
from rerankit.eval.notes import calibration_note
from rerankit.eval.refit_check import probability_refit, run_calibration
from rerankit.eval.runner import FIRST_STAGE, PipelineRun, evaluate_runs, format_table


def _collection(truth, queries: int = 60, docs: int = 20, seed: int = 0):
    """Probability scores (query -> doc -> p, uniform in 0.02..0.98) and judgments drawn
    with ``truth(p)`` as each pair's chance of being relevant."""
    rng = np.random.default_rng(seed)
    scores, qrels = {}, {}
    for q in range(queries):
        p = rng.uniform(0.02, 0.98, docs)
        relevant = rng.random(docs) < truth(p)
        scores[f"q{q}"] = {f"d{q}-{d}": float(p[d]) for d in range(docs)}
        qrels[f"q{q}"] = {f"d{q}-{d}": 1 for d in range(docs) if relevant[d]}
    return scores, qrels


def _overconfident(p):
    """Relevant far less often than the scores say (a collection with fewer relevant
    candidates than the one calibrated on)."""
    logit = np.log(p / (1 - p))
    return 1 / (1 + np.exp(-(0.5 * logit - 2.0)))


def test_probabilities_far_off_a_collections_share_get_a_refit_that_pays():
    scores, qrels = _collection(_overconfident)
    check = probability_refit(scores, qrels)
    assert check is not None and check.queries == 60
    assert check.adopt and check.gain > check.margin * check.noise
    assert check.refit_ece < check.default_ece


def test_probabilities_that_already_match_get_no_refit():
    scores, qrels = _collection(lambda p: p, seed=1)
    check = probability_refit(scores, qrels)
    assert check is not None and not check.adopt
    assert check.gain <= check.margin * check.noise


def test_too_few_queries_or_no_relevant_pair_is_no_check():
    scores, qrels = _collection(_overconfident, queries=3)
    assert probability_refit(scores, qrels) is None
    scores, _ = _collection(_overconfident)
    assert probability_refit(scores, {}) is None


def test_the_check_is_made_only_when_the_error_is_above_the_line():
    off = run_calibration(*reversed(_collection(_overconfident)))
    fine = run_calibration(*reversed(_collection(lambda p: p, queries=300, seed=1)))
    assert off["ece"] > 0.05 and off["refit"]["adopt"] is True
    assert fine["ece"] <= 0.05 and fine["refit"] is None


def _table(truth, queries: int = 60, seed: int = 0) -> str:
    """The evaluation table of a calibrated run over a collection drawn with ``truth``."""
    scores, qrels = _collection(truth, queries=queries, seed=seed)
    data = Dataset(
        "drawn",
        corpus={d: {"title": "", "text": d} for s in scores.values() for d in s},
        queries={q: q for q in scores},
        qrels=qrels,
    )
    first = PipelineRun(FIRST_STAGE, run={q: dict(s) for q, s in scores.items()})
    run = PipelineRun("calibrated", run={q: dict(s) for q, s in scores.items()}, scores=scores)
    run.score_scales = {"probability"}
    return format_table(evaluate_runs(data, [first, run], 10), 10, {"data": "drawn"})


def test_an_evaluation_advises_tune_calibrate_where_a_refit_pays():
    note = next(line for line in _table(_overconfident).split("\n") if line.startswith("ECE:"))
    assert "Above 0.05 for calibrated" in note and "refit before relying" in note
    assert "--calibrate" in note or "calibrate=True" in note


def test_an_evaluation_does_not_advise_a_refit_that_would_not_pay():
    # probabilities that match, judged on ten queries: the ECE is above the line by chance
    # alone, and a refit on so few queries does not predict the others better
    scores, qrels = _collection(lambda p: p, queries=10, seed=1)
    check = probability_refit(scores, qrels)
    assert check is not None and not check.adopt
    note = next(line for line in _table(lambda p: p, 10, 1).split("\n") if "ECE:" in line)
    assert "Above 0.05 for calibrated" in note
    assert "refit before relying" not in note and "would keep its probabilities" in note
    assert "Above 0.05 for calibrated: a refit fitted on some of these 10 queries" in note
    assert "Keep the default's" in note


def test_the_note_reads_each_rows_check():
    idle = {"adopt": False, "gain": 0.001, "noise": 0.002, "margin": 2.0, "queries": 40}
    pays = dict(idle, adopt=True, gain=0.05)
    rows = [
        {"pipeline": "a", "ece": 0.08, "calibration": {"refit": idle}},
        {"pipeline": "b", "ece": 0.09, "calibration": {"refit": pays}},
    ]
    note = calibration_note(rows, {"data": "mine"})
    _, advised, kept = note.split("Above")
    assert "for b:" in advised and "refit before relying" in advised
    assert "for a: a refit fitted" in kept and "log-loss gain +0.0010, noise 0.0020" in kept
    assert "b" not in kept.split(":")[0]


def _folder_with_a_run(
    tmp_path, ranked: list[str], judged: int = 8, asked: int | None = None, tests: int = 4
):
    """A folder with train (q1..q``judged``) and test (t1..t``tests``) judgments, and a TREC
    run of ``ranked`` query ids; ``asked``: a queries.jsonl holding q1..q``asked`` and
    t1..t4 only (a subset folder, whose other judged queries are left out)."""
    from rerankit.eval.notes import refit_call

    qrels = tmp_path / "data" / "qrels"
    qrels.mkdir(parents=True)
    (qrels / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(1, judged + 1))
    )
    if asked is not None:
        ids = [f"q{i}" for i in range(1, asked + 1)] + [f"t{i}" for i in range(1, 5)]
        (tmp_path / "data" / "queries.jsonl").write_text(
            "".join(f'{{"_id": "{q}", "text": "query {q}"}}\n' for q in ids)
        )
    (qrels / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"t{i}\td{i}\t1\n" for i in range(1, tests + 1))
    )
    run = tmp_path / "mine.run"
    run.write_text("".join(f"{q} Q0 d1 1 0.5 mine\n" for q in ranked))
    return refit_call(tmp_path / "data", str(run), 20, split="test")


def test_a_run_that_ranks_the_training_queries_is_advised_with_tunes_own_splits(tmp_path):
    call = _folder_with_a_run(tmp_path, [f"q{i}" for i in range(1, 9)] + ["t1", "t2"])
    assert "train_split" not in call and "--train-split" not in call, call
    assert "calibrate" in call


def test_a_run_of_the_evaluated_queries_alone_is_advised_with_that_splits_halves(tmp_path):
    # 1 of 8 training queries; the odd half of 8 test queries, 4, is enough to fit on
    ranked = ["q1"] + [f"t{i}" for i in range(1, 9)]
    call = _folder_with_a_run(tmp_path, ranked, tests=8)
    assert 'train_split="test:odd"' in call or "--train-split test:odd" in call, call


def test_a_run_that_ranks_a_subset_folders_training_queries_is_advised_with_tunes_own_splits(
    tmp_path,
):
    # qrels/train.tsv judges 40 queries, but queries.jsonl holds 8 of them (the subset the
    # run covers, as evaluation.md advises): tune's default training split is those 8
    call = _folder_with_a_run(
        tmp_path, [f"q{i}" for i in range(1, 9)] + ["t1", "t2"], judged=40, asked=8
    )
    assert "train_split" not in call and "--train-split" not in call, call
