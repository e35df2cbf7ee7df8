"""The parsers of ``simulate-clicks`` and ``interleave-report``, and ``tune``'s click-log
flags: their help and checks, and nothing the commands run (:mod:`rerankit.cli.clicks`,
imported when one runs)."""

from __future__ import annotations

from typing import Any

from ..args import (
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
from .shown import CLICK_LOG_STORES, INTERLEAVING_BY, INTERLEAVING_METHODS, SIMULATED_SHOWN

__all__ = [
    "add_commands",
    "add_max_feedback_delay_argument",
    "add_simulate_command",
    "add_tune_click_arguments",
    "interleaving_method",
]


def interleaving_method(value: str) -> str:
    """``--method``: a method's name as the library spells it (``team_draft`` is
    ``team-draft``: :func:`~rerankit.training.clicks.interleave.method_name`)."""
    if value in INTERLEAVING_METHODS:
        return value
    from ...training.clicks.interleave import method_name

    return method_name(value)


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


def add_simulate_command(sub: Any) -> None:
    sim = sub.add_parser(
        "simulate-clicks",
        help="simulate a click log over a judged collection, to try learning from clicks",
        description="Rerank each judged query's first-stage candidates with a logging "
        f"pipeline, show the first {SIMULATED_SHOWN} to simulated users who look at position p "
        "as the position-based model says (examination 0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, "
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
        f"first-stage candidates per query: every one is logged, the first {SIMULATED_SHOWN} "
        f"in the logging pipeline's order are shown (more than {SIMULATED_SHOWN}: a log like a "
        "real service's, which lists candidates it did not show)",
        default=SIMULATED_SHOWN,
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
        choices=CLICK_LOG_STORES,
        default="id",
        help="what the log keeps of a document (default id: learn with --data FOLDER)",
    )
    sim.add_argument("--seed", type=int, default=0, help="the simulation's seed (default 0)")
    sim.add_argument("--out", required=True, metavar="LOG", help="the click log to write (new)")
    add_no_progress_argument(sim)


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
        choices=INTERLEAVING_BY,
        default="session",
        help="what the confidence interval is over: sessions (default; which pipeline the "
        "users of this traffic prefer, as an A/B test would tell: the normal interval of the "
        "mean credit for optimized interleaving, a bootstrap of sessions for team draft) or "
        "queries (a bootstrap of queries: a verdict meant to hold for queries the log has "
        "not seen; wider)",
    )
    ir.add_argument(
        "--method",
        type=interleaving_method,  # team_draft too, as the Python function is named
        choices=INTERLEAVING_METHODS,
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
