"""``rerankit rank``: one query's candidates, from a file or stdin (``batch``, in
:mod:`rerankit.cli.batch`, reranks many)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import registry
from .._jsonl import numbered_records, read_text
from .._words import counted
from ..api import PIPELINE_SUFFIXES, default_reranker, fell_back, load, pipeline_name
from ..backends.bundled import BUNDLED_NAMES
from ..backends.detect import model_kind
from ..backends.hub import hub_cache_dir, hub_reachable, in_hub_cache
from ..errors import DeadlineError, InputError, InvalidDocumentError
from ..rerankers.deadline import said_as
from ..scorers.local import LocalModelScorer, load_models
from .args import (
    embedding_cache_if_asked,
    given,
    refuse_unused,
)
from .fields import input_fields
from .files import need_file, need_reranker
from .output import (
    DEGRADED_FIELD,
    SCALE_FIELD,
    console_stdout,
    json_safe,
    records,
    table,
    utf8_stdout,
    with_traceback_hint,
)
from .pipelines import pipeline_spec, settings_not_pipeline

__all__ = [
    "cmd_rank",
    "default_reranker_name",
    "reranker_from",
    "with_output",
]


def announce_model_loading(reranker: Any) -> None:
    """One line on stderr before a rerank whose model is named by a Hugging Face hub id:
    read from the local Hugging Face cache when it is there, else downloaded into it; the
    bundled model and local folders load without a word, and so does everything without
    torch, or offline (``HF_HUB_OFFLINE``, or a hub that does not answer): nothing is
    downloaded then (the load fails saying what it needs, and what to do offline)."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return
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
    if (fetched := [model for model in hub if model not in cached]) and hub_reachable():
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
    embedding_cache_if_asked(args)  # none unless asked: a ranking's documents are new
    # without -r: the default, or the bm25 fallback (degraded, as rerankit.rerank()'s is)
    name, fallback = (args.reranker, None) if args.reranker else default_reranker()
    # a bad pipeline file is reported before reading input
    reranker = reranker_from(argparse.Namespace(**{**vars(args), "reranker": name}))
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
    if args.deadline is not None:  # the budget is for reranking, not for loading models
        load_models(reranker)
    try:
        result = reranker.rerank(
            args.query, items, top_k=args.top_k, fields=input_fields(args), deadline=args.deadline
        )
    except InvalidDocumentError as exc:
        raise located(exc, source, [n for n, _ in numbered]) from None
    except DeadlineError as exc:  # by the name it was given, as check says it (not its type)
        raise said_as(exc, reranker, pipeline_name(name)) from None
    if fallback is not None:
        result = fell_back(result, fallback)
    for w in with_traceback_hint(result.warnings, "rank", args.verbose):
        print(f"rerankit: warning: {w}", file=sys.stderr)
    if said := usage_line(result.usage):
        print(f"rerankit: {said}", file=sys.stderr)
    if args.strict and result.degraded and result.unusable is None:
        print(
            "rerankit rank: error: degraded result (--strict): "
            + (
                "the default hybrid cannot run here (the warning above says what it needs)"
                if fallback is not None
                else "a scorer or rule stage failed (the warnings above say which)"
            )
            + "; nothing written",
            file=sys.stderr,
        )
        return 1
    if result.unusable is not None:  # input order with placeholder scores: not a ranking
        print(
            f"rerankit rank: error: no ranking: {result.unusable} (the warnings above say why); "
            "nothing written",
            file=sys.stderr,
        )
        return 1
    if result.degraded:
        print(f"rerankit: warning: {degraded_line(form, fallback is not None)}", file=sys.stderr)
    if form == "table":
        text = result.explain_table() + "\n" if args.explain else table(result)
        console_stdout(text).write(text)
        return 0
    if clash := sum(isinstance(i, dict) and SCALE_FIELD in i for i in items):
        print(
            f"rerankit: warning: {counted(clash, 'input object')} already had a {SCALE_FIELD!r} "
            "field: the output holds the scores' scale there instead",
            file=sys.stderr,
        )
    if not args.details and (
        clash := sum(isinstance(i, dict) and DEGRADED_FIELD in i for i in items)
    ):
        print(
            f"rerankit: warning: {counted(clash, 'input object')} already had a {DEGRADED_FIELD!r} "
            "field, where rank marks a degraded ranking's lines: "
            + (
                "the output holds true there instead"
                if result.degraded
                else "theirs is passed on as it was (this ranking did not degrade)"
            ),
            file=sys.stderr,
        )
    out = utf8_stdout()  # JSON Lines is UTF-8 whatever the console's encoding
    for rec in records(result, args.score_field, args.details, explain=args.explain):
        out.write(json.dumps(json_safe(rec), ensure_ascii=False, allow_nan=False) + "\n")
    return 0


def degraded_line(form: str, fell_back: bool = False) -> str:
    """The stderr line of a degraded ``rank`` (a scorer or a stage failed for some documents
    or all, or did not finish by ``--deadline``; or, ``fell_back``, bm25 ranked in place of
    the default hybrid), saying how JSON Lines marks it."""
    said = (
        "degraded ranking: bm25 ranked in place of the default hybrid, which cannot run here "
        "(the warning above says what it needs)"
        if fell_back
        else "degraded ranking: a scorer or stage failed for some documents or all, or did "
        "not finish (the warnings above say which, and what ranked in its place)"
    )
    if form != "table":
        said += f'; each line says "{DEGRADED_FIELD}": true'
    return said + " (--strict makes it an error)"


def usage_line(usage: Mapping[str, int]) -> str | None:
    """What an LLM cost this rank, as ``batch``'s summary says it (``LLM usage: calls 12,
    ...``), and that a rerun read every judgment from the judgment cache; None without."""
    if not (usage.get("calls") or usage.get("cache_hits")):
        return None
    said = "LLM usage: " + ", ".join(f"{k} {v}" for k, v in sorted(usage.items()))
    if not usage.get("calls"):
        said += " (every judgment from the judgment cache: no call, no tokens)"
    return said


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
    of ``documents`` (read from ``source``, until one has it) has: every id would be empty."""
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
    if exc.index is None or not 0 <= exc.index < len(lines):
        return exc
    line = lines[exc.index]
    where = f":{line}" if line is not None else f": item {exc.index + 1} of the JSON array"
    detail = str(exc).removeprefix(f"document {exc.index}: ")
    return InvalidDocumentError(f"{source}{where}: {detail}", index=exc.index, field=exc.field)


def reranker_from(args: argparse.Namespace) -> Any:
    """``--reranker`` (a name, a pipeline file or a model), else the default, with
    ``--language``, ``--backend`` and ``--quantize`` applied, and ``--output`` (``rank``)."""
    if args.reranker and (note := settings_not_pipeline(args.reranker, "--reranker")):
        raise InputError(note)
    if getattr(args, "output", None) is not None:
        return load(with_output(args.reranker or default_reranker_name(), args))
    return load(pipeline_spec(args.reranker or default_reranker_name(), args))


def with_output(spec: Any, args: argparse.Namespace) -> Any:
    """The cross-encoder ``spec`` names (``cross-encoder``, or a model folder or hub id whose
    files say it is one) scoring with ``output`` (``logit`` or ``sigmoid``, the
    ``output`` of ``CrossEncoderScorer`` and of a pipeline file's scorer), with ``--backend``
    and ``--quantize``; anything else has no such choice, and is an
    :class:`InputError` saying so."""
    output, language = args.output, args.language
    options = {k: v for k in ("backend", "quantize") if (v := getattr(args, k)) is not None}
    name = registry.canonical("reranker", spec) if isinstance(spec, str) else None
    model: dict[str, Any] = {}
    if name is None and Path(spec).suffix.lower() in PIPELINE_SUFFIXES:
        raise InputError(
            f"--output applies to a cross-encoder given with -r; {spec} is a pipeline file: "
            f'set output = "{output}" on its cross_encoder scorer there'
        )
    if name is None:
        kind, detected = model_kind(str(spec))
        model = {"model": str(spec), **detected}
    else:
        kind = name.replace("-", "_")
    if kind != "cross_encoder":
        raise InputError(
            f"--output applies to a cross-encoder (a model whose config.json has a "
            f"sequence-classification head, or -r cross-encoder); {spec!r} is "
            + (f"a {kind.replace('_', '-')} model" if name is None else "not one")
        )
    if language:
        raise InputError("--language applies to lexical signals; a cross-encoder reads none")
    return {"scorer": {"type": "cross_encoder", **model, **options, "output": output}}


def default_reranker_name() -> str:
    """The default reranker (``hybrid`` with the torch extra, else ``bm25``, said on stderr)."""

    name, note = default_reranker()
    if note:
        print(f"rerankit: note: {note}", file=sys.stderr)
    return name
