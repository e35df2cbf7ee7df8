"""``rerankit eval`` and ``rerankit tune``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..cli import _positive_int
from ..errors import InputError
from .data import load_beir
from .runner import (
    check_output_folder,
    describe_pipeline,
    evaluate_runs,
    first_stage,
    first_stage_run,
    format_table,
    run_pipeline,
    run_pipeline_ray,
    write_outputs,
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


def cmd_eval(args: argparse.Namespace) -> int:
    if args.engine == "ray" and not getattr(args, "verbose", 0):
        from ..batch import quiet_ray_logs

        quiet_ray_logs()
    if args.out:
        check_output_folder(args.out)  # before the work, not after it
    _embedding_cache(args)
    data = _limit(load_beir(args.data, args.split), args.max_queries)
    source = args.first_stage
    cands = first_stage(data, source, args.k)
    pipelines = _pipelines(args.rerankers, args.config or [])
    runs = _runs(args, data, cands, pipelines, texts_only=args.texts_only)
    rows = evaluate_runs(data, runs, args.k)
    source_label = "BM25 over the corpus (k1=0.9, b=0.4)" if source == "bm25" else source
    print(
        f"{data.name}, {args.split} split, {len(data.queries)} queries; first stage: "
        f"{source_label}, top {args.k}"
        + ("; rerankers see texts only (no first-stage scores)" if args.texts_only else "")
        + "\n"
    )
    print(format_table(rows, args.k))
    if args.out:
        meta = {
            "dataset": data.name,
            "split": args.split,
            "first_stage": source_label,
            "k": args.k,
            "queries": len(data.queries),
            "first_stage_scores_given": not args.texts_only,
            "pipelines": {name: describe_pipeline(r) for name, r, _ in pipelines},
        }
        for path in write_outputs(args.out, rows, runs, meta):
            print(f"wrote {path}", file=sys.stderr)
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
    _embedding_cache(args)
    if args.embedding_model and Path(args.embedding_model).is_dir():  # usable from anywhere
        args.embedding_model = str(Path(args.embedding_model).resolve())
    model = (args.embedding_model,) if args.embedding_model else ()
    embedding = EmbeddingScorer(*model, max_length=args.embedding_max_length)
    train = _limit(load_beir(args.data, args.train_split), args.max_queries)
    train_cands = first_stage(train, args.first_stage, args.k)
    if args.calibrate:
        out = _calibrate(args, train, train_cands, embedding)
        return _report_tuned(args, out, texts_only=True)
    if args.method == "ltr":
        out = _learn(args, train, train_cands, embedding)
        return _report_tuned(args, out, texts_only=False)
    matrices = tune.score_matrix(
        train, train_cands, embedding, progress=_progress("scoring train", not args.no_progress)
    )
    check = tune.held_out(list(matrices)) if len(matrices) >= 25 else set()
    fit = {q: m for q, m in matrices.items() if q not in check}
    results = tune.search(train, fit, strategies)
    print(
        f"{train.name}: {len(fit)} {args.train_split} queries searched"
        + (f", {len(check)} held out" if check else "")
        + "; best fusions (nDCG@10 x 100 on the searched queries):\n"
    )
    for r in results[:5]:
        weights = ", ".join(f"{k} {v:.1f}" for k, v in r["weights"].items())
        norm = f" + {r['normalization']}" if r["normalization"] else ""
        print(f"  {100 * r['ndcg@10']:6.2f}  {r['method']}{norm}: {weights}")
    best = results[0]
    if check:
        held = {q: matrices[q] for q in check}
        tuned_score = tune.evaluate_choice(train, held, best)
        default_score = tune.evaluate_choice(train, held, tune.DEFAULT_HYBRID)
        print(
            f"\nheld-out {args.train_split} queries ({len(check)}): tuned "
            f"{100 * tuned_score:.2f}, default hybrid {100 * default_score:.2f}"
        )
        if tuned_score < default_score:
            print(
                "warning: the tuned fusion is worse than the default hybrid on the held-out "
                "training queries; the default is likely the better choice for this data"
            )
    spec = tune.pipeline_spec(
        best,
        name=f"tuned-{train.name}",
        embedding_model=args.embedding_model,
        embedding_max_length=args.embedding_max_length,
    )
    comment = (
        f"Tuned by `rerankit tune` on {train.name} {args.train_split} "
        f"({len(matrices)} queries, nDCG@10 {100 * best['ndcg@10']:.2f})."
    )
    out = _write_pipeline(args, f"tuned-{train.name}.toml", spec, comment)
    return _report_tuned(args, out, texts_only=False)


def _calibrate(args: argparse.Namespace, train: Any, cands: Any, embedding: Any) -> Path:
    """Refit the calibrated hybrid on the training split; write its pipeline file."""
    from ..rerankers.hybrid import HYBRID_CALIBRATION
    from . import tune

    words = HYBRID_CALIBRATION["passage_words"]  # documents read as the default hybrid does
    matrices = tune.pairwise_matrix(
        train,
        cands,
        embedding,
        passage_words=words,
        progress=_progress("scoring train", not args.no_progress),
    )
    fit = tune.fit_calibrated(train, matrices)
    print(
        f"{train.name}: {len(matrices)} {args.train_split} queries, {fit['pairs']} pairs; "
        "nDCG@10 x 100 on the training split by BM25's weight in logit space:\n"
    )
    for w, score in fit["ndcg_by_weight"].items():
        print(f"  {100 * score:6.2f}  bm25_background {w:.1f}, embedding {1 - w:.1f}")
    print(f"\ntraining ECE of the calibrated scores: {fit['ece']:.4f}")
    spec = tune.calibrated_spec(
        fit["calibration"],
        name=f"calibrated-{train.name}",
        embedding_model=args.embedding_model,
        embedding_max_length=args.embedding_max_length,
        passage_words=words,
    )
    comment = (
        f"Calibrated by `rerankit tune --calibrate` on {train.name} {args.train_split} "
        f"({len(matrices)} queries): scores estimate P(relevant) per (query, document)."
    )
    return _write_pipeline(args, f"calibrated-{train.name}.toml", spec, comment)


def _learn(args: argparse.Namespace, train: Any, cands: Any, embedding: Any) -> Path:
    """Train the LightGBM ranker (``--seeds`` times; the first seed's model is written)."""
    import time

    from .. import learn
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
    built = time.perf_counter() - start
    valid = tune.held_out(list(rows))
    print(
        f"{train.name}: {len(rows)} {args.train_split} queries ({len(valid)} held out for "
        f"early stopping); features built in {built:.0f} s\n"
    )
    params, table = learn.choose(rows, train.qrels, valid=valid, seeds=range(args.seeds))
    print("LightGBM settings by held-out nDCG@10 (mean over the seeds):")
    for entry, score in table:
        print(f"  {100 * score:6.2f}  {entry}{'  (chosen)' if entry == params else ''}")
    print()
    default = f"ltr-{train.name}.toml"
    model_path = Path(args.out or default).with_suffix(".lgb.txt")
    for seed in range(args.seeds):
        began = time.perf_counter()
        booster, report = learn.train(rows, train.qrels, valid=valid, seed=seed, params=params)
        report["train_seconds"] = time.perf_counter() - began
        if args.embedding_model:
            report["embedding_model"] = args.embedding_model
        print(
            f"  seed {seed}: {report['best_iteration']} trees, held-out nDCG@10 "
            f"{100 * report['valid_ndcg@10']:.2f}, trained in {report['train_seconds']:.0f} s"
        )
        if seed == 0:
            learn.save(booster, model_path, report)
            top = sorted(report["importance"].items(), key=lambda x: -x[1])[:6]
            importance = ", ".join(f"{k} {v:.2f}" for k, v in top)
    print(f"\nfeature importance (share of gain, seed 0): {importance}")
    spec = {"name": f"ltr-{train.name}", "stages": [{"scorer": {"type": "learned"}}]}
    spec["stages"][0]["scorer"]["model"] = str(model_path.resolve())
    if args.embedding_model:
        spec["stages"][0]["scorer"]["embedding"] = args.embedding_model
    comment = (
        f"Trained by `rerankit tune --method ltr` on {train.name} {args.train_split} "
        f"({len(rows)} queries); model: {model_path.name}."
    )
    print(f"wrote {model_path}")
    return _write_pipeline(args, default, spec, comment)


def _report_tuned(args: argparse.Namespace, out: Path, *, texts_only: bool) -> int:
    """Evaluate the written pipeline once on the test split, next to the default hybrid."""
    from ..api import load

    test = _limit(load_beir(args.data, args.test_split), args.max_queries)
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
        "--data", required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv"
    )
    ev.add_argument("--split", default="test", help="qrels split to evaluate (default test)")
    ev.add_argument(
        "--first-stage",
        default="bm25",
        help="bm25 (over the corpus), run (the dataset's *.run.trec), or a TREC run",
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
        help="choose fusion weights on a training split",
        description="Score every fusion of the first-stage score, BM25 over the candidates and "
        "the embedding (weighted min-max, weighted z-score and RRF; weights on a 0.1 grid) on "
        "the training split, write the best as a pipeline file, then report it once on the "
        "test split. The test split never informs the choice.",
    )
    tu.add_argument("--data", required=True, help="BEIR-layout folder (see `rerankit eval -h`)")
    tu.add_argument("--train-split", default="train", help="split to choose on (default train)")
    tu.add_argument("--test-split", default="test", help="split to report on (default test)")
    tu.add_argument(
        "--first-stage", default="bm25", help="bm25 (over the corpus), run, or a TREC run file"
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
        "--seeds", type=_positive_int, default=1, help="ltr: train this many seeds (report each)"
    )
    tu.add_argument(
        "--calibrate",
        action="store_true",
        help="instead of searching fusions, refit the calibrated texts-only hybrid (scores "
        "that estimate P(relevant) per pair) on the training split",
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
