"""Learning from clicks on the command line: ``rerankit tune --clicks LOG`` (a call to
:func:`rerankit.training.clicks.learn_from_log`, its propensities, learning curve and
verdict printed, a pipeline and the propensities written) and ``rerankit
interleave-report LOG`` (:func:`rerankit.training.clicks.interleaving_report`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..config import read_spec, to_toml
from ..training.clicks.from_log import learn_from_log, read_corpus, read_features
from ..training.clicks.interleave import BY, interleaving_report
from ..training.clicks.reader import read_log
from ..training.clicks.sessions import DEPTH
from ..training.fusion_search import DEFAULT_HYBRID, pipeline_spec
from .args import positive_float

__all__ = ["add_commands", "cmd_interleave_report", "cmd_tune_clicks"]


def cmd_tune_clicks(args: argparse.Namespace) -> int:
    """``tune --clicks LOG``: learn, print, write (the learned pipeline only when adopted)."""
    out = Path(args.out or "tuned-clicks.toml")
    if args.served:  # read (and checked) before the work, copied as it is
        read_spec(args.served)
        served_text = Path(args.served).read_text(encoding="utf-8")
    corpus = read_corpus(args.data) if args.data else None
    rows = read_features(args.features) if args.features else None
    options: dict[str, Any] = {"folds": args.folds, "seeds": tuple(range(args.seeds))}
    if args.adopt_margin is not None:
        options["margin"] = args.adopt_margin
    found = learn_from_log(
        args.clicks,
        corpus=corpus,
        rows=rows,
        embedding=args.embedding_model,
        min_dwell_ms=args.min_dwell_ms,
        keep_learned=args.keep_learned,
        **options,
    )
    read, result = found.read, found.learning
    print(read.describe())
    served = ", ".join(f"{name or '(unnamed)'} {n}" for name, n in found.served.items())
    print(f"sessions by pipeline: {served}")
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
        places = _places([sessions for sessions, _ in result.curve])
        for sessions, ndcg in result.curve:
            print(f"  {sessions:8.{places}f} sessions a query: {100 * ndcg:6.2f}")
    print(f"\nverdict: {result.describe()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if result.adopt or args.keep_learned:
        spec = result.save(out.with_suffix(".lgb.txt"), relative_to=out.parent)
        what = "the learned pipeline" + (
            "" if result.adopt else ", not adopted: written anyway as asked (--keep-learned)"
        )
    elif args.served:
        spec, what = None, f"the pipeline that served the log ({args.served})"
    else:
        spec, what = pipeline_spec(DEFAULT_HYBRID, name="hybrid"), "the default hybrid"
    comment = f"rerankit tune --clicks {args.clicks}: {what}"
    out.write_text(served_text if spec is None else to_toml(spec, comment), encoding="utf-8")
    beside = out.with_name(out.stem + ".propensities.json")
    beside.write_text(json.dumps(result.propensities.as_dict(), indent=2) + "\n", "utf-8")
    print(f"\nwrote {out}: {what}")
    if result.adopt or args.keep_learned:
        model = out.with_suffix(".lgb.txt")
        print(f"wrote {model} and {model.with_suffix('.json')}: the model and its report")
        print(f"  ({out} names the model beside it: move or copy the three together)")
    print(f"wrote {beside}: the propensities by position")
    return 0


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
        help="with --clicks: the pipeline file that served the log, written when the learned "
        "pipeline does not win (default: the default hybrid)",
    )
    parser.add_argument(
        "--features",
        metavar="NPZ",
        help="with --clicks: features computed beforehand "
        "(rerankit.training.clicks.write_features) instead of computing them",
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
    if args.json:
        what = {"files": read.files, "impressions": read.impressions, "feedback": read.feedback}
        print(json.dumps({**report.as_dict(), "read": what}, indent=2))
        return 0
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
    ir.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object (every figure, for scripts) instead",
    )
    ir.set_defaults(func=cmd_interleave_report)
