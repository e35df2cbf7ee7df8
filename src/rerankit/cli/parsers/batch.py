"""``batch``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.batch`, imported when it runs)."""

from __future__ import annotations

from typing import Any

from ..args import (
    add_address_argument,
    add_backend_arguments,
    add_candidates_argument,
    add_data_argument,
    add_embedding_cache_if_asked_arguments,
    add_first_stage_argument,
    add_language_argument,
    add_no_progress_argument,
    add_old_spelling,
    examples,
    non_negative_float,
    positive_int,
    remember_defaults,
)
from ..fields import add_field_arguments
from .rank import RERANKER_HELP

__all__ = ["BEIR_CANDIDATES", "BEIR_SPLIT", "ROW_FIELDS", "add_commands"]

#: the flags naming a row's own fields (a candidate's are --text-field, --id-field, ...)
ROW_FIELDS = (
    ("--query-field", "query", "the query (default query)"),
    ("--query-id-field", "query_id", "the query id (default query_id)"),
    ("--candidates-field", "candidates", "the list of candidates (default candidates)"),
)


#: what ``batch --data`` reads when not told: the test split, 100 candidates a query
BEIR_SPLIT, BEIR_CANDIDATES = "test", 100


def add_commands(sub: Any) -> None:
    """``batch``."""
    bat = sub.add_parser(
        "batch",
        help="rerank many queries from a file (in this process or on Ray)",
        description="Rerank every row of a JSON Lines or Parquet file ({query_id?, query, "
        "candidates: [strings or objects with text]}) into another (the input's fields plus "
        "results, score_scale, error, degraded, warnings, seconds), or a BEIR folder's "
        "queries (--data) with their --first-stage candidates. "
        "A row that fails is written with its error and counted. Exit status: 0 every row "
        "ranked, 3 some rows failed, 1 the run failed (every row failed, or it could not "
        "start), 2 a usage error (an --out that already holds rows, or that --resume cannot go "
        "on with, too), 130 or 143 stopped "
        "by SIGINT or SIGTERM (go on with --resume).",
        **examples(
            "rerankit batch -i queries.jsonl --out ranked.jsonl",
            "rerankit batch -i - --out ranked.jsonl --query-field question  # rows on stdin",
            "rerankit batch --data my-data --first-stage bm25 --out ranked.jsonl  # BEIR folder",
            "rerankit batch -i rows.parquet --out ranked.parquet --engine ray --workers 4",
        ),
    )
    source = bat.add_mutually_exclusive_group(required=True)  # rows, or a BEIR folder
    source.add_argument(
        "--input", "-i", default=None, help="rows: .jsonl or .parquet; - reads JSON Lines on stdin"
    )
    add_data_argument(
        source, required=False, also=", whose --split queries are reranked over --first-stage"
    )
    out = bat.add_mutually_exclusive_group(required=True)  # --out, or its earlier spelling
    out.add_argument("--out", "-o", default=None, help=".jsonl or .parquet to write (required)")
    add_old_spelling(out, "--output", dest="out", now="--out")
    bat.add_argument("--reranker", "-r", default=None, help=RERANKER_HELP)
    add_old_spelling(bat, "--config", "-c", dest="reranker", now="--reranker")
    bat.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: Ray Data actors (extra ray)",
    )
    add_address_argument(bat)
    bat.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="ray: actors, each with the pipeline (default 1)",
    )
    bat.add_argument(
        "--batch-size",
        type=positive_int,
        default=16,
        metavar="N",
        help="ray: rows per call of a worker (16); Ray returns them a block at a time, so a "
        "kill loses about --workers x --batch-size rows (batch.md, 'Stopping a Ray run'); "
        "the local engine writes each row as it finishes",
    )
    bat.add_argument(
        "--concurrency",
        type=positive_int,
        default=1,
        help="rows in flight at once per worker (1); raise it for pipelines that wait on "
        "an LLM provider",
    )
    bat.add_argument(
        "--num-cpus",
        type=non_negative_float,
        default=None,
        help="ray: CPUs per actor (pipeline's threads)",
    )
    bat.add_argument(
        "--num-gpus", type=non_negative_float, default=None, help="ray: GPUs per actor"
    )
    add_first_stage_argument(bat, default=None, when="with --data: ", old="--run")
    bat.add_argument(
        "--split",
        default=None,
        help=f"with --data: the BEIR split whose queries are reranked (default {BEIR_SPLIT}, "
        "as eval reads; without that qrels file, every query)",
    )
    bat.add_argument(
        "--max-queries",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --data: the split's first N queries only",
    )
    add_candidates_argument(
        bat, "with --data: first-stage candidates per query", default=BEIR_CANDIDATES
    )
    bat.set_defaults(candidates=None)  # BEIR_CANDIDATES with --data; refused with --input
    bat.add_argument("--top-k", "-k", type=positive_int, metavar="K", help="keep only the best K")
    for flag, default, what in ROW_FIELDS:
        bat.add_argument(flag, default=default, metavar="FIELD", help=f"row field holding {what}")
    add_field_arguments(bat, score_field=False)
    add_language_argument(bat)
    add_backend_arguments(bat)
    add_embedding_cache_if_asked_arguments(
        bat, "to run the same rows again", "a batch's documents are usually new"
    )
    bat.add_argument("--summary", default=None, help="also write the summary as JSON here")
    add_no_progress_argument(
        bat,
        "default: a line at most every 10 seconds, on a terminal or not, with the rows done, "
        "rows/s, failures and the time left; none after the last row: the summary follows",
    )
    bat.add_argument(
        "--resume",
        action="store_true",
        help="--out already holds the first rows of this input (a run stopped by Ctrl-C or "
        "killed): skip them and append the rest (JSON Lines only); rows written with an "
        "error are not ranked again and count as failed (exit 3 or 1): --overwrite ranks "
        "every row again",
    )
    bat.add_argument(
        "--overwrite",
        action="store_true",
        help="start --out again when it already holds rows (without --resume or this, "
        "batch refuses such a file)",
    )
    bat.add_argument(
        "--no-candidates",
        action="store_true",
        help="leave each row's candidates out of the output (results keep their index and id)",
    )
    bat.add_argument(
        "--strict",
        action="store_true",
        help="a degraded row (a scorer or a rule stage failed) counts as failed in the exit "
        "status (3 some rows, 1 every row)",
    )
    remember_defaults(bat)
