"""``rerankit rank`` (one query) and ``rerankit batch`` (many)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._jsonl import dumps_strict, numbered_records, read_text
from ..api import default_reranker, load
from ..backends.bundled import BUNDLED_NAMES
from ..backends.hub import hub_cache_dir, in_hub_cache
from ..batch import RayOptions, quiet_ray_logs, read_rows, run_batch
from ..batch.beir import beir_rows
from ..errors import InputError, InvalidDocumentError
from ..scorers.local import LocalModelScorer
from .args import (
    add_address_argument,
    add_backend_arguments,
    add_candidates_argument,
    add_data_argument,
    add_field_arguments,
    add_first_stage_argument,
    add_language_argument,
    add_old_spelling,
    add_refused_flag,
    examples,
    given,
    input_fields,
    non_negative_float,
    positive_int,
    query_text,
    refuse_unused,
    remember_defaults,
    say_renamed,
)
from .console import note
from .files import need_collection, need_file, need_first_stage, need_reranker
from .output import json_safe, records, table
from .pipelines import pipeline_spec

__all__ = ["add_commands", "cmd_batch", "cmd_rank", "default_reranker_name", "reranker_from"]


def announce_model_loading(reranker: Any) -> None:
    """One line on stderr before a rerank whose model is named by a Hugging Face hub id:
    read from the local Hugging Face cache when it is there, else downloaded into it; the
    bundled model and local folders load without a word."""
    hub = sorted(
        {
            s.model_id
            for s in reranker.scorers()
            if isinstance(s, LocalModelScorer)
            and not s.loaded
            and s.model_id
            and s.model_id not in BUNDLED_NAMES
            and not Path(s.model_id).exists()
        }
    )
    cached = [model for model in hub if in_hub_cache(model)]
    if cached:
        print(
            f"rerankit: loading {', '.join(cached)} from the Hugging Face cache "
            f"({hub_cache_dir()})",
            file=sys.stderr,
        )
    if fetched := [model for model in hub if model not in cached]:
        print(
            f"rerankit: loading {', '.join(fetched)} from the Hugging Face hub (downloaded "
            f"into its cache, {hub_cache_dir()}, on first use)",
            file=sys.stderr,
        )


def cmd_rank(args: argparse.Namespace) -> int:
    if sys.stdout is None:
        raise InputError("standard output is closed; nowhere to write the ranking")
    form = output_format(args)
    if args.input != "-":
        need_file(args.input, "--input", "the documents to rank")
    need_reranker(args.reranker)
    reranker = reranker_from(args)  # a bad pipeline file is reported before reading input
    if args.input == "-":
        if sys.stdin is None:
            raise InputError("standard input is closed; pass --input FILE")
        if sys.stdin.isatty():
            print(
                "rerankit: reading documents from standard input (JSON Lines or a JSON array; "
                "end with Ctrl-D), or pass --input FILE",
                file=sys.stderr,
            )
        source, numbered = "stdin", numbered_records(sys.stdin.read(), "stdin")
    else:
        source, numbered = args.input, numbered_records(read_text(args.input), args.input)
    items = [item for _, item in numbered]
    if items and all(isinstance(i, dict) and {"query", "candidates"} <= set(i) for i in items):
        raise InputError(
            f"{args.input if args.input != '-' else 'stdin'} holds batch rows (query and "
            "candidates on each line): rerank them with `rerankit batch --input FILE --out OUT`"
        )
    refuse_absent_id_field(args, items, f"--input {source}")
    announce_model_loading(reranker)
    try:
        result = reranker.rerank(args.query, items, top_k=args.top_k, fields=input_fields(args))
    except InvalidDocumentError as exc:
        raise located(exc, source, [n for n, _ in numbered]) from None
    for w in result.warnings:
        print(f"rerankit: warning: {w}", file=sys.stderr)
    out = sys.stdout
    if form == "table":
        if args.explain:
            out.write(result.explain_table() + "\n")
        else:
            table(result, out)
        return 0
    for rec in records(result, args.score_field, args.details, explain=args.explain):
        out.write(json.dumps(json_safe(rec), ensure_ascii=False, allow_nan=False) + "\n")
    return 0


def output_format(args: argparse.Namespace) -> str:
    """``--format``, else a table with ``--explain`` and JSON Lines without; the flags that
    shape JSON Lines records refused with a table, and ``--score-field`` with
    ``--details`` (whose records hold the score as ``score``)."""
    form = args.format or ("table" if args.explain else "jsonl")
    if form == "table":
        how = "--format table" if args.format else "--explain (a table unless --format jsonl)"
        refuse_unused(
            given(args, "details", "score_field"),
            f"with {how}, which shows rank, score, id and text (with --explain, each "
            "signal's part): --details and --score-field shape JSON Lines records (--format "
            "jsonl)",
        )
    elif args.details:
        refuse_unused(
            given(args, "score_field"), "with --details: its records hold the score as 'score'"
        )
    return form


def refuse_absent_id_field(args: argparse.Namespace, documents: Iterable[Any], source: str) -> None:
    """A :class:`~rerankit.cli.args.UsageError` when ``--id-field`` names a field that none
    of ``documents`` (read from ``source``) has, so every result's id would be empty. The
    documents are read until one has it."""
    if given(args, "id_field")["--id-field"] is None:
        return
    seen: set[str] = set()
    for doc in documents:
        if isinstance(doc, Mapping):
            if args.id_field in doc:
                return
            seen.update(map(str, list(doc)[:20]))
    fields = ", ".join(repr(f) for f in sorted(seen)[:20])
    refuse_unused(
        given(args, "id_field"),
        f"with {source}: no document there has a {args.id_field!r} field "
        f"({'fields present: ' + fields if seen else 'no document is an object'})",
    )


def located(exc: InvalidDocumentError, source: str, lines: list[int | None]) -> Exception:
    """``exc`` (``document 0: ...``, the 0-based index a Python caller knows) said where
    the document is in the file read: ``FILE:3: ...`` (a line), or ``FILE: item 1 of the
    JSON array: ...``."""
    if not 0 <= exc.index < len(lines):
        return exc
    line = lines[exc.index]
    where = f":{line}" if line is not None else f": item {exc.index + 1} of the JSON array"
    detail = str(exc).removeprefix(f"document {exc.index}: ")
    return InvalidDocumentError(f"{source}{where}: {detail}", index=exc.index, field=exc.field)


def reranker_from(args: argparse.Namespace) -> Any:
    """``--reranker`` (a name, a pipeline file or a model), else the default, with
    ``--language``, ``--backend`` and ``--quantize`` applied."""
    return load(pipeline_spec(args.reranker or default_reranker_name(), args))


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
                args, "text_field", "id_field", "first_stage_field", "first_stage_lower_is_better"
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
    set_flags = {k: v for k, v in vars(args).items() if v is not None}  # Ray's: as given
    ray, _ = RayOptions.split(None, set_flags)
    summary = run_batch(
        source,
        args.out,
        pipeline,
        engine=args.engine,
        ray=ray,
        top_k=args.top_k,
        fields=input_fields(args),
    )
    print(f"rerankit batch: wrote {args.out}: {summary}", file=sys.stderr)
    for error in summary.errors[:3]:
        print(f"  error: {error}", file=sys.stderr)
    if args.summary:
        Path(args.summary).write_text(dumps_strict(summary.to_dict(), indent=2) + "\n")
    return 1 if summary.failures else 0


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


def default_reranker_name() -> str:
    """The default reranker (``hybrid`` with the torch extra, else ``bm25``, said on stderr)."""

    name, note = default_reranker()
    if note:
        print(f"rerankit: note: {note}", file=sys.stderr)
    return name


#: what ``--reranker`` takes, for ``rank`` and ``batch``
RERANKER_HELP = (
    "a reranker name (`rerankit rerankers` lists them; - and _ alike), a pipeline file "
    "(.toml, .yaml, .json), or a model folder or Hugging Face hub id (a cross-encoder, "
    "embedding model or causal-LM reranker, told apart by its config.json); default: hybrid "
    "(the bundled MiniLM on passages and whole documents, BM25 and term proximity, "
    "calibrated), or bm25 without the torch extra"
)


def add_commands(sub: Any) -> None:
    """``rank`` and ``batch``."""
    rank = sub.add_parser(
        "rank",
        help="rerank documents from a JSONL file or JSON array",
        description="Read documents (JSON Lines or a JSON array of strings or objects), "
        "rerank them for the query and write JSON Lines, best first.",
        **examples(
            'rerankit rank -q "solar power" -i docs.jsonl --top-k 10',
            'rerankit rank -q "solar power" -i docs.jsonl -r bm25 --format table  # no model',
            'rerankit rank -q "solar power" -i docs.jsonl -r pipeline.toml --explain',
        ),
    )
    rank.add_argument(
        "--query",
        "-q",
        required=True,
        type=query_text,
        help="the search query (an empty one is refused, as batch and the service refuse it)",
    )
    rank.add_argument("--input", "-i", default="-", help="input file, or - for stdin (default)")
    rank.add_argument(
        "--reranker",
        "-r",
        default=None,
        help=RERANKER_HELP,
    )
    add_old_spelling(rank, "--config", "-c", dest="reranker", now="--reranker")
    add_refused_flag(
        rank,
        "--first-stage",
        why="rank reranks the documents --input gives and takes no first stage; name the "
        "field holding each one's first-stage score with --first-stage-field, or rerank a "
        "BEIR folder's queries over a run with `rerankit batch --data FOLDER --first-stage "
        "RUN`",
    )
    rank.add_argument("--top-k", "-k", type=positive_int, default=None, help="keep only the best K")
    add_field_arguments(rank)
    add_language_argument(rank)
    add_backend_arguments(rank)
    rank.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default=None,
        help="jsonl (the default without --explain): the input objects plus the score; "
        "table (the default with --explain): for people",
    )
    rank.add_argument(
        "--details",
        action="store_true",
        help="write result records (index, rank, score, id, text, scores, flags) instead of "
        "the input objects (JSON Lines only)",
    )
    rank.add_argument(
        "--explain",
        action="store_true",
        help="show each document's per-strategy raw, normalised, weight and contribution: a "
        "table, or with --format jsonl an explanation field on each line",
    )
    rank.set_defaults(func=cmd_rank)
    remember_defaults(rank)

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
        "--batch-size", type=positive_int, default=16, help="rows per call of a worker (16)"
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
    bat.add_argument("--summary", default=None, help="also write the summary as JSON here")
    bat.set_defaults(func=cmd_batch)
    remember_defaults(bat)
