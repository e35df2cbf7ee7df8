"""The three things :func:`~rerankit.training.tune` can learn, each fitted on the training
split, cross-validated against the default and written only when it beats it: a fusion of
the first stage, BM25 and the embedding (:func:`fit_fusion`), the calibrated hybrid's
weights and probabilities (:func:`fit_calibrated`), and a LightGBM ranker over rerankit's
signals (:func:`fit_ltr`)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..calibration import Calibration, expected_calibration_error, sigmoid
from ..errors import keyword_flag
from ..eval.metrics import ranked_ndcg
from ..normalize import normalize_scores
from ..scorers import learned
from ..scorers.recipe import HYBRID_CALIBRATION
from . import calibrated, ltr, ltr_limits
from . import fusion_search as fusion
from .reporting import Reporter
from .selection import (
    cross_validated,
    default_hybrid_scores,
    default_ndcg,
    default_pipeline,
    judged_only,
    other_embedding,
    per_fold,
    pick_default,
    write_pipeline,
    written_name,
)
from .tune_result import TuneResult

__all__ = ["Inputs", "TuneResult", "feature_rows", "fit_calibrated", "fit_fusion", "fit_ltr"]


@dataclass
class Inputs:
    """What a method learns from: the options (:class:`~rerankit.training.TuneOptions`),
    the training split and each query's first-stage candidates, the embedding scorer (or
    ``routes``: each query's fold model, when it was cross-fitted), the queries the verdict
    is made on (``among``; None: all) and where the account goes."""

    opts: Any
    train: Any
    cands: Any
    embedding: Any
    routes: dict[str, str] | None
    among: set[str] | None
    report: Reporter


def fit_fusion(job: Inputs) -> TuneResult:
    """Fusion weights of ``opts.strategies`` (weighted min-max, weighted z-score, RRF; a 0.1
    grid) chosen by cross-validation against the default."""
    opts, train, cands, report = job.opts, job.train, job.cands, job.report
    embedding, routes, among = job.embedding, job.routes, job.among
    strategies = opts.strategy_list
    bar = report.progress(f"scoring the {opts.train_split} split")
    matrices = per_fold(
        lambda c, e: fusion.score_matrix(train, c, e, progress=bar),
        cands,
        routes,
        embedding,
        opts.embedding_max_length,
    )
    table = fusion.fusion_table(train, matrices, strategies)
    fit = fusion.fusion_options(table)
    which, default = default_ndcg(opts, train, cands, table, among, report)
    report.say(
        f"{train.name}: fusions of {', '.join(strategies)} on the {opts.train_split} split\n"
    )
    found = cross_validated(
        opts, list(matrices), fit, default, fusion.describe_fusion, report, among=among
    )
    verdict, best = found.verdict, found.cross_validation.best
    name = written_name(opts, f"tuned-{train.name}")
    if verdict.adopt or opts.keep_learned:
        spec = fusion.pipeline_spec(
            fusion.as_choice(best),
            name=name,
            embedding_model=opts.embedding_model,
            embedding_max_length=opts.embedding_max_length,
        )
        comment = (
            f"Tuned by `rerankit tune` on {train.name} {opts.train_split} ({len(matrices)} "
            f"queries): {fusion.describe_fusion(best)}; {verdict.as_written()}."
        )
    else:
        spec, comment = default_pipeline(opts, train, verdict, "tuned fusion", which, name)
    path = write_pipeline(opts, f"{name}.toml", spec, comment, report)
    learned_written = bool(verdict.adopt or opts.keep_learned)
    return TuneResult("fusion", path, spec, comment, learned_written, which, found)


def fit_calibrated(job: Inputs) -> TuneResult:
    """Refit the calibrated hybrid on the training split (weights chosen by
    cross-validation); when that does not beat the default's order by more than the margin
    times the noise, keep the default's order and refit only its output calibration (the
    probabilities), when a refit predicts held-out queries better (cross-validated log loss)
    than the default's by more than the margin times the noise. ``routes``: each query's
    fold model, when ``embedding`` was cross-fitted
    (:func:`~rerankit.training.selection.cross_fit_routes`); the verdict on ``among``."""
    opts, train, cands, report = job.opts, job.train, job.cands, job.report
    embedding, routes, among = job.embedding, job.routes, job.among

    read = calibrated.reading()  # documents read as the default hybrid reads them
    roles = read["roles"]
    bar = report.progress(f"scoring the {opts.train_split} split")
    matrices = per_fold(
        lambda c, e: calibrated.pairwise_matrix(train, c, e, read=read, progress=bar),
        cands,
        routes,
        embedding,
        opts.embedding_max_length,
    )
    default_cals = [Calibration.parse(HYBRID_CALIBRATION["calibration"][r]) for r in roles]
    default_weights = [HYBRID_CALIBRATION["weights"][r] for r in roles]
    logits = {
        q: calibrated.fused_logits(raw, default_cals, default_weights)
        for q, (_, raw) in matrices.items()
    }
    default = {
        q: ranked_ndcg(ids, logits[q], train.qrels.get(q, {})) for q, (ids, _) in matrices.items()
    }
    report.say(
        f"{train.name}: the calibrated hybrid's signals ({', '.join(roles)}) on "
        f"{len(matrices)} {opts.train_split} queries\n"
    )

    def describe(weights: Any) -> str:
        return "weights " + ", ".join(f"{r} {w:.1f}" for r, w in zip(roles, weights, strict=True))

    fit = calibrated.calibration_options(train, matrices, roles)
    found = cross_validated(opts, list(matrices), fit, default, describe, report, among=among)
    verdict, best = found.verdict, found.cross_validation.best
    labels = calibrated.relevance_labels(train, matrices)
    y = np.concatenate([labels[q] for q in matrices])
    if verdict.adopt:
        refitted = calibrated.fit_calibrated(train, matrices, roles, weights=[best])
        calibration, ece = refitted["calibration"], refitted["ece"]
        comment = (
            f"Calibrated by `rerankit tune --calibrate` on {train.name} {opts.train_split} "
            f"({len(matrices)} queries): {describe(best)}; {verdict.as_written()}."
        )
        fitted, check = True, None
    else:  # the default's order; its probabilities refitted where that generalises, or
        # where --keep-learned asks (the learned weights are never written unadopted)
        default_output = Calibration.parse(HYBRID_CALIBRATION["output_calibration"])
        output, check = calibrated.refit_output(
            logits, labels, default_output, opts.folds, verdict.margin, force=opts.keep_learned
        )
        calibration = {
            k: {r: HYBRID_CALIBRATION[k][r] for r in roles} for k in ("weights", "calibration")
        }
        calibration["output_calibration"] = output.as_dict()
        fused = np.concatenate(list(logits.values()))
        ece = expected_calibration_error(sigmoid(output.logit(fused)), y)
        fitted = output is not default_output
        if fitted and not check.adopt:
            probabilities = (
                "probabilities refitted to these judgments although the refit did not predict "
                "held-out queries better by more than the margin times the noise (written "
                f"anyway, as {keyword_flag('keep_learned', True)} asked)"
            )
        elif fitted:
            probabilities = "probabilities refitted to these judgments"
        else:
            probabilities = (
                "own probabilities (a refit did not predict held-out queries better by more "
                "than the margin times the noise)"
            )
        comment = (
            f"Written by `rerankit tune --calibrate` on {train.name} {opts.train_split} "
            f"({len(matrices)} queries): refitted weights did not beat the default's order by "
            f"more than {round(verdict.required, 2):g} x the noise ({verdict.describe()}), so "
            f"this is the default hybrid's order with its {probabilities}."
        )
        report.say(f"{check.describe()}\nkept the default's order with its {probabilities}")
    report.say(
        f"ECE of the written pipeline's probabilities on all {len(matrices)} training queries "
        + ("(in-sample: fitted on them)" if fitted else "(the default's: not fitted on them)")
        + f": {ece:.4f}; on the test split: the ECE column below"
    )
    name = written_name(opts, f"calibrated-{train.name}")
    spec = calibrated.calibrated_spec(
        calibration,
        name=name,
        read=read,
        embedding_model=opts.embedding_model,
        embedding_max_length=opts.embedding_max_length,
    )
    path = write_pipeline(opts, f"{name}.toml", spec, comment, report)
    learned_written = bool(verdict.adopt or opts.keep_learned)
    result = TuneResult("calibrate", path, spec, comment, learned_written, "hybrid", found)
    result.probabilities_refitted, result.probability_check = fitted, check
    return result


def feature_rows(
    data: Any, cands: Any, embedding: str | None, *, progress: Callable[[Any], Any] | None = None
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Learning to rank's features (:data:`rerankit.scorers.learned.FEATURES`) of each query's
    candidates, ``{qid: (doc ids, matrix)}``, for the queries with any; ``embedding``: the
    model the embedding features read (None: the bundled MiniLM); ``progress`` wraps the
    loop over queries."""
    signals = learned.Signals(embedding)
    items = [(q, c) for q, c in cands.items() if c]
    rows = {}
    for qid, ranked in progress(items) if callable(progress) else items:
        texts = [data.text(d) for d, _ in ranked]
        x = learned.features(signals, data.queries[qid], texts, [s for _, s in ranked])
        rows[qid] = ([d for d, _ in ranked], x)
    return rows


def _describe_ltr(option: Any, embedding: str | None = None) -> str:
    """``option`` said; the blend's ``embedding`` is the bundled MiniLM when None."""
    setting, trees, blend, top = option
    mix = f"learned score {blend:.2f}, blended with first stage + {embedding or 'MiniLM'}"
    mix = "the learned score alone" if blend == 1 else f"{mix} {1 - blend:.2f}"  # the shares
    cleaned = "" if top is None else f", judged-relevant ranked below {top} left out"
    return f"{setting}, {trees} trees, {mix}{cleaned}"


def fit_ltr(job: Inputs) -> TuneResult:
    """Learning to rank: LightGBM settings, trees and a blend with the default chosen by
    cross-validation; the learned pipeline written when it beats the default hybrid (given
    first-stage scores) by more than the margin times the noise, else the default.
    ``routes`` and ``among``: see :class:`Inputs`."""
    opts, train, cands, report = job.opts, job.train, job.cands, job.report
    embedding, routes, among = job.embedding, job.routes, job.among

    say = report.say
    start = time.perf_counter()
    rows = per_fold(
        lambda c, e: feature_rows(train, c, e, progress=report.progress("features")),
        cands,
        routes,
        embedding,
        opts.embedding_max_length,
    )
    with_candidates = len(rows)
    say(
        f"{train.name}: learning to rank on {len(rows)} {opts.train_split} queries (features "
        f"built in {time.perf_counter() - start:.0f} s; {len(ltr.feature_set(len(rows)))} "
        f"features, with {len(ltr.SETTINGS)} LightGBM settings, trees "
        f"{'/'.join(map(str, ltr.TREES))} and blends with the default compared)\n"
    )
    fs, cos = learned.FEATURES.index("first_stage"), learned.FEATURES.index("cosine")
    weights = fusion.DEFAULT_HYBRID["weights"]
    blended = {  # what a learned model is blended with: first stage and MiniLM, min-max
        q: weights["first_stage"] * normalize_scores(x[:, fs], "min_max")
        + weights["embedding"] * normalize_scores(x[:, cos], "min_max")
        for q, (_, x) in rows.items()
    }
    hybrid = default_hybrid_scores(train, cands, progress=report.progress("scoring the default"))
    judged = judged_only(opts, report)
    if judged:  # learn and cross-validate on the judged candidates only
        _, hybrid = ltr.judged_candidates(rows, train.qrels, hybrid)
        rows, blended = ltr.judged_candidates(rows, train.qrels, blended)
        if len(rows) < with_candidates:
            say(f"({with_candidates - len(rows)} queries without judged candidates left out)")
        say(
            "labels from a judge: also comparing models that leave out the relevant labels "
            f"a model fitted on the other queries ranks below the {ltr.DENOISE_TOP}th"
        )

    def ndcg(scores: Any) -> dict[str, float]:
        return {
            q: ranked_ndcg(ids, scores[q], train.qrels.get(q, {})) for q, (ids, _) in rows.items()
        }

    fused = ndcg(blended) if other_embedding(opts) else None
    which, default = pick_default(opts, ndcg(hybrid), fused, among, report)
    fit = ltr.options(
        rows,
        train.qrels,
        default=blended,
        seeds=range(opts.seeds),
        denoise_tops=(None, ltr.DENOISE_TOP) if judged else (None,),
    )
    started = time.perf_counter()
    describe = functools.partial(_describe_ltr, embedding=opts.embedding_model)
    found = cross_validated(
        opts, list(rows), fit, default, describe, report, refit=True, among=among
    )
    say(f"(cross-validation took {time.perf_counter() - started:.0f} s)")
    verdict, best = found.verdict, found.cross_validation.best
    name = written_name(opts, f"ltr-{train.name}")
    if not (verdict.adopt or opts.keep_learned):
        spec, comment = default_pipeline(opts, train, verdict, "learned ranker", which, name)
        path = write_pipeline(opts, f"{name}.toml", spec, comment, report)
        return TuneResult("ltr", path, spec, comment, False, which, found)
    setting, trees, blend, top = best
    names = ltr.feature_set(len(rows))
    began = time.perf_counter()
    booster = ltr.fit_option(rows, train.qrels, list(rows), best, features=names)
    if not ltr_limits.splits(booster):  # a constant score: the first stage's order kept
        why = (
            f"the learned ranker ({describe(best)}) made no split: every tree is a single "
            "leaf, so it scores every document alike and learned nothing from these "
            f"{len(rows)} queries' labels"
        )
        keep = keyword_flag("keep_learned", True)
        say(f"\n{why}; the default is written instead, even with {keep}")
        spec, _ = default_pipeline(opts, train, verdict, "learned ranker", which, name)
        comment = (
            f"Written by `rerankit tune --method ltr` on {train.name} {opts.train_split}: {why}."
        )
        path = write_pipeline(opts, f"{name}.toml", spec, comment, report)
        return TuneResult("ltr", path, spec, comment, False, which, found)
    model_report = {
        "setting": setting,
        "params": {k: booster.params[k] for k in ltr.SETTINGS[setting]},  # as fitted
        "trees": trees,
        "blend": blend,
        "denoise_top": top,
        "features": list(names),
        "queries": len(rows),
        "cross_validation": {
            "learned": verdict.learned,
            "default": verdict.default,
            "gain": verdict.gain,
            "noise": verdict.noise,
            "fold_gains": verdict.fold_gains,
        },
        "importance": ltr.importance(booster),
        "train_seconds": time.perf_counter() - began,
    }
    if opts.embedding_model:
        model_report["embedding_model"] = opts.embedding_model
    model_path = Path(opts.out or f"{name}.toml").with_suffix(".lgb.txt")
    ltr.save(booster, model_path, model_report)
    most = sorted(model_report["importance"].items(), key=lambda x: -x[1])[:6]
    say(f"feature importance (share of gain): {', '.join(f'{k} {v:.2f}' for k, v in most)}")
    say(f"wrote {model_path}\nwrote {model_path.with_suffix('.json')}")
    spec = _learned_spec(opts, name, model_path, blend)
    comment = (
        f"Trained by `rerankit tune --method ltr` on {train.name} {opts.train_split} "
        f"({len(rows)} queries): {describe(best)}; model: {model_path.name}; "
        f"{verdict.as_written()}."
    )
    path = write_pipeline(opts, f"{name}.toml", spec, comment, report)
    return TuneResult("ltr", path, spec, comment, True, which, found, model_path, model_report)


def _learned_spec(opts: Any, name: str, model_path: Path, blend: float) -> dict[str, Any]:
    """The learned pipeline: the model alone (``blend`` 1), or ``blend`` of it and the rest
    of the first stage + MiniLM fusion, min-max normalised."""
    # beside the pipeline file, so the two copied together still load (read_pipeline)
    scorer: dict[str, Any] = {"type": "learned", "model": model_path.name}
    if opts.embedding_model:
        scorer["embedding"] = opts.embedding_model
    if blend == 1:
        return {"name": name, "stages": [{"scorer": scorer}]}
    stage = fusion.pipeline_spec(
        fusion.DEFAULT_HYBRID,
        name=name,
        embedding_model=opts.embedding_model,
        embedding_max_length=opts.embedding_max_length,
    )["stages"][0]
    for entry in stage["scorers"]:
        entry["weight"] = round((1 - blend) * entry["weight"], 4)
    stage["scorers"].insert(0, {**scorer, "weight": blend})
    return {"name": name, "stages": [stage]}
