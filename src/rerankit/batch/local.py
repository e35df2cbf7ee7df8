"""``run_batch``: a file (or list) of rows reranked into another, in this process (the
``local`` engine) or on Ray."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..api import load
from ..errors import InputError, no_such_file
from .io import input_format, read_rows, write_rows
from .ray import RayOptions, rerank_dataset
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
    **options: Any,
) -> BatchSummary:
    """Rerank every row of ``source`` (a file, or a list of rows) into ``output`` with the
    ``local`` engine (this process) or ``ray`` (see :func:`rerank_dataset`). How the rows
    are run is ``ray`` (a :class:`RayOptions`) or its fields as keywords: both engines read
    ``batch_size`` rows at a time and keep up to ``concurrency`` of them in flight; the
    ``ray`` engine also reads ``workers``, ``num_cpus``, ``num_gpus`` and ``address``. The
    other ``options`` go to ``rerank`` (``top_k``, ``fields``, ``text_field``, ...)."""
    settings, options = RayOptions.split(ray, options)  # checks batch_size and concurrency
    input_format(output)  # both names checked before any work
    if isinstance(source, (str, Path)):
        input_format(source)
        if not Path(source).is_file():
            raise InputError(no_such_file(source, "the batch rows to rerank"))
    if engine == "ray":
        return rerank_dataset(source, pipeline, output=output, ray=settings, **options)
    if engine != "local":
        raise InputError(f"engine must be 'local' or 'ray', got {engine!r}")

    reranker = load(pipeline)
    started = time.perf_counter()
    path = str(source) if isinstance(source, (str, Path)) else None  # errors name it
    rows = read_rows(source) if path is not None else iter(source)
    batch, concurrency = settings.batch_size, settings.concurrency
    results = (
        row
        for chunk in chunks(rows, max(batch, concurrency))
        for row in rerank_rows(reranker, chunk, concurrency=concurrency, source=path, **options)
    )
    summary = write_rows(output, results)
    summary.seconds = time.perf_counter() - started
    return summary
