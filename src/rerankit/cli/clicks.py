"""Learning from clicks on the command line: ``rerankit tune --clicks LOG`` (a call to
:func:`rerankit.training.clicks.learn_from_log`, its propensities, learning curve and
verdict printed, a pipeline and the propensities written) and ``rerankit
interleave-report LOG`` (:func:`rerankit.training.clicks.interleaving_report`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..training.clicks.deploy import served_pipeline, write_learned
from ..training.clicks.from_log import learn_from_log, read_corpus
from ..training.clicks.interleave import BY, interleaving_report
from ..training.clicks.reader import read_log
from ..training.clicks.sessions import DEPTH
from .args import positive_float

__all__ = ["add_commands", "cmd_interleave_report", "cmd_tune_clicks"]


def cmd_tune_clicks(args: argparse.Namespace) -> int:
    """``tune --clicks LOG``: learn, print, write (the learned pipeline only when adopted)."""
    out = Path(args.out or "tuned-clicks.toml")
    # what served the log, when named: checked before the work
    served = served_pipeline(args.served) if args.served else None
    corpus = read_corpus(args.data) if args.data else None
    options: dict[str, Any] = {"folds": args.folds, "seeds": tuple(range(args.seeds))}
    if args.adopt_margin is not None:
        options["margin"] = args.adopt_margin
    found = learn_from_log(
        args.clicks,
        corpus=corpus,
        features=args.features,
        embedding=args.embedding_model,
        min_dwell_ms=args.min_dwell_ms,
        keep_learned=args.keep_learned,
        **options,
    )
    read, result = found.read, found.learning
    print(read.describe())
    if found.features:
        print(found.features)
    by = ", ".join(f"{name or '(unnamed)'} {n}" for name, n in found.served.items())
    print(f"sessions by pipeline: {by}")
    counted = f"{found.counted_clicks} counted (in the first {DEPTH} positions"
    if args.min_dwell_ms is not None:
        counted += f", with at least {args.min_dwell_ms:g} ms of dwell or none recorded"
    print(f"clicks: {found.clicks} in the log, {counted})")
    print(f"{result.queries} queries, {result.sessions} sessions\n")
    print(result.propensities.describe())
    caveat = result.propensities.caveat()
    if caveat:
        print(f"  note: {caveat}")
    if result.curve:
        print("\nlearning curve (cross-validated counterfactual nDCG@10 x 100):")
        sizes = _sizes([sessions for sessions, _ in result.curve])
        for size, (_, ndcg) in zip(sizes, result.curve, strict=True):
            print(f"  {size:>8} sessions a query: {100 * ndcg:6.2f}")
    print(f"\nverdict: {result.describe()}")
    written = write_learned(
        found, out, served=served, keep_learned=args.keep_learned, source=str(args.clicks)
    )
    print(f"\nwrote {out}: {written.what}")
    for path, role in written.files[1:]:
        print(f"wrote {path}: {role}")
    deploy = [str(path) for path, role in written.files if "serving does not read" not in role]
    print(
        f"to deploy, copy {', '.join(deploy)} together (the pipeline names its model beside it)"
        if len(deploy) > 1
        else f"to deploy, serve {out}"
    )
    for line in written.requirements():
        print(f"  note: {line}")
    if written.score_scale is None:
        print("  note: the pipeline does not build here, so its score scale is not known")
    return 0


def _sizes(values: list[float]) -> list[str]:
    """Sessions a query as printed: whole numbers when they are, else with the decimal
    places (1 to 3) that print distinct values distinctly."""
    if all(float(v).is_integer() for v in values):
        return [str(int(v)) for v in values]
    places = _places(values)
    return [f"{v:.{places}f}" for v in values]


def _places(values: list[float]) -> int:
    """The decimal places (1 to 3) that print distinct values distinctly."""
    for places in (1, 2):
        if len({f"{v:.{places}f}" for v in values}) == len(set(values)):
            return places
    return 3


def add_tune_click_arguments(parser: Any) -> None:
    """``tune``'s options of learning from a click log (with ``--clicks``)."""
    parser.add_argument(
        "--clicks",
        metavar="LOG",
        help="learn from this click log (impressions and feedback, as `rerankit serve` "
        "writes with [server.feedback], with its rotated files) instead of judgments: "
        "propensities by position estimated from the log, a LightGBM ranker learned with the "
        "position bias corrected, and the verdict against what served the log; --data then "
        "names the corpus (a folder with corpus.jsonl, or the file) for a log that kept hashes "
        "or ids only",
    )
    parser.add_argument(
        "--served",
        metavar="PIPELINE",
        help="with --clicks: what served the log, a pipeline file or a registered name "
        "(bm25, hybrid, ...), written when the learned pipeline does not win (default: the "
        "pipeline the log names when it is a registered name, else the default hybrid, "
        "said so)",
    )
    parser.add_argument(
        "--features",
        metavar="NPZ",
        help="with --clicks: a features file: read instead of computing the features when "
        "it exists (checked against the log), else written there once computed, so the "
        "next run skips the slow part",
    )
    parser.add_argument(
        "--min-dwell-ms",
        type=positive_float,
        default=None,
        help="with --clicks: count a click only when its dwell time is at least this",
    )


def cmd_interleave_report(args: argparse.Namespace) -> int:
    sessions, read = read_log(args.log)
    pair = tuple(args.pipelines) if args.pipelines else None
    report = interleaving_report(
        sessions,
        pipelines=pair,  # type: ignore[arg-type]
        confidence=args.confidence,
        seed=args.seed,
        by=args.by,
    )
    print(read.describe())
    print(report.describe())
    print(f"winner: {report.winner or 'none (the interval includes 0)'}")
    return 0


def add_commands(sub: Any) -> None:
    ir = sub.add_parser(
        "interleave-report",
        help="which of two interleaved pipelines users preferred, from a click log",
        description="Read a click log written with [server] interleave = [A, B] and credit "
        "each click to the pipeline that placed the clicked document (team-draft "
        "interleaving): wins of each, ties, the difference as a share of the sessions with "
        "a click for either and its confidence interval (bootstrap over sessions, or over "
        "queries with --by query), and the winner when the interval excludes 0.",
    )
    ir.add_argument("log", help="the click log (its rotated files are read too)")
    ir.add_argument(
        "--pipelines",
        nargs=2,
        metavar=("A", "B"),
        help="the pair to report on (default: the first pair in the log)",
    )
    ir.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="the interval's confidence (default 0.95)",
    )
    ir.add_argument(
        "--by",
        choices=BY,
        default="session",
        help="what the bootstrap resamples: sessions (default; which pipeline the users of "
        "this traffic prefer, as an A/B test would tell) or queries (a verdict meant to "
        "hold for queries the log has not seen; wider)",
    )
    ir.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    ir.set_defaults(func=cmd_interleave_report)
