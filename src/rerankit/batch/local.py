"""``run_batch``: a file (or list) of rows reranked into another, in this process (the
``local`` engine) or on Ray; an existing output refused, started again or resumed."""

from __future__ import annotations

import io
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._words import counted
from ..api import load
from ..errors import InputError, no_such_file, said_for
from .io import input_format, read_lines, read_rows, tell_blank_lines, write_rows
from .names import DEFAULT_RERANKER, earlier_names
from .ray import RayOptions, declared, ray_rows
from .resume import (
    PIPELINE_KEY,
    SETTINGS_KEY,
    BatchInterrupted,
    output_rows,
    pipeline_settings,
    pipeline_tag,
    skip_finished,
)
from .rows import BatchSummary, RowFields, chunks, rerank_rows

__all__ = ["run_batch"]

logger = logging.getLogger(__name__)

#: what the rows after those already written give when there are none
_NONE_LEFT: Any = object()


def run_batch(
    source: str | Path | Iterable[Mapping[str, Any]] | io.TextIOBase,
    out: str | Path | None = None,
    reranker: Any = DEFAULT_RERANKER,
    *,
    engine: str = "local",
    ray: RayOptions | None = None,
    resume: bool = False,
    overwrite: bool = False,
    note: Callable[[str], None] | None = None,
    progress: Callable[[BatchSummary], None] | None = None,
    query_field: str = "query",
    query_id_field: str = "query_id",
    candidates_field: str = "candidates",
    **options: Any,
) -> BatchSummary:
    """Rerank every row of ``source`` (a file, a list of rows, or any iterable of them:
    a generator is read as it goes, so rows can stream from anywhere; or an open text
    stream of JSON Lines, such as ``sys.stdin``) into ``out`` (a ``.jsonl`` or ``.parquet``
    file) with ``reranker`` (a registered name, a pipeline file, a spec mapping or, on the
    local engine, a built reranker; default ``hybrid``), on
    the ``local`` engine (this process) or ``ray`` (see :func:`rerank_dataset`; a file or a
    list). How the rows are run is ``ray`` (a :class:`RayOptions`) or its fields as
    keywords: both engines keep up to ``concurrency`` rows in flight; the ``ray`` engine
    also reads ``batch_size`` (rows per call of a worker), ``workers``, ``num_cpus``,
    ``num_gpus`` and ``address``. The local engine writes and flushes each row as soon as
    it and the rows before it are done (in blocks of ``concurrency`` rows when above 1).
    ``query_field``, ``query_id_field`` and ``candidates_field`` name the rows' fields
    (default ``query``, ``query_id``, ``candidates``); the output keeps them. The other
    ``options`` go to ``rerank`` (``top_k``, ``fields``, ``text_field``, ...), but
    ``keep_candidates=False``, which leaves each row's candidates out of the output.
    ``progress`` is called with the :class:`BatchSummary` after each row written.

    An ``out`` that already holds rows is refused unless ``overwrite=True`` (start it
    again) or ``resume=True`` (JSON Lines only: skip the input rows already written, whose
    query ids and queries must match, drop a last line cut short, and append the rest;
    ``note`` is told how many were skipped, how many of those hold an error, and of a cut
    line dropped). Skipped rows with an error are not ranked again (``overwrite=True``
    ranks every row again): the summary counts them as ``skipped_failures``, so its
    ``exit_status`` says 1 or 3 while the output holds failed rows. Ctrl-C raises
    :class:`BatchInterrupted`, whose ``summary`` counts the rows written; those are whole
    lines, so a resumed run goes on from them. Each output row names the pipeline that
    ranked it (``reranked_by``: ``NAME@FINGERPRINT``, see :func:`.resume.pipeline_tag`),
    and resuming an output that another pipeline wrote is refused (rows of an earlier
    rerankit, which recorded none, are resumed with a warning). ``output=`` and
    ``pipeline=``, the earlier names of ``out`` and ``reranker``, are still taken."""
    output, pipeline = earlier_names(out, reranker, options, call="run_batch")
    if output is None:
        raise TypeError("run_batch() missing out: the .jsonl or .parquet file to write")
    settings, options = RayOptions.split(ray, options)  # checks batch_size and concurrency
    input_format(output)  # both names checked before any work
    path = str(source) if isinstance(source, (str, Path)) else None  # errors name it
    if path is not None:
        input_format(path)
        if not Path(path).is_file():
            raise InputError(no_such_file(path, "the batch rows to rerank"))
    if engine not in ("local", "ray"):
        raise InputError(f"engine must be 'local' or 'ray', got {engine!r}")
    if resume and not settings.preserve_order:
        raise InputError("resume=True needs the rows written in input order (preserve_order)")
    names = RowFields(query_field, query_id_field, candidates_field)
    tag, recorded = pipeline_tag(pipeline, options), pipeline_settings(pipeline, options)
    held, unchecked = output_rows(
        output, resume=resume, overwrite=overwrite, names=names, pipeline=tag, settings=recorded
    )
    finished, keep, failed = held.keys, held.end, held.failed
    summary = BatchSummary(skipped=len(finished), skipped_failures=failed)

    def blank(lineno: int) -> None:
        summary.blank_lines += 1

    rows: Any = read_lines(source, blank) if isinstance(source, io.TextIOBase) else source
    if finished:
        read = read_rows(path, blank) if path else rows
        rows = skip_finished(read, held, output, path, names)
        message = f"{output}: {counted(len(finished), 'row')} already written, skipped"
        if failed:
            again = said_for("overwrite=True", "--overwrite")
            message += (
                f" ({failed} of them with an error: not ranked again, and counted as failed; "
                f"{again} ranks every row again)"
            )
        rest = next(rows, _NONE_LEFT)
        if rest is _NONE_LEFT:
            message += "; every input row is written: the output is already complete"
        else:
            rows = itertools.chain([rest], rows)
            message += "; appending the rest"
        if unchecked:
            message += (
                f" (warning: {unchecked} of them record no pipeline, written by an earlier "
                f"rerankit: not checked against this run's, {tag})"
            )
        blind = held.digests.count(None)
        if blind:
            message += (
                f" (warning: {blind} of them record neither their candidates nor a digest of "
                "them, written by an earlier rerankit without the candidates: their candidates "
                "not checked against the input's)"
            )
        cut = Path(output).stat().st_size - keep
        if cut > 0:
            message += f" (a last line cut short, {cut} bytes, dropped: its row is run again)"
        logger.info(message)
        if note is not None:
            note(message)
    options.update(query_field=query_field, query_id_field=query_id_field)
    options["candidates_field"] = candidates_field
    started = time.perf_counter()
    if engine == "ray":
        spec = declared(pipeline)  # a pipeline file's relative paths from its folder
        streamed = finished or isinstance(rows, Iterator)  # (a file, a list or a Dataset)
        data = list(rows) if streamed else rows  # Ray reads the rows left as a list
        if not streamed and path is not None and input_format(path) == "jsonl":
            tell_blank_lines(path, blank)  # skipped by Ray's reader: counted here
        results = ray_rows(data, spec, settings, options, path)
    else:
        reranker = load(pipeline)
        started = time.perf_counter()
        if not finished and path is not None:
            rows = read_rows(path, blank)
        concurrency = settings.concurrency  # a row written as soon as those before it are
        results = (
            row
            for chunk in chunks(iter(rows), concurrency)
            for row in rerank_rows(reranker, chunk, concurrency=concurrency, source=path, **options)
        )
    tagged = ({**row, PIPELINE_KEY: tag, SETTINGS_KEY: recorded} for row in results)
    try:
        write_rows(
            output,
            tagged,
            summary,
            keep=keep or None,
            progress=progress,
            json_fields=(candidates_field,),
        )
    except KeyboardInterrupt:
        summary.seconds, summary.interrupted = time.perf_counter() - started, True
        raise BatchInterrupted(summary, output) from None
    summary.seconds = time.perf_counter() - started
    return summary
