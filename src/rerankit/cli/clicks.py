"""Learning from clicks on the command line: ``rerankit tune --clicks LOG`` (a call to
:func:`rerankit.training.clicks.learn_from_log`, its propensities, learning curve and
verdict printed, a pipeline and the propensities written) and ``rerankit
interleave-report LOG`` (:func:`rerankit.training.clicks.interleaving_report`)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from ..errors import no_such_file
from ..training.clicks.advice import deploy_advice, verdict
from ..training.clicks.deploy import served_pipeline, write_learned
from ..training.clicks.from_log import learn_from_log, read_corpus
from ..training.clicks.given import floored, read_propensities
from ..training.clicks.interleave import BY, METHODS, interleaving_report, method_name
from ..training.clicks.log import STORE, log_files
from ..training.clicks.reader import logs_files, read_log
from ..training.clicks.sessions import DEPTH
from ..training.clicks.simulate_data import SHOWN, simulate_collection
from .args import (
    UsageError,
    add_candidates_argument,
    add_data_argument,
    add_first_stage_argument,
    add_max_queries_argument,
    add_no_progress_argument,
    add_old_spelling,
    examples,
    non_negative_float,
    positive_float,
    positive_int,
)
from .console import progress_bar, read_collection, reporter
from .files import need_collection, need_first_stage, need_reranker

__all__ = [
    "add_commands",
    "cmd_interleave_report",
    "cmd_simulate_clicks",
    "cmd_tune_clicks",
    "need_click_log",
]


def need_click_log(log: str, flag: str) -> None:
    """A :class:`~rerankit.cli.args.UsageError` when neither the click log ``log`` nor any
    of its rotated files is there (see :func:`~rerankit.cli.files.need_file`)."""
    if not log_files(log):
        raise UsageError(no_such_file(log, f"{flag}: a click log, or its rotated files"))


def cmd_tune_clicks(args: argparse.Namespace) -> int:
    """``tune --clicks LOG``: learn, print, write (the learned pipeline only when adopted)."""
    out = Path(args.out or "tuned-clicks.toml")
    # what served the log, when named: checked before the work
    served = served_pipeline(args.served) if args.served else None
    corpus = read_corpus(args.data) if args.data else None  # (read before the other work)
    options: dict[str, Any] = {"folds": args.folds, "seeds": tuple(range(args.seeds))}
    if args.adopt_margin is not None:
        options["margin"] = args.adopt_margin
    if args.propensities is not None:  # checked before the work
        options["propensities"] = read_propensities(args.propensities, DEPTH)
        if said := floored(args.propensities, depth=DEPTH):
            print(f"note: {said}")
    # one log (with its rotated files), or the files of several (each with its own)
    logs = args.clicks[0] if len(args.clicks) == 1 else logs_files(args.clicks)
    found = learn_from_log(
        logs,
        data=corpus,
        features=args.features,
        embedding=args.embedding_model,
        min_dwell_ms=args.min_dwell_ms,
        max_feedback_delay=args.max_feedback_delay,
        keep_learned=args.keep_learned,
        reporter=reporter(args),
        **options,
    )
    read, result = found.read, found.learning
    print(read.describe())
    if found.features:
        print(found.features)
    by = ", ".join(
        f"{name or '(unnamed)'} {n}" + _explored(found.explored.get(name))
        for name, n in found.served.items()
    )
    print(f"sessions by pipeline: {by}")
    for pair, n in found.interleaved.items():
        print(
            f"  note: {n} of them showed an interleaved order ({pair.replace('+', ' and ')} "
            'mixed, as [server] interleave serves them): there the verdict\'s "served" is '
            "that mix, not one pipeline's own order"
        )
    counted = f"{found.counted_clicks} counted (in the first {DEPTH} positions"
    if args.min_dwell_ms is not None:
        counted += f", with at least {args.min_dwell_ms:g} ms of dwell or none recorded"
    print(f"clicks: {found.clicks} in the log, {counted})")
    unclicked = len(found.logs) - result.queries
    left = (
        f" ({unclicked} logged quer{'y' if unclicked == 1 else 'ies'} without a click counted "
        "left out: they hold nothing to learn from or to score)"
        if unclicked
        else ""
    )
    print(f"{result.queries} queries, {result.sessions} sessions{left}\n")
    print(result.propensities.describe())
    caveat = result.propensities.caveat()
    if caveat:
        print(f"  note: {caveat}")
    warning = result.propensities.warning()
    if warning:
        print(f"  warning: {warning}")
    if result.curve:
        print("\nlearning curve (cross-validated counterfactual nDCG@10 x 100):")
        sizes = _sizes([sessions for sessions, _ in result.curve])
        for size, (_, ndcg) in zip(sizes, result.curve, strict=True):
            noun = "session" if size == "1" else "sessions"
            print(f"  {size:>8} {noun} a query: {100 * ndcg:6.2f}")
    print(f"\nverdict: {verdict(result)}")
    written = write_learned(
        found, out, served=served, keep_learned=args.keep_learned, source=" ".join(args.clicks)
    )
    print(f"\nwrote {out}: {written.what}")
    for path, role in written.files[1:]:
        print(f"wrote {path}: {role}")
    deploy = [str(path) for path, role in written.files if "serving does not read" not in role]
    if not written.learned:
        held = (
            "is what served the log (serving it changes nothing)"
            if written.unchanged
            else "holds the default hybrid, not what served the log (see above)"
        )
        print(
            f"nothing to deploy: {out} {held}; to compare the learned pipeline with what "
            "serves today on live traffic anyway (interleaving, docs/clicks.md), run again "
            "with --keep-learned"
        )
    elif len(deploy) > 1:
        together = "together (the pipeline names its model beside it)"
        print(f"to deploy, copy {', '.join(deploy)} {together}")
    else:
        print(f"to deploy, serve {out}")
    for line in written.requirements():
        print(f"  note: {line}")
    if written.score_scale is None:
        print("  note: the pipeline does not build here, so its score scale is not known")
    for line in deploy_advice(written, found.served_by, served=args.served, data=args.data):
        print(f"  note: {line}")
    return 0


def _explored(exploration: Any) -> str:
    """`` (33 explored, 15 with exchanged pairs)`` for a pipeline whose sessions were
    explored, else nothing."""
    said = exploration.describe() if exploration is not None else ""
    return f" ({said})" if said else ""


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
        action="append",
        help="learn from this click log (impressions and feedback, as `rerankit serve` "
        "writes with [server.feedback], with its rotated files; repeat it for the logs of "
        "several replicas) instead of judgments: "
        "propensities by position estimated from the log, a LightGBM ranker learned with the "
        "position bias corrected, and the verdict against what served the log; --data then "
        "names the corpus (a folder with corpus.jsonl, or the file) for a log that kept hashes "
        "or ids only. It needs the extras learn and torch, and 4 queries with a click at "
        "least (hundreds, with many sessions each, for a verdict): `rerankit check --clicks "
        "LOG` counts them and finds the log's mistakes in seconds, first",
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
    parser.add_argument(
        "--propensities",
        metavar="VALUES",
        help="with --clicks: weigh the clicks by these propensities instead of estimating "
        "them from the log: one a position, 1 to 10, comma-separated (1,0.9,0.7,...), or a "
        "file as tune --clicks writes them (learned.propensities.json), e.g. measured on a "
        "log where the top positions were exchanged too",
    )
    add_max_feedback_delay_argument(parser, "with --clicks: ")


def add_max_feedback_delay_argument(parser: Any, prefix: str = "") -> None:
    parser.add_argument(
        "--max-feedback-delay",
        type=non_negative_float,
        default=None,
        metavar="SECONDS",
        help=f"{prefix}leave out feedback that came more than this many seconds after its "
        "answer (default: keep feedback however late)",
    )


def cmd_interleave_report(args: argparse.Namespace) -> int:
    logs = [*args.log, *(args.clicks or ())]
    if not logs:
        raise UsageError("name the click log: rerankit interleave-report LOG")
    for log in logs:
        need_click_log(log, "LOG")
    sessions, read = read_log(logs_files(logs), max_feedback_delay=args.max_feedback_delay)
    pair = tuple(args.pipelines) if args.pipelines else None
    try:
        report = interleaving_report(
            sessions,
            pipelines=pair,  # type: ignore[arg-type]
            confidence=args.confidence,
            seed=args.seed,
            by=args.by,
            method=args.method,
        )
    except ValueError as exc:  # say which log, and what was read of it
        read_line = read.describe().splitlines()[0]
        raise ValueError(f"{', '.join(map(str, logs))}: {exc} ({read_line})") from exc
    if args.json:
        print(json.dumps({**report.as_dict(), "read": read.counts()}, indent=2))
        return 0
    print(read.describe())
    print(report.describe())
    few = f" (tentative: {report.clicked} clicked sessions)" if report.few_clicked else ""
    print(f"winner: {report.winner or 'none (the interval includes 0)'}{few}")
    return 0


def cmd_simulate_clicks(args: argparse.Namespace) -> int:
    need_collection(args.data)
    need_first_stage(args.first_stage)
    need_reranker(args.reranker)
    data = read_collection(args.data, args.split, args.max_queries)
    simulated = simulate_collection(
        data,
        args.out,
        reranker=args.reranker,
        first_stage=args.first_stage,
        candidates=args.candidates,
        sessions=args.sessions,
        eta=args.eta,
        explore_pairs=args.explore_pairs,
        store=args.store,
        seed=args.seed,
        progress=progress_bar("rerank", not args.no_progress),
    )
    print(simulated.describe())
    corpus = "" if args.store == "text" else f" --data {shlex.quote(str(args.data))}"
    features = shlex.quote(str(Path(args.out).with_suffix(".npz")))
    print(
        f"learn from it: rerankit tune --clicks {shlex.quote(str(args.out))}{corpus} "
        f"--features {features} --out learned.toml"
    )
    print(
        f"a rehearsal: the log's 'served' is the simulation's ranker ({simulated.pipeline}), "
        "and what is learned fits this collection and these simulated users; learn what you "
        "deploy from your own service's log"
    )
    return 0


def add_simulate_command(sub: Any) -> None:
    sim = sub.add_parser(
        "simulate-clicks",
        help="simulate a click log over a judged collection, to try learning from clicks",
        description="Rerank each judged query's first-stage candidates with a logging "
        f"pipeline, show the first {SHOWN} to simulated users who look at position p as the "
        "position-based model says (examination 0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, "
        "0.10, 0.08, 0.06 to the power --eta) and click by the collection's judgments "
        "(grades mapped onto 0-4; click probability 0.1, 0.16, 0.28, 0.52, 1.0), and write "
        "each session to a click log as the service writes it. Then learn from it with "
        "`rerankit tune --clicks LOG --data FOLDER`.",
        **examples(
            "rerankit simulate-clicks --data my-data --max-queries 80 --out sim.jsonl",
            "rerankit simulate-clicks --data my-data --sessions 50 --explore-pairs 0.1 "
            "--out sim.jsonl  # RandPair, as the service's explore_pairs",
            "rerankit tune --clicks sim.jsonl --data my-data --features sim.npz  # then learn",
        ),
    )
    add_data_argument(sim)
    sim.add_argument(
        "--train-split",
        dest="split",
        default="train",
        help="the split whose judged queries it simulates users on, the queries learning "
        "will train on (default train)",
    )
    add_old_spelling(sim, "--split", dest="split", now="--train-split")
    add_max_queries_argument(sim)
    add_first_stage_argument(sim)
    add_candidates_argument(
        sim,
        f"first-stage candidates per query: every one is logged, the first {SHOWN} in the "
        f"logging pipeline's order are shown (more than {SHOWN}: a log like a real service's, "
        "which lists candidates it did not show)",
        default=SHOWN,
    )
    sim.add_argument(
        "--reranker",
        "-r",
        default="bm25",
        help="the logging pipeline (a name or a pipeline file; default bm25), named in the log",
    )
    sim.add_argument(
        "--sessions", type=positive_int, default=50, help="sessions a query (default 50)"
    )
    sim.add_argument(
        "--eta",
        type=positive_float,
        default=1.0,
        help="the users' position bias: examination to this power (default 1; 2 is steeper)",
    )
    sim.add_argument(
        "--explore-pairs",
        dest="explore_pairs",
        type=float,
        default=0.0,
        metavar="P",
        help="RandPair: the chance each adjacent pair below the top 3 is exchanged, in every "
        "session (the service's explore_pairs with explore = 1; default 0)",
    )
    add_old_spelling(sim, "--explore", dest="explore_pairs", now="--explore-pairs", type=float)
    sim.add_argument(
        "--store",
        choices=STORE,
        default="id",
        help="what the log keeps of a document (default id: learn with --data FOLDER)",
    )
    sim.add_argument("--seed", type=int, default=0, help="the simulation's seed (default 0)")
    sim.add_argument("--out", required=True, metavar="LOG", help="the click log to write (new)")
    add_no_progress_argument(sim)
    sim.set_defaults(func=cmd_simulate_clicks)


def add_commands(sub: Any) -> None:
    add_simulate_command(sub)
    ir = sub.add_parser(
        "interleave-report",
        help="which of two interleaved pipelines users preferred, from a click log",
        description="Read a click log written with [server] interleave = [A, B] and credit "
        "each click: with optimized interleaving (the default), by how much higher one "
        "pipeline ranks the clicked document; with team draft, to the pipeline that placed "
        "it. Prints the sessions each won, ties, the difference per session with a click "
        "for either and its confidence interval (over sessions, or over queries with --by "
        "query), and the winner when the interval excludes 0.",
        **examples(
            "rerankit interleave-report clicks.jsonl",
            "rerankit interleave-report a/clicks.jsonl b/clicks.jsonl  # two replicas' logs",
            "rerankit interleave-report clicks.jsonl --by query --json",
        ),
    )
    ir.add_argument(
        "log",
        nargs="*",
        metavar="LOG",
        help="the click log (its rotated files are read too); several: the logs of several "
        "replicas, read together",
    )
    ir.add_argument(
        "--clicks",
        action="append",
        metavar="LOG",
        help="a click log, as check and tune name it: the same as LOG (repeatable)",
    )
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
        help="what the confidence interval is over: sessions (default; which pipeline the "
        "users of this traffic prefer, as an A/B test would tell: the normal interval of the "
        "mean credit for optimized interleaving, a bootstrap of sessions for team draft) or "
        "queries (a bootstrap of queries: a verdict meant to hold for queries the log has "
        "not seen; wider)",
    )
    ir.add_argument(
        "--method",
        type=method_name,  # team_draft too, as the Python function is named
        choices=METHODS,
        default=None,
        help="the interleaving whose sessions to count (default: the one the log holds; a "
        "log with both, after interleave_method changed, must name one)",
    )
    add_max_feedback_delay_argument(ir)
    ir.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the bootstrap's seed, for team draft or --by query (default 0)",
    )
    ir.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object (every figure, for scripts) instead",
    )
    ir.set_defaults(func=cmd_interleave_report)
