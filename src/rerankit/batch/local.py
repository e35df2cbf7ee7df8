"""``run_batch``: a file (or list) of rows reranked into another, in this process (the
``local`` engine) or on Ray; an existing output refused, started again or resumed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..api import load
from ..errors import InputError, no_such_file
from .io import input_format, read_rows, write_rows
from .ray import RayOptions, declared, ray_rows
from .resume import BatchInterrupted, output_rows, skip_finished
from .rows import BatchSummary, chunks, rerank_rows

__all__ = ["run_batch"]

logger = logging.getLogger(__name__)


def run_batch(
    source: str | Path | list[Mapping[str, Any]],
    output: str | Path,
    pipeline: Any = "hybrid",
    *,
    engine: str = "local",
    ray: RayOptions | None = None,
    resume: bool = False,
    overwrite: bool = False,
    note: Callable[[str], None] | None = None,
    **options: Any,
) -> BatchSummary:
    """Rerank every row of ``source`` (a file, or a list of rows) into ``output`` with the
    ``local`` engine (this process) or ``ray`` (see :func:`rerank_dataset`). How the rows
    are run is ``ray`` (a :class:`RayOptions`) or its fields as keywords: both engines read
    ``batch_size`` rows at a time and keep up to ``concurrency`` of them in flight; the
    ``ray`` engine also reads ``workers``, ``num_cpus``, ``num_gpus`` and ``address``. The
    other ``options`` go to ``rerank`` (``top_k``, ``fields``, ``text_field``, ...), but
    ``keep_candidates=False``, which leaves each row's ``candidates`` out of the output.

    An ``output`` that already holds rows is refused unless ``overwrite=True`` (start it
    again) or ``resume=True`` (JSON Lines only: skip the input rows already written, whose
    query ids and queries must match, drop a last line cut short, and append the rest;
    ``note`` is told how many were skipped). Ctrl-C raises :class:`BatchInterrupted`, whose
    ``summary`` counts the rows written; those are whole lines, so a resumed run goes on
    from them."""
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
    finished, keep = output_rows(output, resume=resume, overwrite=overwrite)
    rows: Any = source
    if finished:
        rows = skip_finished(read_rows(path) if path else source, finished, output, path)
        message = f"{output}: {len(finished)} rows already written, skipped; appending the rest"
        logger.info(message)
        if note is not None:
            note(message)
    started = time.perf_counter()
    summary = BatchSummary(skipped=len(finished))
    if engine == "ray":
        spec = declared(pipeline)  # a pipeline file's relative paths from its folder
        data = list(rows) if finished else rows  # Ray reads the rows left as a list
        results = ray_rows(data, spec, settings, options, path)
    else:
        reranker = load(pipeline)
        started = time.perf_counter()
        if not finished and path is not None:
            rows = read_rows(path)
        batch, concurrency = settings.batch_size, settings.concurrency
        results = (
            row
            for chunk in chunks(iter(rows), max(batch, concurrency))
            for row in rerank_rows(reranker, chunk, concurrency=concurrency, source=path, **options)
        )
    try:
        write_rows(output, results, summary, keep=keep or None)
    except KeyboardInterrupt:
        summary.seconds, summary.interrupted = time.perf_counter() - started, True
        raise BatchInterrupted(summary, output) from None
    summary.seconds = time.perf_counter() - started
    return summary
