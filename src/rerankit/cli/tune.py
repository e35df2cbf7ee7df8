"""``rerankit tune``: a pipeline fitted to the training split by cross-validation, written
only when it beats the default (else the default, with the reason), and reported once on
the test split."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..api import load
from ..calibration import Calibration, expected_calibration_error, sigmoid
from ..errors import InputError
from ..eval import metrics
from ..eval.compare import format_against
from ..eval.first_stage import first_stage
from ..eval.runner import evaluate_runs, format_table
from ..normalize import normalize_scores
from ..scorers import learned as learned_scorer
from ..scorers.embedding import EmbeddingScorer
from ..scorers.recipe import HYBRID_CALIBRATION
from ..training import calibrated, crossval, ltr
from ..training import fusion_search as fusion
from .eval_support import (
    default_hybrid_scores,
    feature_rows,
    pipeline_runs,
    progress_bar,
    read_collection,
    use_embedding_cache,
)
from .tune_support import (
    adoption_margin,
    check_out,
    check_train_split,
    cross_fit_routes,
    default_pipeline,
    judged_only,
    per_fold,
    pick_default,
    unseen_queries,
    write_pipeline,
)

__all__ = ["cmd_tune"]


def cmd_tune(args: argparse.Namespace) -> int:

    strategies = [s.strip() for s in args.strategies.split(",")]
    unknown = sorted(set(strategies) - set(fusion.STRATEGIES))
    if unknown or len(strategies) < 2:
        raise ValueError(
            f"--strategies: two or more of {', '.join(fusion.STRATEGIES)}; unknown: {unknown}"
        )
    if args.train_split == args.test_split:
        raise ValueError(
            "--train-split and --test-split must differ: never tune on the split you report"
        )
    if args.folds < 3:
        raise ValueError(
            f"--folds must be at least 3 (the cross-validation is nested), got {args.folds}"
        )
    check_out(args.out)
    use_embedding_cache(args)
    if args.embedding_model and Path(args.embedding_model).is_dir():  # usable from anywhere
        args.embedding_model = str(Path(args.embedding_model).resolve())
    model = (args.embedding_model,) if args.embedding_model else ()
    embedding = EmbeddingScorer(*model, max_length=args.embedding_max_length)
    check_train_split(Path(args.data), args.train_split)
    train = read_collection(args.data, args.train_split, args.max_queries)
    test_data = Path(args.test_data or args.data)
    test = None
    if (test_data / "qrels" / f"{args.test_split.split(':')[0]}.tsv").is_file():
        test = read_collection(test_data, args.test_split, args.max_queries)
    elif args.test_data:
        raise InputError(f"{test_data}: no qrels/{args.test_split}.tsv to report on")
    shared = sorted(set(train.queries) & set(test.queries)) if test is not None else []
    if shared:
        raise InputError(
            f"--train-split {args.train_split} and --test-split {args.test_split} share "
            f"{len(shared)} queries (e.g. {shared[0]!r}): never tune on queries you report"
        )
    train_cands = first_stage(train, args.first_stage, args.k)
    routes = cross_fit_routes(args, train_cands)  # fold models that never saw each query
    unseen = None if routes else unseen_queries(args, list(train.qrels))
    if args.calibrate:
        out = _calibrate(args, train, train_cands, embedding, routes, unseen)
        return _report_tuned(args, test, out, texts_only=True)
    if args.method == "ltr":
        out = _learn(args, train, train_cands, embedding, routes, unseen)
        return _report_tuned(args, test, out, texts_only=False)
    bar = progress_bar("scoring train", not args.no_progress)
    matrices = per_fold(
        lambda c, e: fusion.score_matrix(train, c, e, progress=bar),
        train_cands,
        routes,
        embedding,
        args.embedding_max_length,
    )
    table = fusion.fusion_table(train, matrices, strategies)
    fit = fusion.fusion_options(table)
    which, default = _default_ndcg(args, train, train_cands, table, unseen)
    print(f"{train.name}: fusions of {', '.join(strategies)} on the {args.train_split} split\n")
    cv, verdict = _cross_validated(
        args, list(matrices), fit, default, fusion.describe_fusion, among=unseen
    )
    best = cv.best
    if verdict.adopt or args.keep_learned:
        spec = fusion.pipeline_spec(
            fusion.as_choice(best),
            name=f"tuned-{train.name}",
            embedding_model=args.embedding_model,
            embedding_max_length=args.embedding_max_length,
        )
        comment = (
            f"Tuned by `rerankit tune` on {train.name} {args.train_split} ({len(matrices)} "
            f"queries): {fusion.describe_fusion(best)}; {verdict.describe()}."
        )
    else:
        spec, comment = default_pipeline(args, train, verdict, "tuned fusion", which)
    out = write_pipeline(args, f"tuned-{train.name}.toml", spec, comment)
    return _report_tuned(args, test, out, texts_only=False)


def _cross_validated(
    args: argparse.Namespace,
    qids: list[str],
    fit: Any,
    default: Any,
    describe: Any,
    refit: bool = False,
    among: set[str] | None = None,
) -> tuple[Any, Any]:
    """Nested cross-validation of ``fit``'s options against the default's per-query nDCG@10:
    the options' table, the verdict (printed; on the queries ``among`` when given) and a
    learning curve (of choosing among the options on fewer queries, or with ``refit`` of
    refitting the best option on them)."""

    margin = adoption_margin(args)
    cv = crossval.cross_validate(qids, fit, k=args.folds)
    k = len(cv.chosen_by_fold)
    print(
        f"options by cross-validated nDCG@10 x 100 over {len(qids)} training queries "
        f"({k} folds; mean, spread of the fold means), best 5:"
    )
    for option in sorted(cv.options, key=lambda o: -cv.options[o])[:5]:
        spread = statistics.pstdev(cv.fold_means[option])
        print(f"  {100 * cv.options[option]:6.2f} ± {100 * spread:4.2f}  {describe(option)}")
    print(f"  {100 * statistics.fmean(default[q] for q in qids):6.2f}         the default")
    chosen = sorted({describe(o) for o in cv.chosen_by_fold})
    print("\nchosen by the other folds, for each fold: " + "; ".join(chosen))
    verdict = crossval.verdict(cv, default, margin=margin, among=among)
    print(verdict.describe())
    points = crossval.learning_curve(cv, fit, cv.best if refit else None)
    print(
        "\nlearning curve: cross-validated nDCG@10 x 100 by training queries per fit "
        f"(the default: {100 * verdict.default:.2f}):"
    )
    for n, value in points:
        print(f"  {n:6d}  {100 * value:6.2f}")
    if len(points) > 1 and points[-1][1] - points[-2][1] > verdict.noise / 2:
        print("  still rising at the end: more judged queries would likely help")
    print()
    times = "" if margin == 1 else f"{margin:g} x "
    if verdict.adopt:
        print(f"adopted: {describe(cv.best)} beats the default by more than {times}the noise")
    else:
        print(
            f"not adopted: the learned pipeline does not beat the default by more than {times}"
            "the noise" + (" (--keep-learned: written anyway)" if args.keep_learned else "")
        )
    return cv, verdict


def _other_embedding(args: argparse.Namespace) -> bool:
    """Whether ``--embedding-model`` or ``--embedding-max-length`` asks for another embedding
    than the bundled MiniLM as the hybrid reads it: then the hybrid's min-max fusion over
    that embedding (:data:`~rerankit.training.fusion_search.DEFAULT_HYBRID`) is a candidate default
    too (:func:`~rerankit.cli.tune_support.pick_default`)."""
    return bool(args.embedding_model or args.embedding_max_length)


def _default_ndcg(
    args: argparse.Namespace, train: Any, cands: Any, table: Any, among: set[str] | None
) -> tuple[str, dict[str, float]]:
    """Which default pipeline ``tune`` would write (chosen on the queries ``among`` when
    given), and each training query's nDCG@10 under it."""
    fused = table[fusion.as_option(fusion.DEFAULT_HYBRID)]
    scores = default_hybrid_scores(train, cands, progress=not args.no_progress)
    hybrid = {
        q: metrics.ranked_ndcg([d for d, _ in cands[q]], scores[q], train.qrels.get(q, {}))
        for q in fused
    }
    return pick_default(args, hybrid, fused if _other_embedding(args) else None, among)


def _calibrate(
    args: argparse.Namespace,
    train: Any,
    cands: Any,
    embedding: Any,
    routes: dict[str, str] | None,
    among: set[str] | None,
) -> Path:
    """Refit the calibrated hybrid on the training split (weights chosen by
    cross-validation); when that does not beat the default's order by more than the margin
    times the noise, keep the default's order and refit only its output calibration (the
    probabilities), when a refit predicts held-out queries better (cross-validated log loss)
    than the default's. ``routes``: each query's fold model, when ``embedding`` was
    cross-fitted (:func:`~rerankit.cli.tune_support.cross_fit_routes`); the verdict on
    ``among``."""

    read = calibrated.reading()  # documents read as the default hybrid reads them
    roles = read["roles"]
    bar = progress_bar("scoring train", not args.no_progress)
    matrices = per_fold(
        lambda c, e: calibrated.pairwise_matrix(train, c, e, read=read, progress=bar),
        cands,
        routes,
        embedding,
        args.embedding_max_length,
    )
    default_cals = [Calibration.parse(HYBRID_CALIBRATION["calibration"][r]) for r in roles]
    default_weights = [HYBRID_CALIBRATION["weights"][r] for r in roles]
    default = {
        q: metrics.ranked_ndcg(
            ids, calibrated.fused_logits(raw, default_cals, default_weights), train.qrels.get(q, {})
        )
        for q, (ids, raw) in matrices.items()
    }
    print(
        f"{train.name}: the calibrated hybrid's signals ({', '.join(roles)}) on "
        f"{len(matrices)} {args.train_split} queries\n"
    )

    def describe(weights: Any) -> str:
        return "weights " + ", ".join(f"{r} {w:.1f}" for r, w in zip(roles, weights, strict=True))

    fit = calibrated.calibration_options(train, matrices, roles)
    cv, verdict = _cross_validated(args, list(matrices), fit, default, describe, among=among)
    labels = calibrated.relevance_labels(train, matrices)
    y = np.concatenate([labels[q] for q in matrices])
    if verdict.adopt or args.keep_learned:
        found = calibrated.fit_calibrated(train, matrices, roles, weights=[cv.best])
        calibration, ece = found["calibration"], found["ece"]
        comment = (
            f"Calibrated by `rerankit tune --calibrate` on {train.name} {args.train_split} "
            f"({len(matrices)} queries): {describe(cv.best)}; {verdict.describe()}."
        )
    else:  # the default's order; its probabilities refitted where that generalises
        logits = {
            q: calibrated.fused_logits(raw, default_cals, default_weights)
            for q, (_, raw) in matrices.items()
        }
        default_output = Calibration.parse(HYBRID_CALIBRATION["output_calibration"])
        output, refit_loss, default_loss = calibrated.refit_output(
            logits, labels, default_output, args.folds
        )
        calibration = {
            k: {r: HYBRID_CALIBRATION[k][r] for r in roles} for k in ("weights", "calibration")
        }
        calibration["output_calibration"] = output.as_dict()
        fused = np.concatenate(list(logits.values()))
        ece = expected_calibration_error(sigmoid(output.logit(fused)), y)
        probabilities = (
            "probabilities refitted to these judgments"
            if output is not default_output
            else "own probabilities (refitted ones predicted held-out queries worse)"
        )
        comment = (
            f"Written by `rerankit tune --calibrate` on {train.name} {args.train_split} "
            f"({len(matrices)} queries): refitted weights did not beat the default's order by "
            f"more than {verdict.margin:g} x the noise ({verdict.describe()}), so this is the "
            f"default hybrid's order with its {probabilities}."
        )
        print(
            f"cross-validated log loss of the probabilities (folds by query): refitted "
            f"{refit_loss:.4f}, the default's {default_loss:.4f}\nkept the default's order "
            f"with its {probabilities}"
        )
    print(f"training ECE of the written pipeline's probabilities: {ece:.4f}")
    spec = calibrated.calibrated_spec(
        calibration,
        name=f"calibrated-{train.name}",
        read=read,
        embedding_model=args.embedding_model,
        embedding_max_length=args.embedding_max_length,
    )
    return write_pipeline(args, f"calibrated-{train.name}.toml", spec, comment)


def _learn(
    args: argparse.Namespace,
    train: Any,
    cands: Any,
    embedding: Any,
    routes: dict[str, str] | None,
    among: set[str] | None,
) -> Path:
    """Learning to rank: LightGBM settings, trees and a blend with the default chosen by
    cross-validation; the learned pipeline written when it beats the default hybrid (given
    first-stage scores) by more than the margin times the noise, else the default.
    ``routes`` and ``among`` as for ``_calibrate``."""

    start = time.perf_counter()
    rows = per_fold(
        lambda c, e: feature_rows(train, c, e, progress=not args.no_progress),
        cands,
        routes,
        embedding,
        args.embedding_max_length,
    )
    with_candidates = len(rows)
    print(
        f"{train.name}: learning to rank on {len(rows)} {args.train_split} queries (features "
        f"built in {time.perf_counter() - start:.0f} s; {len(ltr.feature_set(len(rows)))} "
        f"features, with {len(ltr.SETTINGS)} LightGBM settings, trees "
        f"{'/'.join(map(str, ltr.TREES))} and blends with the default compared)\n"
    )
    fs, cos = learned_scorer.FEATURES.index("first_stage"), learned_scorer.FEATURES.index("cosine")
    weights = fusion.DEFAULT_HYBRID["weights"]
    blended = {  # what a learned model is blended with: first stage and MiniLM, min-max
        q: weights["first_stage"] * normalize_scores(x[:, fs], "min_max")
        + weights["embedding"] * normalize_scores(x[:, cos], "min_max")
        for q, (_, x) in rows.items()
    }
    hybrid = default_hybrid_scores(train, cands, progress=not args.no_progress)
    judged = judged_only(args)
    if judged:  # learn and cross-validate on the judged candidates only
        _, hybrid = ltr.judged_candidates(rows, train.qrels, hybrid)
        rows, blended = ltr.judged_candidates(rows, train.qrels, blended)
        if len(rows) < with_candidates:
            print(f"({with_candidates - len(rows)} queries without judged candidates left out)")
        print(
            "labels from a judge: also comparing models that leave out the relevant labels "
            f"a model fitted on the other queries ranks below the {ltr.DENOISE_TOP}th"
        )

    def ndcg(scores: Any) -> dict[str, float]:
        return {
            q: metrics.ranked_ndcg(ids, scores[q], train.qrels.get(q, {}))
            for q, (ids, _) in rows.items()
        }

    which, default = pick_default(
        args, ndcg(hybrid), ndcg(blended) if _other_embedding(args) else None, among
    )
    fit = ltr.options(
        rows,
        train.qrels,
        default=blended,
        seeds=range(args.seeds),
        denoise_tops=(None, ltr.DENOISE_TOP) if judged else (None,),
    )

    def describe(option: Any) -> str:
        setting, trees, blend, top = option
        mix = "alone" if blend == 1 else f"blended {blend:.2f} with first stage + MiniLM"
        cleaned = "" if top is None else f", judged-relevant ranked below {top} left out"
        return f"{setting}, {trees} trees, {mix}{cleaned}"

    started = time.perf_counter()
    cv, verdict = _cross_validated(
        args, list(rows), fit, default, describe, refit=True, among=among
    )
    print(f"(cross-validation took {time.perf_counter() - started:.0f} s)")
    if not (verdict.adopt or args.keep_learned):
        spec, comment = default_pipeline(args, train, verdict, "learned ranker", which)
        return write_pipeline(args, f"ltr-{train.name}.toml", spec, comment)
    setting, trees, blend, top = cv.best
    names = ltr.feature_set(len(rows))
    began = time.perf_counter()
    booster = ltr.fit_option(rows, train.qrels, list(rows), cv.best, features=names)
    report = {
        "setting": setting,
        "params": ltr.SETTINGS[setting],
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
    if args.embedding_model:
        report["embedding_model"] = args.embedding_model
    default_name = f"ltr-{train.name}.toml"
    model_path = Path(args.out or default_name).with_suffix(".lgb.txt")
    ltr.save(booster, model_path, report)
    top = sorted(report["importance"].items(), key=lambda x: -x[1])[:6]
    print(f"feature importance (share of gain): {', '.join(f'{k} {v:.2f}' for k, v in top)}")
    print(f"wrote {model_path}")
    learned: dict[str, Any] = {"type": "learned", "model": str(model_path.resolve())}
    if args.embedding_model:
        learned["embedding"] = args.embedding_model
    name = f"ltr-{train.name}"
    if blend == 1:
        spec = {"name": name, "stages": [{"scorer": learned}]}
    else:  # blend * learned + (1 - blend) * (first stage + MiniLM), min-max normalised
        stage = fusion.pipeline_spec(
            fusion.DEFAULT_HYBRID,
            name=name,
            embedding_model=args.embedding_model,
            embedding_max_length=args.embedding_max_length,
        )["stages"][0]
        for entry in stage["scorers"]:
            entry["weight"] = round((1 - blend) * entry["weight"], 4)
        stage["scorers"].insert(0, {**learned, "weight": blend})
        spec = {"name": name, "stages": [stage]}
    comment = (
        f"Trained by `rerankit tune --method ltr` on {train.name} {args.train_split} "
        f"({len(rows)} queries): {describe(cv.best)}; model: {model_path.name}; "
        f"{verdict.describe()}."
    )
    return write_pipeline(args, default_name, spec, comment)


def _report_tuned(args: argparse.Namespace, test: Any, out: Path, *, texts_only: bool) -> int:
    """Evaluate the written pipeline once on the test split, next to the default hybrid,
    with its paired difference from the default (said and skipped when there is no test
    split, e.g. for labels made by a judge)."""
    if test is None:
        print(
            f"\nno {args.test_split} split in {args.data}: {out} is not reported on held-out "
            "queries (pass --test-data FOLDER with judged queries to report on)"
        )
        return 0

    test_cands = first_stage(test, args.first_stage, args.k)
    pipelines = (("hybrid", load("hybrid"), "hybrid"), (out.stem, load(out), out))
    runs = pipeline_runs(args, test, test_cands, pipelines, texts_only=texts_only)
    rows = evaluate_runs(test, runs, args.k)
    print(f"\n{test.name}, {args.test_split} split, {len(test.queries)} queries:\n")
    print(format_table(rows, args.k))
    print("\n" + format_against(rows, "hybrid"))
    return 0
