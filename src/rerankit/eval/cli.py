"""``rerankit eval`` and ``rerankit tune``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..cli import _positive_int
from ..errors import InputError
from .data import find_collections, load_beir
from .runner import (
    check_output_folder,
    describe_pipeline,
    evaluate_runs,
    first_stage,
    first_stage_run,
    format_summary,
    format_table,
    run_pipeline,
    run_pipeline_ray,
    write_outputs,
    write_summary,
)

__all__ = ["add_commands"]


def _progress(label: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return lambda items: tqdm(items, desc=label, unit="query", file=sys.stderr, leave=False)


def _limit(data, n: int | None):
    if n:
        data.queries = dict(list(data.queries.items())[:n])
    return data


def _pipelines(names: str, configs: list[str]) -> list[tuple[str, Any, Any]]:
    """(label, reranker, what it was declared as) for each named reranker and file."""
    from ..api import load

    out = []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        out.append((Path(name).stem if Path(name).suffix else name, load(name), name))
    for path in configs:
        out.append((Path(path).stem, load(Path(path)), Path(path)))
    return out


def _embedding_cache(args: argparse.Namespace) -> None:
    """Document embeddings cached on disk by default (read by every EmbeddingScorer built
    from here on), so every reranker of an evaluation, and the next evaluation, encode each
    document once: --embedding-cache, else $RERANKIT_EMBEDDING_CACHE, else
    embeddings.sqlite in the rerankit cache directory; --no-embedding-cache turns it off."""
    from ..cache import default_cache_dir

    if args.no_embedding_cache:
        os.environ["RERANKIT_EMBEDDING_CACHE"] = ""
    elif args.embedding_cache:
        os.environ["RERANKIT_EMBEDDING_CACHE"] = args.embedding_cache
    elif not os.environ.get("RERANKIT_EMBEDDING_CACHE"):
        path = default_cache_dir() / "embeddings.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        os.environ["RERANKIT_EMBEDDING_CACHE"] = str(path)


def _runs(
    args: argparse.Namespace, data: Any, cands: Any, pipelines: Any, *, texts_only: bool
) -> list[Any]:
    """The first stage's run, then each pipeline's over the same candidates (on Ray Data
    actors with ``--engine ray``)."""
    runs = [first_stage_run(cands)]
    for name, reranker, declared in pipelines:
        if getattr(args, "engine", "local") == "ray":
            runs.append(
                run_pipeline_ray(
                    name,
                    declared,
                    data,
                    cands,
                    first_stage_scores=not texts_only,
                    workers=args.workers,
                    address=args.address,
                )
            )
            continue
        runs.append(
            run_pipeline(
                name,
                reranker,
                data,
                cands,
                progress=_progress(name, not args.no_progress),
                first_stage_scores=not texts_only,
            )
        )
    return runs


def _write_pipeline(args: argparse.Namespace, default: str, spec: Any, comment: str) -> Path:
    """A pipeline file at ``--out`` (or ``default``), announced."""
    from .tune import to_toml

    out = Path(args.out or default)
    out.write_text(to_toml(spec, comment), encoding="utf-8")
    print(f"\nwrote {out}")
    return out


def _source_label(data: Any, source: str) -> str:
    """What the first stage of ``data`` is, in words (``auto`` resolved)."""
    if source == "auto":
        source = "run" if data.run_scores is not None else "bm25"
    if source == "bm25":
        return "BM25 over the corpus (k1=0.9, b=0.4)"
    return "the dataset's run" if source == "run" else source


def _labels(collections: list[tuple[Path, str]], split: str) -> list[str]:
    """A short, unique label per collection: its folder name, with its split when that is
    not the command's ``--split`` or when two share a name."""
    names = [p.name for p, _ in collections]
    return [
        name if s == split and names.count(name) == 1 else f"{name}@{s}"
        for name, (_, s) in zip(names, collections, strict=True)
    ]


def cmd_eval(args: argparse.Namespace) -> int:
    if args.engine == "ray" and not getattr(args, "verbose", 0):
        from ..batch import quiet_ray_logs

        quiet_ray_logs()
    collections = find_collections(args.data, args.split)
    if args.out:
        check_output_folder(args.out)  # before the work, not after it
    _embedding_cache(args)
    pipelines = _pipelines(args.rerankers, args.config or [])
    several = len(collections) > 1
    summary = []
    for label, (path, split) in zip(_labels(collections, args.split), collections, strict=True):
        data = _limit(load_beir(path, split), args.max_queries)
        cands = first_stage(data, args.first_stage, args.k)
        runs = _runs(args, data, cands, pipelines, texts_only=args.texts_only)
        rows = evaluate_runs(data, runs, args.k)
        source_label = _source_label(data, args.first_stage)
        print(
            f"{data.name}, {split} split, {len(data.queries)} queries; first stage: "
            f"{source_label}, top {args.k}"
            + ("; rerankers see texts only (no first-stage scores)" if args.texts_only else "")
            + "\n"
        )
        print(format_table(rows, args.k) + ("\n" if several else ""))
        meta = {
            "dataset": data.name,
            "split": split,
            "first_stage": source_label,
            "k": args.k,
            "queries": len(data.queries),
            "first_stage_scores_given": not args.texts_only,
            "pipelines": {name: describe_pipeline(r) for name, r, _ in pipelines},
        }
        if args.out:
            folder = Path(args.out) / label if several else Path(args.out)
            for written in write_outputs(folder, rows, runs, meta):
                print(f"wrote {written}", file=sys.stderr)
        summary.append({"collection": label, **meta, "rows": rows})
    if several:
        print(format_summary(summary))
        if args.out:
            written = write_summary(args.out, summary)
            print(f"wrote {written}", file=sys.stderr)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from ..scorers.embedding import EmbeddingScorer
    from . import tune

    strategies = [s.strip() for s in args.strategies.split(",")]
    unknown = sorted(set(strategies) - set(tune.STRATEGIES))
    if unknown or len(strategies) < 2:
        raise ValueError(
            f"--strategies: two or more of {', '.join(tune.STRATEGIES)}; unknown: {unknown}"
        )
    if args.train_split == args.test_split:
        raise ValueError(
            "--train-split and --test-split must differ: never tune on the split you report"
        )
    if args.folds < 2:
        raise ValueError(f"--folds must be at least 2, got {args.folds}")
    _embedding_cache(args)
    if args.embedding_model and Path(args.embedding_model).is_dir():  # usable from anywhere
        args.embedding_model = str(Path(args.embedding_model).resolve())
    model = (args.embedding_model,) if args.embedding_model else ()
    embedding = EmbeddingScorer(*model, max_length=args.embedding_max_length)
    train = _limit(load_beir(args.data, args.train_split), args.max_queries)
    test = _limit(load_beir(args.data, args.test_split), args.max_queries)
    shared = sorted(set(train.queries) & set(test.queries))
    if shared:
        raise InputError(
            f"--train-split {args.train_split} and --test-split {args.test_split} share "
            f"{len(shared)} queries (e.g. {shared[0]!r}): never tune on queries you report"
        )
    train_cands = first_stage(train, args.first_stage, args.k)
    if args.calibrate:
        out = _calibrate(args, train, train_cands, embedding)
        return _report_tuned(args, test, out, texts_only=True)
    if args.method == "ltr":
        out = _learn(args, train, train_cands, embedding)
        return _report_tuned(args, test, out, texts_only=False)
    matrices = tune.score_matrix(
        train, train_cands, embedding, progress=_progress("scoring train", not args.no_progress)
    )
    table = tune.fusion_table(train, matrices, strategies)
    fit = tune.fusion_options(table)
    default = table[tune.as_option(tune.DEFAULT_HYBRID)]
    print(f"{train.name}: fusions of {', '.join(strategies)} on the {args.train_split} split\n")
    cv, verdict = _cross_validated(args, list(matrices), fit, default, tune.describe_fusion)
    best = cv.best
    if verdict.adopt or args.keep_learned:
        spec = tune.pipeline_spec(
            tune.as_choice(best),
            name=f"tuned-{train.name}",
            embedding_model=args.embedding_model,
            embedding_max_length=args.embedding_max_length,
        )
        comment = (
            f"Tuned by `rerankit tune` on {train.name} {args.train_split} ({len(matrices)} "
            f"queries): {tune.describe_fusion(best)}; {verdict.describe()}."
        )
    else:
        spec, comment = _default_pipeline(args, train, verdict, "tuned fusion")
    out = _write_pipeline(args, f"tuned-{train.name}.toml", spec, comment)
    return _report_tuned(args, test, out, texts_only=False)


def _cross_validated(
    args: argparse.Namespace,
    qids: list[str],
    fit: Any,
    default: Any,
    describe: Any,
    refit: bool = False,
) -> tuple[Any, Any]:
    """Nested cross-validation of ``fit``'s options against the default's per-query nDCG@10:
    the options' table, the verdict (printed) and a learning curve (of choosing among the
    options on fewer queries, or with ``refit`` of refitting the best option on them)."""
    import statistics

    from . import crossval

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
    verdict = crossval.verdict(cv, default)
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
    if verdict.adopt:
        print(f"adopted: {describe(cv.best)} beats the default by more than the noise")
    else:
        print(
            "not adopted: the learned pipeline does not beat the default by more than the "
            "noise" + (" (--keep-learned: written anyway)" if args.keep_learned else "")
        )
    return cv, verdict


def _default_pipeline(
    args: argparse.Namespace, train: Any, verdict: Any, what: str
) -> tuple[dict[str, Any], str]:
    """The default pipeline (the ``hybrid``, or its fusion over ``--embedding-model``) to
    write when the learned one does not beat it, and the file's comment."""
    from . import tune

    comment = (
        f"Written by `rerankit tune` on {train.name} {args.train_split}: the {what} did not "
        f"beat the default by more than the noise ({verdict.describe()}), so this is the "
        "default pipeline; rerun with --keep-learned to write the learned one anyway."
    )
    if args.embedding_model or args.embedding_max_length:
        spec = tune.pipeline_spec(
            tune.DEFAULT_HYBRID,
            name="hybrid",
            embedding_model=args.embedding_model,
            embedding_max_length=args.embedding_max_length,
        )
        return spec, comment
    return {"name": "hybrid", "stages": [{"reranker": "hybrid"}]}, comment


def _calibrate(args: argparse.Namespace, train: Any, cands: Any, embedding: Any) -> Path:
    """Refit the calibrated hybrid on the training split (weights chosen by
    cross-validation); when that does not beat the default's order by more than the noise,
    keep the default's order and refit only its output calibration (the probabilities)."""
    from ..calibration import Calibration, expected_calibration_error, fit_calibration, sigmoid
    from ..rerankers.hybrid import HYBRID_CALIBRATION
    from . import tune

    read = tune.reading()  # documents read as the default hybrid reads them
    roles = read["roles"]
    matrices = tune.pairwise_matrix(
        train,
        cands,
        embedding,
        read=read,
        progress=_progress("scoring train", not args.no_progress),
    )
    default_cals = [Calibration.parse(HYBRID_CALIBRATION["calibration"][r]) for r in roles]
    default_weights = [HYBRID_CALIBRATION["weights"][r] for r in roles]
    default = {
        q: tune.ranked_ndcg(
            ids, tune.fused_logits(raw, default_cals, default_weights), train.qrels.get(q, {})
        )
        for q, (ids, raw) in matrices.items()
    }
    print(
        f"{train.name}: the calibrated hybrid's signals ({', '.join(roles)}) on "
        f"{len(matrices)} {args.train_split} queries\n"
    )

    def describe(weights: Any) -> str:
        return "weights " + ", ".join(f"{r} {w:.1f}" for r, w in zip(roles, weights, strict=True))

    fit = tune.calibration_options(train, matrices, roles)
    cv, verdict = _cross_validated(args, list(matrices), fit, default, describe)
    labels = tune.relevance_labels(train, matrices)
    y = np.concatenate([labels[q] for q in matrices])
    if verdict.adopt or args.keep_learned:
        found = tune.fit_calibrated(train, matrices, roles, weights=[cv.best])
        calibration, ece = found["calibration"], found["ece"]
        comment = (
            f"Calibrated by `rerankit tune --calibrate` on {train.name} {args.train_split} "
            f"({len(matrices)} queries): {describe(cv.best)}; {verdict.describe()}."
        )
    else:  # the default's order; probabilities fitted to these judgments
        fused = np.concatenate(
            [tune.fused_logits(raw, default_cals, default_weights) for _, raw in matrices.values()]
        )
        output = fit_calibration(fused, y)
        calibration = {
            "weights": {r: HYBRID_CALIBRATION["weights"][r] for r in roles},
            "calibration": {r: HYBRID_CALIBRATION["calibration"][r] for r in roles},
            "output_calibration": output.as_dict(),
        }
        ece = expected_calibration_error(sigmoid(output.logit(fused)), y)
        comment = (
            f"Written by `rerankit tune --calibrate` on {train.name} {args.train_split} "
            f"({len(matrices)} queries): refitted weights did not beat the default's order by "
            f"more than the noise ({verdict.describe()}), so this is the default hybrid's "
            "order with its probabilities (output calibration) fitted to these judgments."
        )
        print("kept the default's order; refitted its output calibration to your judgments")
    print(f"training ECE of the written pipeline's probabilities: {ece:.4f}")
    spec = tune.calibrated_spec(
        calibration,
        name=f"calibrated-{train.name}",
        read=read,
        embedding_model=args.embedding_model,
        embedding_max_length=args.embedding_max_length,
    )
    return _write_pipeline(args, f"calibrated-{train.name}.toml", spec, comment)


def _learn(args: argparse.Namespace, train: Any, cands: Any, embedding: Any) -> Path:
    """Learning to rank: LightGBM settings, trees and a blend with the default chosen by
    cross-validation; the learned pipeline written when it beats the default hybrid (given
    first-stage scores) by more than the noise, else the default."""
    import time

    from .. import learn
    from ..normalize import normalize_scores
    from . import tune

    signals = learn._Signals(embedding)
    start = time.perf_counter()
    items = [(q, c) for q, c in cands.items() if c]
    rows = {}
    iterator = _progress("features", not args.no_progress)
    for qid, ranked in iterator(items) if iterator else items:
        texts = [train.text(d) for d, _ in ranked]
        rows[qid] = (
            [d for d, _ in ranked],
            learn.features(signals, train.queries[qid], texts, [s for _, s in ranked]),
        )
    print(
        f"{train.name}: learning to rank on {len(rows)} {args.train_split} queries (features "
        f"built in {time.perf_counter() - start:.0f} s; {len(learn.feature_set(len(rows)))} "
        f"features, with {len(learn.SETTINGS)} LightGBM settings, trees "
        f"{'/'.join(map(str, learn.TREES))} and blends with the default compared)\n"
    )
    fs, cos = learn.FEATURES.index("first_stage"), learn.FEATURES.index("cosine")
    weights = tune.DEFAULT_HYBRID["weights"]
    default_scores = {  # the default hybrid given first-stage scores
        q: weights["first_stage"] * normalize_scores(x[:, fs], "min_max")
        + weights["embedding"] * normalize_scores(x[:, cos], "min_max")
        for q, (_, x) in rows.items()
    }
    default = {
        q: tune.ranked_ndcg(ids, default_scores[q], train.qrels.get(q, {}))
        for q, (ids, _) in rows.items()
    }
    fit = learn.options(rows, train.qrels, default=default_scores, seeds=range(args.seeds))

    def describe(option: Any) -> str:
        setting, trees, blend = option
        mix = "alone" if blend == 1 else f"blended {blend:.2f} with the default"
        return f"{setting}, {trees} trees, {mix}"

    started = time.perf_counter()
    cv, verdict = _cross_validated(args, list(rows), fit, default, describe, refit=True)
    print(f"(cross-validation took {time.perf_counter() - started:.0f} s)")
    if not (verdict.adopt or args.keep_learned):
        spec, comment = _default_pipeline(args, train, verdict, "learned ranker")
        return _write_pipeline(args, f"ltr-{train.name}.toml", spec, comment)
    setting, trees, blend = cv.best
    names = learn.feature_set(len(rows))
    began = time.perf_counter()
    booster = learn.fit(
        rows, train.qrels, list(rows), trees=trees, params=learn.SETTINGS[setting], features=names
    )
    report = {
        "setting": setting,
        "params": learn.SETTINGS[setting],
        "trees": trees,
        "blend": blend,
        "features": list(names),
        "queries": len(rows),
        "cross_validation": {
            "learned": verdict.learned,
            "default": verdict.default,
            "gain": verdict.gain,
            "noise": verdict.noise,
            "fold_gains": verdict.fold_gains,
        },
        "importance": learn.importance(booster),
        "train_seconds": time.perf_counter() - began,
    }
    if args.embedding_model:
        report["embedding_model"] = args.embedding_model
    default_name = f"ltr-{train.name}.toml"
    model_path = Path(args.out or default_name).with_suffix(".lgb.txt")
    learn.save(booster, model_path, report)
    top = sorted(report["importance"].items(), key=lambda x: -x[1])[:6]
    print(f"feature importance (share of gain): {', '.join(f'{k} {v:.2f}' for k, v in top)}")
    print(f"wrote {model_path}")
    learned: dict[str, Any] = {"type": "learned", "model": str(model_path.resolve())}
    if args.embedding_model:
        learned["embedding"] = args.embedding_model
    name = f"ltr-{train.name}"
    if blend == 1:
        spec = {"name": name, "stages": [{"scorer": learned}]}
    else:  # blend * learned + (1 - blend) * the default hybrid, min-max normalised
        stage = tune.pipeline_spec(
            tune.DEFAULT_HYBRID,
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
    return _write_pipeline(args, default_name, spec, comment)


def _report_tuned(args: argparse.Namespace, test: Any, out: Path, *, texts_only: bool) -> int:
    """Evaluate the written pipeline once on the test split, next to the default hybrid."""
    from ..api import load

    test_cands = first_stage(test, args.first_stage, args.k)
    pipelines = (("hybrid", load("hybrid"), "hybrid"), (out.stem, load(out), out))
    runs = _runs(args, test, test_cands, pipelines, texts_only=texts_only)
    rows = evaluate_runs(test, runs, args.k)
    print(f"\n{test.name}, {args.test_split} split, {len(test.queries)} queries:\n")
    print(format_table(rows, args.k))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ..train import embedding_pairs, fine_tune_embedding

    if args.split == "test":
        raise InputError("train on a training split; the test split is for reporting")
    data = load_beir(args.data, args.split)
    cands = first_stage(data, "bm25", args.k)
    rows = embedding_pairs(data, cands, max_pairs=args.max_pairs)
    summary = fine_tune_embedding(
        rows,
        args.out,
        model=args.model,
        epochs=args.epochs,
        batch_size=args.batch_size,
        progress=not args.no_progress,
        log=print,
    )
    losses = summary["losses"]
    trend = f"; training loss {losses[0]:.3f} -> {losses[-1]:.3f}" if len(losses) > 1 else ""
    print(
        f"{summary['steps']} steps in {summary['seconds'] / 60:.1f} min"
        f"{' (resumed)' if summary['resumed'] else ''}{trend}\nwrote {args.out}: load it with "
        f"EmbeddingScorer({str(args.out)!r}), or `rerankit export {args.out} --quantize int8`"
    )
    return 0


def add_commands(sub: Any) -> None:
    ev = sub.add_parser(
        "eval",
        help="evaluate rerankers on a BEIR-layout dataset",
        description="Rerank each query's first-stage candidates with every reranker given and "
        "report nDCG@10, MRR@10, Recall@10 and Recall@k (relevance >= 1 counts), latency and LLM "
        "usage, with a paired t-test against the first stage. Data: a folder with corpus.jsonl "
        "({_id, title, text}), queries.jsonl ({_id, text}), qrels/<split>.tsv (query-id, "
        "corpus-id, score) and optionally a TREC run file *.run.trec.",
    )
    ev.add_argument(
        "--data",
        required=True,
        action="append",
        help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv, or a folder of "
        "such folders; repeatable (a table per collection, then one row each and the mean); "
        "PATH@SPLIT evaluates that collection on another split",
    )
    ev.add_argument(
        "--split",
        default="test",
        help="qrels split to evaluate (default test); SPLIT:odd / SPLIT:even keep the "
        "queries at odd / even positions in queries.jsonl",
    )
    ev.add_argument(
        "--first-stage",
        default="auto",
        help="auto (the dataset's *.run.trec when it ships one, else bm25; the default), "
        "bm25 (over the corpus), run, or a TREC run file",
    )
    ev.add_argument(
        "--rerankers",
        default="bm25,embedding,hybrid",
        help="comma-separated names or pipeline files (default bm25,embedding,hybrid)",
    )
    ev.add_argument("--config", action="append", help="a pipeline file (repeatable)")
    ev.add_argument(
        "--k", type=_positive_int, default=100, help="candidates per query (default 100)"
    )
    ev.add_argument("--out", help="folder for results.json, TREC runs and a chart")
    ev.add_argument(
        "--max-queries", type=_positive_int, default=None, help="evaluate the first N only"
    )
    ev.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    ev.add_argument(
        "--texts-only",
        action="store_true",
        help="give the rerankers the candidates' texts without their first-stage scores "
        "(as a Cohere-style request would)",
    )
    ev.add_argument(
        "--embedding-cache",
        default=None,
        help="SQLite file caching document embeddings across runs (default: "
        "$RERANKIT_EMBEDDING_CACHE, else embeddings.sqlite in the rerankit cache directory)",
    )
    ev.add_argument(
        "--no-embedding-cache", action="store_true", help="encode documents afresh, keep nothing"
    )
    ev.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: rerank in this process (default); ray: on Ray Data actors (extra ray; "
        "for large evaluations, see `rerankit batch`)",
    )
    ev.add_argument("--workers", type=_positive_int, default=1, help="ray: actors (default 1)")
    ev.add_argument("--address", default=None, help="ray: cluster address (default: local)")
    ev.set_defaults(func=cmd_eval)

    tu = sub.add_parser(
        "tune",
        help="fit a pipeline to your judgments, keeping it only when it beats the default",
        description="Fit a pipeline on the training split: fusion weights of the first-stage "
        "score, BM25 over the candidates and the embedding (weighted min-max, weighted z-score "
        "and RRF; a 0.1 grid), or with --calibrate the calibrated hybrid's weights, or with "
        "--method ltr a LightGBM ranker. Settings are chosen by k-fold cross-validation over "
        "the training queries (folds by query, nested so the estimate is honest) and compared "
        "with the default on the same folds; when the learned pipeline does not beat the "
        "default by more than the noise of that comparison, the default is written instead "
        "(--keep-learned writes the learned one anyway). A learning curve says whether more "
        "judgments would help. The written pipeline is then reported once on the test split, "
        "which never informs the choice.",
    )
    tu.add_argument("--data", required=True, help="BEIR-layout folder (see `rerankit eval -h`)")
    tu.add_argument(
        "--train-split",
        default="train",
        help="split to choose on (default train); SPLIT:odd / SPLIT:even for half of a split's "
        "queries (by position in queries.jsonl)",
    )
    tu.add_argument(
        "--test-split",
        default="test",
        help="split to report on (default test); it may not share a query with the training split",
    )
    tu.add_argument(
        "--first-stage",
        default="auto",
        help="auto (the dataset's run when it ships one, else bm25), bm25, run, or a TREC run",
    )
    tu.add_argument(
        "--k", type=_positive_int, default=100, help="candidates per query (default 100)"
    )
    tu.add_argument(
        "--strategies",
        default="first_stage,bm25,embedding",
        help="signals to fuse, two or more of first_stage, bm25, embedding",
    )
    tu.add_argument("--out", help="pipeline file to write (default tuned-<dataset>.toml)")
    tu.add_argument(
        "--embedding-cache",
        default=None,
        help="SQLite file caching document embeddings across runs (default: "
        "$RERANKIT_EMBEDDING_CACHE, else embeddings.sqlite in the rerankit cache directory)",
    )
    tu.add_argument(
        "--no-embedding-cache", action="store_true", help="encode documents afresh, keep nothing"
    )
    tu.add_argument(
        "--embedding-model",
        default=None,
        help="embedding model (hub id or folder, e.g. from `rerankit train embedding`) for "
        "the fusion, calibration or features; written into the pipeline file "
        "(default: the bundled all-MiniLM-L6-v2)",
    )
    tu.add_argument(
        "--embedding-max-length",
        type=int,
        default=None,
        help="tokens the embedding model reads per document (MiniLM: 256 unless set)",
    )
    tu.add_argument(
        "--method",
        choices=("fusion", "ltr"),
        default="fusion",
        help="fusion: search fusion weights (default); ltr: train a LightGBM ranker over "
        "rerankit's signals (extra learn)",
    )
    tu.add_argument(
        "--seeds",
        type=_positive_int,
        default=1,
        help="ltr: compare the settings by the mean over this many LightGBM seeds (default 1)",
    )
    tu.add_argument(
        "--folds",
        type=_positive_int,
        default=5,
        help="cross-validation folds over the training queries (default 5; fewer with "
        "fewer than two queries per fold)",
    )
    tu.add_argument(
        "--keep-learned",
        action="store_true",
        help="write the learned pipeline even when it does not beat the default by more "
        "than the cross-validation noise (by default the default pipeline is written then)",
    )
    tu.add_argument(
        "--calibrate",
        action="store_true",
        help="instead of searching fusions, refit the calibrated texts-only hybrid (scores "
        "that estimate P(relevant) per pair) on the training split; when that does not order "
        "better than the default, keep the default's order and refit only its probabilities",
    )
    tu.add_argument(
        "--max-queries", type=_positive_int, default=None, help="use the first N queries only"
    )
    tu.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tu.set_defaults(func=cmd_tune)

    tr = sub.add_parser(
        "train",
        help="fine-tune the embedding model on your judgments",
        description="Fine-tune a sentence-transformers embedding model on (query, relevant "
        "document, hard negative) triples from a training split: the hard negative is the "
        "best BM25 candidate not judged relevant. sentence-transformers' trainer with "
        "MultipleNegativesRankingLoss; checkpoints under OUT/checkpoints, and a rerun resumes "
        "from them (extras torch and train).",
    )
    tr.add_argument("what", choices=("embedding",), help="what to train")
    tr.add_argument("--data", required=True, help="BEIR-layout folder")
    tr.add_argument("--split", default="train", help="the training split (default train)")
    tr.add_argument("--out", required=True, help="folder for the fine-tuned model")
    tr.add_argument(
        "--model", default="all-MiniLM-L6-v2", help="model to start from (the bundled MiniLM)"
    )
    tr.add_argument("--max-pairs", type=_positive_int, default=None, help="use at most N pairs")
    tr.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (1)")
    tr.add_argument("--batch-size", type=_positive_int, default=16, help="pairs per step (16)")
    tr.add_argument("--k", type=_positive_int, default=100, help="BM25 candidates for negatives")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tr.set_defaults(func=cmd_train)
