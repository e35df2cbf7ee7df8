"""The ``ray`` engine (extra ``ray``): Ray Data reads the input, an actor pool whose actors
each build the pipeline once from its declared form reranks it, and results stream back
in input order."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .._optional import require
from ..api import PIPELINE_SUFFIXES, load
from ..config import read_pipeline
from ..errors import InputError, flags_first, said_for
from ..scorers.local import load_models
from .io import (
    decode_json_columns,
    input_format,
    json_columns,
    parse_line,
    public_fields,
    write_rows,
)
from .names import DEFAULT_RERANKER, earlier_names
from .ray_cluster import check_resources, numbered_lines, quiet_ray_logs, start_ray, worker_env
from .rows import rerank_rows

__all__ = ["RayOptions", "declared", "iter_ray", "quiet_ray_logs", "ray_rows", "rerank_dataset"]

logger = logging.getLogger(__name__)


def declared(pipeline: Any) -> Any:
    """What a worker needs to build ``pipeline`` itself: a registered name, or the spec
    read from a pipeline file (so workers need not see the file; its relative ``model``,
    ``embedding`` and ``reranker`` paths made absolute from the file's folder, as ``load``
    reads them, not from the workers' own), or a spec mapping.
    A reranker object cannot be shipped: pass its declared form."""

    if isinstance(pipeline, Path) or (
        isinstance(pipeline, str) and Path(pipeline).suffix.lower() in PIPELINE_SUFFIXES
    ):
        return read_pipeline(pipeline)
    if isinstance(pipeline, (str, Mapping)):
        return pipeline
    raise TypeError(
        "the ray engine builds the pipeline on each worker: pass a registered name, a "
        f"pipeline file or a spec mapping, not a {type(pipeline).__name__}"
    )


class _Worker:
    """A Ray Data actor: builds the pipeline once, then reranks batches of rows. Each
    output row travels as one JSON string (rows of any shape pass through Arrow)."""

    def __init__(
        self,
        spec: Any,
        options: Mapping[str, Any],
        lines: bool,
        concurrency: int = 1,
        source: str | None = None,
        command_line: bool = False,
        encoded: tuple[str, ...] = (),
    ) -> None:
        self.command_line = command_line  # messages worded for the command that started it
        with self._wording():
            self._build(spec)
        self.options = dict(options)
        self.lines = lines
        self.concurrency = concurrency
        self.source = source  # the file read, named in a row's error
        self.encoded = encoded  # a rerankit Parquet file's fields stored as JSON text

    def _wording(self) -> Any:
        """The driver's wording of messages (``--text-field NAME`` for a user of the
        command, ``text_field='NAME'`` in Python): a worker is another process, which the
        command's :func:`~rerankit.errors.flags_first` does not reach by itself."""
        return flags_first() if self.command_line else contextlib.nullcontext()

    def _build(self, spec: Any) -> None:
        self.reranker = load(spec)
        try:  # the models load once here, not inside the first batch's timed rows
            load_models(self.reranker)
        except Exception as exc:  # each row then fails with it, written and counted
            logger.warning("worker could not load its models: %s", exc)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.lines:  # one JSON Lines line per row, with its number
            texts, numbers = batch.column("text").to_pylist(), batch.column("line").to_pylist()
            rows = [parse_line(t, n) for t, n in zip(texts, numbers, strict=True)]
        else:
            rows = [decode_json_columns(row, self.encoded) for row in batch.to_pylist()]
        with self._wording():
            done = rerank_rows(
                self.reranker,
                rows,
                concurrency=self.concurrency,
                source=self.source,
                **self.options,
            )
        out = [json.dumps(row, default=str) for row in done]
        return pa.table({"rerankit_row": pa.array(out, type=pa.string())})


def _resources(reranker: Any) -> tuple[float, float]:
    """CPUs and GPUs one worker asks for, from its scorers' hardware profiles: the most
    threads any scorer is set to (1 when unset), and one GPU when a scorer is placed on
    CUDA (not for ``device = "auto"``: give ``--num-gpus`` for that)."""
    cpus, gpus = 1.0, 0.0
    for scorer in reranker.scorers():
        profile = getattr(scorer, "profile", None)
        if profile is None:
            continue
        if profile.threads:
            cpus = max(cpus, float(profile.threads))
        if str(profile.device).startswith("cuda"):
            gpus = 1.0
    return cpus, gpus


def _read(reader: Any, path: str) -> Any:
    """``reader(path)`` with read tasks that ask for no CPU: with as many actors as the
    cluster has CPUs (one per node, say), a read task asking for one would wait for a CPU
    the actors hold, and they for its rows."""
    try:
        return reader(path, num_cpus=0)
    except TypeError:  # a Ray without the named remote parameters of reads
        return reader(path, ray_remote_args={"num_cpus": 0})


def _ray_dataset(source: Any, rows: int) -> tuple[Any, bool]:
    """A Ray Dataset of the source and whether its rows are JSON Lines text (read ``rows``
    lines a block, each with its line number)."""
    ray_data = require("ray.data", "the ray engine")
    if isinstance(source, (str, Path)):
        if input_format(source) == "parquet":
            return _read(ray_data.read_parquet, str(source)), False
        return numbered_lines(str(source), rows), True
    if isinstance(source, list):
        return ray_data.from_items([dict(r) for r in source]), False
    return source, False  # a Ray Dataset already


@dataclass(frozen=True)
class RayOptions:
    """How the ``ray`` engine runs: ``workers`` actors, each building the pipeline once;
    ``batch_size`` rows per call of an actor, ``concurrency`` of them in flight at once
    (for pipelines that wait on a provider); ``num_cpus``/``num_gpus`` per actor (default:
    the pipeline's hardware profile); ``address`` of a cluster (default: a local Ray);
    ``preserve_order`` of the rows."""

    workers: int = 1
    batch_size: int = 16
    num_cpus: float | None = None
    num_gpus: float | None = None
    address: str | None = None
    preserve_order: bool = True
    concurrency: int = 1

    def __post_init__(self) -> None:
        if min(self.workers, self.batch_size, self.concurrency) < 1:
            raise InputError(
                "workers, batch_size and concurrency must be >= 1, got "
                f"{self.workers}, {self.batch_size} and {self.concurrency}"
            )
        for name in ("num_cpus", "num_gpus"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < float("inf"):
                raise InputError(f"{name} must be a number >= 0 (per actor), got {value}")

    @classmethod
    def split(
        cls, ray: RayOptions | None, options: Mapping[str, Any]
    ) -> tuple[RayOptions, dict[str, Any]]:
        """``ray`` with the options among ``options`` that name its fields set, and the
        rest (the rerank's own options)."""
        names = {f.name for f in fields(cls)}
        mine = {k: v for k, v in options.items() if k in names}
        rest = {k: v for k, v in options.items() if k not in names}
        return replace(ray or cls(), **mine), rest


def rerank_dataset(
    source: Any,
    reranker: Any = DEFAULT_RERANKER,
    *,
    out: str | Path | None = None,
    ray: RayOptions | None = None,
    **options: Any,
) -> Any:
    """Rerank with Ray Data: ``source`` is a Ray Dataset, a JSON Lines or Parquet path, or
    a list of rows; ``reranker`` a registered name, pipeline file or spec mapping (each
    actor builds it once). Without ``out``, returns a Ray Dataset of the output rows
    (lazy, for users already in Ray: write it with ``write_parquet``); with ``out``,
    streams the rows back in input order into that file and returns the
    :class:`BatchSummary`. How Ray runs is ``ray`` (a :class:`RayOptions`), or its fields
    as keywords (``workers=4``, ``num_gpus=1``, ...); the other ``options`` go to
    ``rerank`` (``top_k``, ``fields``, ``text_field``, ...). ``output=`` and ``pipeline=``,
    the earlier names of ``out`` and ``reranker``, are still taken."""
    output, pipeline = earlier_names(out, reranker, options, call="rerank_dataset")
    started = time.perf_counter()
    mapped = _ray_map(source, pipeline, *RayOptions.split(ray, options))
    if output is None:
        return mapped.map_batches(_decode, batch_format="pyarrow")
    summary = write_rows(output, _stream(mapped))
    summary.seconds = time.perf_counter() - started
    return summary


def _ray_map(
    source: Any,
    pipeline: Any,
    ray: RayOptions,
    options: Mapping[str, Any],
    where: str | None = None,
) -> Any:
    """The lazy Ray Dataset of encoded output rows."""
    spec = declared(pipeline)
    cpus, gpus = _resources(load(spec))  # also checks the spec here, before any worker
    cpus = cpus if ray.num_cpus is None else ray.num_cpus
    gpus = gpus if ray.num_gpus is None else ray.num_gpus
    start_ray(ray.address)
    check_resources(ray.workers, cpus, gpus)
    ray_data = require("ray.data", "the ray engine")
    context = ray_data.DataContext.get_current()
    context.execution_options.preserve_order = ray.preserve_order
    context.enable_progress_bars = False
    ds, lines = _ray_dataset(source, ray.batch_size)
    env = worker_env()
    return ds.map_batches(
        _Worker,
        fn_constructor_kwargs={
            "spec": spec,
            "options": dict(options),
            "lines": lines,
            "concurrency": ray.concurrency,
            "source": str(source) if isinstance(source, (str, Path)) else where,
            "command_line": said_for("python", "command line") == "command line",
            "encoded": tuple(
                json_columns(source)
                if isinstance(source, (str, Path)) and input_format(source) == "parquet"
                else ()
            ),
        },
        batch_size=ray.batch_size,
        batch_format="pyarrow",
        compute=ray_data.ActorPoolStrategy(size=ray.workers),
        num_cpus=cpus,
        num_gpus=gpus,
        **({"runtime_env": {"env_vars": env}} if env else {}),
    )


def _stream(out: Any) -> Iterator[dict[str, Any]]:
    for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
        for text in batch.column("rerankit_row").to_pylist():
            yield json.loads(text)


def iter_ray(
    source: Any, pipeline: Any, *, ray: RayOptions | None = None, **options: Any
) -> Iterator[dict[str, Any]]:
    """The output rows of :func:`rerank_dataset` as they arrive (in input order unless
    ``preserve_order=False``), with their provider usage under a private key."""
    return _stream(_ray_map(source, pipeline, *RayOptions.split(ray, options)))


def ray_rows(
    source: Any, pipeline: Any, ray: RayOptions, options: Mapping[str, Any], where: str | None
) -> Iterator[dict[str, Any]]:
    """:func:`iter_ray` for :func:`run_batch`: ``where`` names the file the rows came from
    in their errors (a resumed run hands Ray the rows left as a list)."""
    return _stream(_ray_map(source, pipeline, ray, options, where))


def _decode(batch: Any) -> Any:
    import pyarrow as pa

    rows = [public_fields(json.loads(t)) for t in batch.column("rerankit_row").to_pylist()]
    return pa.Table.from_pylist(rows)
