"""``run_batch``: a file (or list) of rows reranked into another, in this process (the
``local`` engine) or on Ray."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..api import load
from ..errors import InputError
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
    workers: int = 1,
    batch_size: int = 16,
    address: str | None = None,
    num_cpus: float | None = None,
    num_gpus: float | None = None,
    concurrency: int = 1,
    **options: Any,
) -> BatchSummary:
    """Rerank every row of ``source`` (a file, or a list of rows) into ``output`` with the
    ``local`` engine (this process) or ``ray`` (see :func:`rerank_dataset`). Both read
    ``batch_size`` rows at a time and keep up to ``concurrency`` of them in flight."""
    if batch_size < 1 or concurrency < 1:
        raise InputError(f"batch_size and concurrency must be >= 1: {batch_size}, {concurrency}")
    input_format(output)  # both names checked before any work
    if isinstance(source, (str, Path)):
        input_format(source)
        if not Path(source).is_file():
            raise InputError(f"{source}: no such file")
    if engine == "ray":
        ray = RayOptions(
            workers=workers,
            batch_size=batch_size,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            address=address,
            concurrency=concurrency,
        )
        return rerank_dataset(source, pipeline, output=output, ray=ray, **options)
    if engine != "local":
        raise InputError(f"engine must be 'local' or 'ray', got {engine!r}")

    reranker = load(pipeline)
    started = time.perf_counter()
    rows = read_rows(source) if isinstance(source, (str, Path)) else iter(source)
    results = (
        row
        for chunk in chunks(rows, max(batch_size, concurrency))
        for row in rerank_rows(reranker, chunk, concurrency=concurrency, **options)
    )
    summary = write_rows(output, results)
    summary.seconds = time.perf_counter() - started
    return summary
