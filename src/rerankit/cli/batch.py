"""``rerankit batch``: many queries' candidates, from a file of rows or a BEIR folder, in
this process or on Ray Data actors."""

from __future__ import annotations

import argparse
import logging
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._words import counted
from ..batch import BatchInterrupted, BatchSummary, RayOptions, quiet_ray_logs, run_batch
from ..batch.beir import beir_rows
from ..batch.io import input_format, row_candidates, total_rows
from ..batch.resume import OutputRefused
from ..errors import InputError
from .args import (
    UsageError,
    embedding_cache_if_asked,
    given,
    refuse_unused,
    say_renamed,
)
from .console import RowProgress, note
from .fields import input_fields
from .files import need_collection, need_file, need_first_stage, need_reranker
from .parsers.batch import BEIR_CANDIDATES, BEIR_SPLIT
from .pipelines import pipeline_spec
from .rank import default_reranker_name, refuse_absent_id_field

__all__ = ["cmd_batch"]

#: ``--input`` names standard input (JSON Lines)
STDIN = ("-", "/dev/stdin")


def cmd_batch(args: argparse.Namespace) -> int:
    """Exit status: 0 every row ranked, 3 some rows failed (written with their error), 1
    the run failed (every row failed, or it could not start), 2 a usage error (an --out
    that already holds rows, or a --resume that cannot go on with it, among them), 130/143
    stopped by SIGINT/SIGTERM. With
    ``--strict`` a degraded row counts as failed."""
    if not args.out:
        raise InputError("batch needs --out FILE: the .jsonl or .parquet file to write")
    stdin = args.input in STDIN
    if stdin and args.engine == "ray":
        raise UsageError("--input - (standard input) needs --engine local: Ray reads files")
    if not stdin:
        need_file(args.input, "--input", "the rows to rerank")
    try:  # a name batch cannot read or write is a usage error, before any work (exit 2)
        input_format(args.out)
        if args.input is not None and not stdin and not Path(args.input).is_dir():
            input_format(args.input)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    need_collection(args.data)
    need_reranker(args.reranker)
    if args.engine == "ray" and not args.verbose:
        quiet_ray_logs()
    source: Any = args.input
    folder = args.data
    if folder is None and not stdin and Path(args.input).is_dir():  # the earlier way: a BEIR folder
        folder = args.input
        say_renamed("--input FOLDER", "--data FOLDER")
    if args.engine != "ray":
        refuse_unused(ray_flags(args), "without --engine ray (they tell Ray's actors)")
        if given(args, "batch_size")["--batch-size"] is not None:  # kept: it used to count
            note(
                "warning: --batch-size has no effect without --engine ray: this process "
                "writes each row as it finishes"
            )
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
    elif stdin:
        source = sys.stdin
    else:
        refuse_absent_id_field(args, row_documents(source, args), f"--input {source}")
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
    embedding_cache_if_asked(args)  # none unless asked: a batch's rows are new
    set_flags = {k: v for k, v in vars(args).items() if v is not None}  # Ray's: as given
    ray, _ = RayOptions.split(None, set_flags)
    progress = None if args.no_progress else RowProgress(None if stdin else total_rows(source))
    received: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        """Ctrl-C (or SIGTERM) raises KeyboardInterrupt where the work is, inside a row's
        event loop too: asyncio's own handler would cancel the row's task instead, and a
        provider call that absorbs the cancellation (its retry and timeout handling) ends
        the row normally, the interrupt lost and the batch run to its end."""
        received.append(signum)
        raise KeyboardInterrupt

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}  # main thread
    try:
        summary = run_batch(
            source,
            args.out,
            pipeline,
            engine=args.engine,
            ray=ray,
            resume=args.resume,
            overwrite=args.overwrite,
            note=lambda message: print(f"rerankit batch: {message}", file=sys.stderr),
            progress=progress,
            top_k=args.top_k,
            fields=input_fields(args),
            keep_candidates=not args.no_candidates,
            query_field=args.query_field,
            query_id_field=args.query_id_field,
            candidates_field=args.candidates_field,
        )
    except OutputRefused as exc:  # a refusal before any work: a usage error
        raise UsageError(str(exc)) from None
    except BatchInterrupted as stopped:
        return interrupted(args, stopped.summary, received)
    except KeyboardInterrupt:  # before the output was opened (loading the models)
        return interrupted(args, None, received)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    print(f"rerankit batch: wrote {args.out}: {summary}", file=sys.stderr)
    for text, rows in summary.notes.items():  # the pipeline's settings: said once
        print(f"rerankit batch: note ({rows} rows): {text}", file=sys.stderr)
    for error in summary.errors[:3]:
        print(f"  error: {error}", file=sys.stderr)
    if summary.failures > 3:
        more = f"see {args.summary}" if args.summary else "all are in --out; --summary FILE"
        print(f"  ... and {summary.failures - 3} more ({more})", file=sys.stderr)
    if args.summary:
        summary.write(args.summary)
    failed, status = summary.failed_rows(args.strict), summary.status(args.strict)
    if args.strict and summary.degraded:
        count = "counts" if summary.degraded == 1 else "count"
        print(
            f"  --strict: {counted(summary.degraded, 'degraded row')} {count} as failed",
            file=sys.stderr,
        )
    if status:  # why, in one line a log grep finds
        print(
            f"rerankit batch: exit status {status}: {failed} of the "
            f"{summary.rows + summary.skipped} rows in {args.out} failed"
            + (" (every row)" if status == 1 else "")
            + ", each written with its error",
            file=sys.stderr,
        )
    return status


def interrupted(args: argparse.Namespace, summary: BatchSummary | None, signals: list) -> int:
    """Ctrl-C or SIGTERM: one line saying what was written and how to go on; the summary
    file (of the rows written) when asked; exit status 130 (SIGINT) or 143 (SIGTERM), as a
    shell reports them. The process
    ends next: the rows' tasks Ctrl-C left behind (provider calls cut short) are not
    reported by asyncio as errors when they are destroyed."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    parquet = input_format(args.out) == "parquet"  # cannot be resumed: started again
    flag, other = ("--overwrite", "--resume") if parquet else ("--resume", "--overwrite")
    again = [a for a in args.argv if a != other]
    again += [] if flag in again else [flag]
    if summary is None:
        done = f"nothing written to {args.out}"
    else:
        done = (
            f"{counted(summary.rows + summary.skipped, 'row')} in {args.out} "
            f"({summary.rows} this run, "
            f"{summary.failures} failed)"
        )
        if args.summary:
            summary.write(args.summary)
            done += f"; summary in {args.summary}"
    if summary is None and args.summary:
        done += f"; no {args.summary} (no row was written)"
    signum = signals[0] if signals else signal.SIGINT
    what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    how = (
        "a Parquet --out cannot be resumed (write .jsonl for that); start again with"
        if parquet
        else "go on with"
    )
    print(
        f"rerankit batch: {what}: {done}; {how}: {shlex.join(['rerankit', *again])}",
        file=sys.stderr,
    )
    return 128 + int(signum)


def row_documents(path: str, args: argparse.Namespace) -> Iterator[Any]:
    """The candidates of the batch rows in ``path`` by ``--candidates-field``
    (:func:`~rerankit.batch.io.row_candidates`, which refuses rows without them)."""
    return row_candidates(path, args.candidates_field)


def ray_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The flags only ``--engine ray`` reads, with their values (None: not given)."""
    return {
        "--workers": args.workers,
        "--num-cpus": args.num_cpus,
        "--num-gpus": args.num_gpus,
        "--address": args.address,
    }
