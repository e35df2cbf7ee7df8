"""``rerankit batch``: many queries' candidates, from a file of rows or a BEIR folder, in
this process or on Ray Data actors."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._jsonl import dumps_strict
from ..batch import BatchInterrupted, BatchSummary, RayOptions, quiet_ray_logs, read_rows, run_batch
from ..batch.beir import beir_rows
from ..cache import EMBEDDING_CACHE_ENV, embedding_cache_file
from ..errors import InputError
from .args import (
    add_address_argument,
    add_backend_arguments,
    add_candidates_argument,
    add_data_argument,
    add_first_stage_argument,
    add_language_argument,
    add_old_spelling,
    embedding_cache_choice,
    examples,
    given,
    non_negative_float,
    positive_int,
    refuse_unused,
    remember_defaults,
    say_renamed,
)
from .console import note
from .fields import add_field_arguments, input_fields
from .files import need_collection, need_file, need_first_stage, need_reranker
from .pipelines import pipeline_spec
from .rank import RERANKER_HELP, default_reranker_name, refuse_absent_id_field

__all__ = ["add_commands", "cmd_batch"]


def cmd_batch(args: argparse.Namespace) -> int:

    if not args.out:
        raise InputError("batch needs --out FILE: the .jsonl or .parquet file to write")
    need_file(args.input, "--input", "the rows to rerank")
    need_collection(args.data)
    need_reranker(args.reranker)
    if args.engine == "ray" and not args.verbose:
        quiet_ray_logs()
    source: Any = args.input
    folder = args.data
    if folder is None and Path(args.input).is_dir():  # the earlier way to give a BEIR folder
        folder = args.input
        say_renamed("--input FOLDER", "--data FOLDER")
    if args.engine != "ray":
        refuse_unused(ray_flags(args), "without --engine ray (they tell Ray's actors)")
    if folder is not None:
        need_first_stage(args.first_stage)
        refuse_unused(
            given(
                args,
                "text_field",
                "text_fields",
                "id_field",
                "title_field",
                "first_stage_field",
                "first_stage_lower_is_better",
            ),
            "with --data: its candidates are read from the corpus, each with its id, text, "
            "title and the --first-stage score",
        )
    else:
        refuse_absent_id_field(args, row_documents(source), f"--input {source}")
    pipeline = pipeline_spec(args.reranker or default_reranker_name(), args)
    if folder is not None:
        first = args.first_stage or "auto"
        source = beir_rows(
            folder,
            first,
            split=args.split or BEIR_SPLIT,
            k=args.candidates or BEIR_CANDIDATES,
            max_queries=args.max_queries,
            note=lambda message: note(f"warning: {message}"),
        )
    else:
        refuse_unused(
            {
                "--first-stage": args.first_stage,
                "--candidates": args.candidates,
                "--split": args.split,
                "--max-queries": args.max_queries,
            },
            f"with --input: they choose a BEIR folder's queries and candidates (--data "
            f"FOLDER), and the rows of {args.input} carry their own; cut or filter the rows "
            "instead",
        )
    choice = embedding_cache_choice(args)  # none unless asked: a batch's rows are new
    if choice is not None:  # (read by the embedding scorers built from here on)
        os.environ[EMBEDDING_CACHE_ENV] = embedding_cache_file(choice) or ""
    set_flags = {k: v for k, v in vars(args).items() if v is not None}  # Ray's: as given
    ray, _ = RayOptions.split(None, set_flags)
    before = signal.signal(signal.SIGINT, _interrupt)  # (the CLI runs on the main thread)
    try:
        summary = run_batch(
            source,
            args.out,
            pipeline,
            engine=args.engine,
            ray=ray,
            resume=args.resume,
            overwrite=args.overwrite,
            note=lambda message: note(f"rerankit batch: {message}"),
            top_k=args.top_k,
            fields=input_fields(args),
            keep_candidates=not args.no_candidates,
        )
    except BatchInterrupted as stop:
        return interrupted(args, stop.summary)
    except KeyboardInterrupt:  # before the output was opened (loading the models)
        return interrupted(args, None)
    finally:
        signal.signal(signal.SIGINT, before)
    print(f"rerankit batch: wrote {args.out}: {summary}", file=sys.stderr)
    for error in summary.errors[:3]:
        print(f"  error: {error}", file=sys.stderr)
    if args.summary:
        Path(args.summary).write_text(dumps_strict(summary.to_dict(), indent=2) + "\n")
    return 1 if summary.failures else 0


def _interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C raises KeyboardInterrupt where the work is, inside a row's event loop too:
    asyncio's own handler would cancel the row's task instead, and a provider call that
    absorbs the cancellation (its retry and timeout handling) ends the row normally, the
    interrupt lost and the batch run to its end."""
    raise KeyboardInterrupt


def interrupted(args: argparse.Namespace, summary: BatchSummary | None) -> int:
    """Ctrl-C: one line saying what was written and how to go on; the summary file (of
    the rows written) when asked; exit status 130, as a shell reports SIGINT. The process
    ends next: the rows' tasks Ctrl-C left behind (provider calls cut short) are not
    reported by asyncio as errors when they are destroyed."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    again = [a for a in args.argv if a != "--overwrite"]
    again += [] if "--resume" in again else ["--resume"]
    if summary is None:
        done = f"nothing written to {args.out}"
    else:
        done = (
            f"{summary.rows + summary.skipped} rows in {args.out} ({summary.rows} this run, "
            f"{summary.failures} failed)"
        )
        if args.summary:
            Path(args.summary).write_text(dumps_strict(summary.to_dict(), indent=2) + "\n")
            done += f"; summary in {args.summary}"
    if summary is None and args.summary:
        done += f"; no {args.summary} (no row was written)"
    print(
        f"rerankit batch: interrupted: {done}; go on with: {shlex.join(['rerankit', *again])}",
        file=sys.stderr,
    )
    return 130


def row_documents(path: str) -> Iterator[Any]:
    """The candidates of the batch rows in ``path``, row by row (unreadable rows have
    none)."""
    for row in read_rows(path):
        candidates = row.get("candidates")
        if isinstance(candidates, list):
            yield from candidates


#: what ``batch --data`` reads when not told: the test split, 100 candidates a query
BEIR_SPLIT, BEIR_CANDIDATES = "test", 100


def ray_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The flags only ``--engine ray`` reads, with their values (None: not given)."""
    return {
        "--workers": args.workers,
        "--num-cpus": args.num_cpus,
        "--num-gpus": args.num_gpus,
        "--address": args.address,
    }


def add_commands(sub: Any) -> None:
    """``batch``."""
    bat = sub.add_parser(
        "batch",
        help="rerank many queries from a file (in this process or on Ray)",
        description="Rerank every row of a JSON Lines or Parquet file ({query_id?, query, "
        "candidates: [strings or objects with text]}) into another (the input's fields plus "
        "results, score_scale, error, degraded, warnings, seconds), or a BEIR folder's "
        "queries (--data) with their --first-stage candidates. "
        "A row that fails is written with its error and counted; the exit status is 1 when "
        "any row failed, 0 otherwise.",
        **examples(
            "rerankit batch -i queries.jsonl --out ranked.jsonl",
            "rerankit batch --data my-data --first-stage bm25 --out ranked.jsonl  # BEIR folder",
            "rerankit batch -i rows.parquet --out ranked.parquet --engine ray --workers 4",
        ),
    )
    source = bat.add_mutually_exclusive_group(required=True)  # rows, or a BEIR folder
    source.add_argument("--input", "-i", default=None, help="rows: .jsonl or .parquet")
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
        help="rows per call of a worker (16); with --engine ray, rows come back and are "
        "written a Ray block of at least this many at a time, so a kill loses about "
        "--workers x --batch-size rows (batch.md, 'Stopping a Ray run')",
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
    bat.add_argument("--top-k", "-k", type=positive_int, default=None, help="keep the best K")
    add_field_arguments(bat, score_field=False)
    add_language_argument(bat)
    add_backend_arguments(bat)
    bat.add_argument(
        "--embedding-cache",
        default=None,
        metavar="FILE",
        help="SQLite file keeping document embeddings across runs, e.g. to run the same rows "
        "again (default: $RERANKIT_EMBEDDING_CACHE, else the server $RERANKIT_CACHE_URL "
        "names, else none: a batch's documents are usually new)",
    )
    bat.add_argument(
        "--no-embedding-cache",
        action="store_true",
        help="keep no embeddings, even where $RERANKIT_EMBEDDING_CACHE names a file",
    )
    bat.add_argument("--summary", default=None, help="also write the summary as JSON here")
    bat.add_argument(
        "--resume",
        action="store_true",
        help="--out already holds the first rows of this input (a run stopped by Ctrl-C or "
        "killed): skip them and append the rest (JSON Lines only)",
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
    bat.set_defaults(func=cmd_batch)
    remember_defaults(bat)
