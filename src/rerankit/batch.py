"""Offline reranking of many queries: ``rerankit batch`` and :func:`rerank_dataset`.

Input rows are ``{"query_id": ..., "query": "...", "candidates": [...]}`` (JSON Lines or
Parquet; ``query_id`` optional, any other field kept), or a BEIR folder with a TREC run
(:func:`beir_rows`). Candidates are strings or objects with ``text`` (and ``id``,
``first_stage_score`` or any other field). Each output row is the input row plus
``results`` (best first: ``index`` into ``candidates``, ``id``, ``score``, ``flags``),
``error`` (null, or why the row could not be reranked), ``degraded``, ``warnings``,
``score_scale`` (what the scores mean, see ``RerankResult``) and ``seconds``. A bad row
or a failed provider never stops the job: the row is written with its error and counted
in the :class:`BatchSummary`.

Two engines run the same per-row code: ``local`` (in this process, no extra needed) and
``ray`` (extra ``ray``): Ray Data reads the input, ``map_batches`` runs an actor pool whose
actors each build the pipeline once from its declared form (a registered name, a pipeline
file's contents, or a spec mapping), and the results stream back in input order.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._optional import require
from .errors import InputError

__all__ = [
    "OUTPUT_FIELDS",
    "BatchSummary",
    "beir_rows",
    "declared",
    "read_rows",
    "rerank_dataset",
    "rerank_row",
    "rerank_rows",
    "run_batch",
    "write_rows",
]

logger = logging.getLogger(__name__)

#: the fields every output row gains
OUTPUT_FIELDS = ("results", "error", "degraded", "warnings", "score_scale", "seconds")
USAGE_KEY = "_usage"  # travels with a row from a worker to the summary; never written
_LINE = "_line"  # the input line of a JSON Lines row, for messages; never written
_BAD = "_unreadable"  # why a JSON Lines line could not be read; becomes the row's error
FORMATS = ("jsonl", "parquet")


@dataclass
class BatchSummary:
    """What a batch run did: rows written, rows that failed (``error`` set), rows whose
    pipeline degraded, wall time, summed provider usage, and the first few errors."""

    rows: int = 0
    failures: int = 0
    degraded: int = 0
    seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def count(self, row: Mapping[str, Any], usage: Mapping[str, int] | None = None) -> None:
        self.rows += 1
        if row.get("error"):
            self.failures += 1
            if len(self.errors) < 10:
                self.errors.append(str(row["error"]))
        self.degraded += bool(row.get("degraded"))
        for key, value in (usage or {}).items():
            self.usage[key] = self.usage.get(key, 0) + int(value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "failures": self.failures,
            "degraded": self.degraded,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 2),
            "usage": dict(self.usage),
            "errors": list(self.errors),
        }

    def __str__(self) -> str:
        text = (
            f"{self.rows} rows in {self.seconds:.1f} s ({self.rows_per_second:.1f} rows/s); "
            f"{self.failures} failed, {self.degraded} degraded"
        )
        if self.usage:
            text += "; LLM usage: " + ", ".join(f"{k} {v}" for k, v in sorted(self.usage.items()))
        return text


# -- one row -------------------------------------------------------------------------------


def _where(row: Mapping[str, Any]) -> str:
    parts = []
    if row.get(_LINE) is not None:
        parts.append(f"line {row[_LINE]}")
    if row.get("query_id") is not None:
        parts.append(f"query_id {row['query_id']!r}")
    return ", ".join(parts) or "row"


def _candidates(row: Mapping[str, Any]) -> list[Any]:
    """The row's candidates as the reranker takes them (errors name the row and field)."""
    where = _where(row)
    query = row.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"{where}: 'query' must be a non-empty string")
    cands = row.get("candidates")
    if isinstance(cands, (str, bytes)) or not isinstance(cands, Sequence):
        got = "missing" if cands is None else f"a {type(cands).__name__}"
        raise InputError(f"{where}: 'candidates' must be a list, got {got}")
    out = []
    for i, c in enumerate(cands):
        if isinstance(c, Mapping):  # a null field (Parquet's way of 'absent') is absent
            out.append({k: v for k, v in c.items() if v is not None})
        elif isinstance(c, str):
            out.append(c)
        else:
            raise InputError(
                f"{where}: candidates[{i}] must be a string or an object with 'text', "
                f"got {type(c).__name__}"
            )
    return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def rerank_row(reranker: Any, row: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """``row`` plus its results (or its error); never raises for a bad row or a failed
    scorer. ``options`` go to ``reranker.rerank`` (``top_k``, ``text_field``, ...). The
    provider usage rides along under a private key that the writers drop."""
    from .rerankers.base import run_sync

    return run_sync(arerank_row(reranker, row, **options))


async def arerank_row(reranker: Any, row: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """:func:`rerank_row` for async code (``reranker.arerank``)."""
    out = {k: v for k, v in row.items() if k not in OUTPUT_FIELDS}
    started = time.perf_counter()
    if _BAD in row:  # a line that could not be read
        out.pop(_BAD)
        out.update(
            results=[], error=row[_BAD], degraded=False, warnings=[], score_scale=None, seconds=0.0
        )
        return out
    try:
        docs = _candidates(row)
        result = await reranker.arerank(row["query"], docs, **options)
    except Exception as exc:  # a bad row, or a pipeline that cannot run: written, counted
        message = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, InputError):
            message = f"{_where(row)}: {message}"
        out.update(results=[], error=message, degraded=False, warnings=[], score_scale=None)
    else:
        out.update(
            results=[
                {"index": r.index, "id": r.id, "score": _finite(r.score), "flags": list(r.flags)}
                for r in result
            ],
            error=result.unusable,
            degraded=bool(result.degraded),
            warnings=list(result.warnings),
            score_scale=result.score_scale,
        )
        if result.usage:
            out[USAGE_KEY] = dict(result.usage)
    out["seconds"] = round(time.perf_counter() - started, 6)
    return out


def rerank_rows(
    reranker: Any, rows: Iterable[Mapping[str, Any]], *, concurrency: int = 1, **options: Any
) -> list[dict]:
    """:func:`rerank_row` for each row, in order, with up to ``concurrency`` rows in flight
    at once (worth it where a pipeline waits on a provider; local models gain nothing)."""
    from .rerankers.base import run_sync

    rows = list(rows)
    if concurrency <= 1 or len(rows) <= 1:
        return [rerank_row(reranker, row, **options) for row in rows]

    async def run_all() -> list[dict]:
        gate = asyncio.Semaphore(concurrency)

        async def one(row: Mapping[str, Any]) -> dict:
            async with gate:
                return await arerank_row(reranker, row, **options)

        return list(await asyncio.gather(*(one(r) for r in rows)))

    return run_sync(run_all())


def _chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# -- reading and writing -------------------------------------------------------------------


def input_format(path: str | Path) -> str:
    """``jsonl`` or ``parquet``, from the file name."""
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(f"{path}: use a .jsonl or .parquet file (got {suffix or 'no suffix'!r})")


def _parse_line(line: str, lineno: int | None) -> dict[str, Any]:
    """A JSON Lines row; a line that is not a JSON object becomes a row holding its error."""
    snippet = line.strip()
    snippet = snippet if len(snippet) <= 60 else snippet[:59] + "…"
    where = f"line {lineno}" if lineno is not None else f"line {snippet!r}"
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return {_LINE: lineno, _BAD: f"{where}: not JSON ({exc.msg} at column {exc.colno})"}
    if not isinstance(value, dict):
        return {_LINE: lineno, _BAD: f"{where}: a row must be a JSON object"}
    return {**value, _LINE: lineno}


def read_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a JSON Lines or Parquet file, streamed (Parquet by row group). A JSON
    Lines line that cannot be read comes as a row that :func:`rerank_row` turns into an
    error row."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if input_format(path) == "parquet":
        pq = require("pyarrow.parquet", "Parquet input")
        with pq.ParquetFile(path) as f:
            meta = f.schema_arrow.metadata or {}
            encoded = json.loads(meta[_JSON_COLUMNS]) if _JSON_COLUMNS in meta else []
            for group in range(f.num_row_groups):
                for row in f.read_row_group(group).to_pylist():
                    for name in encoded:
                        if isinstance(row.get(name), str):
                            row[name] = json.loads(row[name])
                    yield row
        return
    with open(path, encoding="utf-8-sig", errors="strict") as f:
        try:
            for lineno, line in enumerate(f, start=1):
                if line.strip():
                    yield _parse_line(line, lineno)
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def beir_rows(
    folder: str | Path, run: str | Path, *, split: str = "test", k: int = 100
) -> list[dict[str, Any]]:
    """Rows from a BEIR folder (its corpus and queries) and a TREC run file: each query of
    the run with its top ``k`` documents (``id``, ``text``, ``first_stage_score``)."""
    from .eval.data import load_beir
    from .eval.runner import candidate_documents, first_stage

    data = load_beir(folder, split)
    cands = first_stage(data, str(run), k)
    return [
        {"query_id": q, "query": data.queries[q], "candidates": candidate_documents(data, c)}
        for q, c in cands.items()
        if c
    ]


def _public(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in (USAGE_KEY, _LINE)}


_JSON_COLUMNS = b"rerankit.json_columns"


class _ParquetWriter:
    """Rows to one Parquet file, a row group per chunk; the added fields have fixed types
    so a chunk of failures has the same schema as a chunk of results. An input field whose
    values Arrow cannot hold in one type (candidates that are strings in one row and
    objects in another) is stored as JSON text, named in the file's metadata, and
    :func:`read_rows` decodes it again."""

    def __init__(self, path: Path, chunk: int = 1000) -> None:
        self.pa = require("pyarrow", "Parquet output")
        self.pq = require("pyarrow.parquet", "Parquet output")
        self.path, self.chunk = path, chunk
        self.rows: list[dict[str, Any]] = []
        self.writer: Any = None
        self.schema: Any = None
        self.json_columns: list[str] = []

    def _schema(self, rows: list[dict[str, Any]]) -> Any:
        pa = self.pa
        ids = [r["id"] for row in rows for r in row.get("results") or [] if r["id"] is not None]
        id_type = pa.int64() if ids and all(isinstance(i, int) for i in ids) else pa.string()
        fixed = {
            "results": pa.list_(
                pa.struct(
                    [
                        ("index", pa.int64()),
                        ("id", id_type),
                        ("score", pa.float64()),
                        ("flags", pa.list_(pa.string())),
                    ]
                )
            ),
            "error": pa.string(),
            "degraded": pa.bool_(),
            "warnings": pa.list_(pa.string()),
            "score_scale": pa.string(),
            "seconds": pa.float64(),
        }
        names = list(dict.fromkeys(k for r in rows for k in r if k not in fixed))
        inferred = []
        for name in names:
            try:
                inferred.append(pa.field(name, pa.array([r.get(name) for r in rows]).type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                self.json_columns.append(name)
                inferred.append(pa.field(name, pa.string()))
        schema = pa.schema([*inferred, *(pa.field(k, t) for k, t in fixed.items())])
        if self.json_columns:
            schema = schema.with_metadata({_JSON_COLUMNS: json.dumps(self.json_columns)})
        return schema

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        if self.schema is None:
            self.schema = self._schema(self.rows)
            self.writer = self.pq.ParquetWriter(self.path, self.schema)
        rows = self.rows
        if self.json_columns:
            rows = [
                {
                    k: json.dumps(v, ensure_ascii=False, default=str)
                    if k in self.json_columns and v is not None
                    else v
                    for k, v in r.items()
                }
                for r in rows
            ]
        try:
            table = self.pa.Table.from_pylist(rows, schema=self.schema)
        except (self.pa.ArrowInvalid, self.pa.ArrowTypeError) as exc:
            raise InputError(
                f"{self.path}: the rows' fields changed type along the file ({exc}); "
                "write JSON Lines instead"
            ) from None
        self.writer.write_table(table)
        self.rows = []

    def close(self) -> None:
        self.flush()
        if self.writer is None:  # no rows at all: an empty file with the added fields
            self.schema = self._schema([{}])
            self.writer = self.pq.ParquetWriter(self.path, self.schema)
        self.writer.close()


class _JsonlWriter:
    def __init__(self, path: Path) -> None:
        self.f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def add(self, row: dict[str, Any]) -> None:
        self.f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

    def close(self) -> None:
        self.f.close()


def write_rows(
    path: str | Path,
    rows: Iterable[Mapping[str, Any]],
    summary: BatchSummary | None = None,
) -> BatchSummary:
    """Write output rows (JSON Lines or Parquet by the file name) as they come, counting
    them into ``summary``."""
    path = Path(path)
    summary = summary if summary is not None else BatchSummary()
    fmt = input_format(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    writer: Any = _ParquetWriter(path) if fmt == "parquet" else _JsonlWriter(path)
    try:
        for row in rows:
            summary.count(row, row.get(USAGE_KEY))
            writer.add(_public(row))
    finally:
        writer.close()
    return summary


# -- engines -------------------------------------------------------------------------------


def declared(pipeline: Any) -> Any:
    """What a worker needs to build ``pipeline`` itself: a registered name, or the spec
    read from a pipeline file (so workers need not see the file), or a spec mapping.
    A reranker object cannot be shipped: pass its declared form."""
    from .api import PIPELINE_SUFFIXES
    from .config import read_spec

    if isinstance(pipeline, Path) or (
        isinstance(pipeline, str) and Path(pipeline).suffix.lower() in PIPELINE_SUFFIXES
    ):
        return read_spec(pipeline)
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
        self, spec: Any, options: Mapping[str, Any], lines: bool, concurrency: int = 1
    ) -> None:
        from .api import load

        self.reranker = load(spec)
        self.options = dict(options)
        self.lines = lines
        self.concurrency = concurrency

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.lines:  # read_text: one JSON Lines line per row
            rows = [_parse_line(t, None) for t in batch.column("text").to_pylist()]
        else:
            rows = batch.to_pylist()
        done = rerank_rows(self.reranker, rows, concurrency=self.concurrency, **self.options)
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


def _ray_dataset(source: Any) -> tuple[Any, bool]:
    """A Ray Dataset of the source and whether its rows are JSON Lines text."""
    ray_data = require("ray.data", "the ray engine")
    if isinstance(source, (str, Path)):
        if input_format(source) == "parquet":
            return ray_data.read_parquet(str(source)), False
        return ray_data.read_text(str(source)), True
    if isinstance(source, list):
        return ray_data.from_items([dict(r) for r in source]), False
    return source, False  # a Ray Dataset already


def quiet_ray_logs() -> None:
    """Keep Ray's and Ray Data's own loggers to warnings (they log every job's start, plan
    and end at INFO); for command lines, which call it unless asked to be verbose."""
    require("ray.data", "the ray engine")  # imported first: it configures its loggers
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _start_ray(address: str | None, num_cpus: int | None = None) -> None:
    ray = require("ray", "the ray engine")
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if address:
        kwargs["address"] = address
    elif num_cpus:
        kwargs["num_cpus"] = num_cpus
    ray.init(**kwargs)
    logger.info("ray started (%s)", address or "local")


def rerank_dataset(
    source: Any,
    pipeline: Any = "hybrid",
    *,
    output: str | Path | None = None,
    workers: int = 1,
    batch_size: int = 16,
    num_cpus: float | None = None,
    num_gpus: float | None = None,
    address: str | None = None,
    preserve_order: bool = True,
    concurrency: int = 1,
    **options: Any,
) -> Any:
    """Rerank with Ray Data: ``source`` is a Ray Dataset, a JSON Lines or Parquet path, or
    a list of rows; ``pipeline`` a registered name, pipeline file or spec mapping (each
    of ``workers`` actors builds it once). Without ``output``, returns a Ray Dataset of
    the output rows (lazy, for users already in Ray: write it with ``write_parquet``);
    with ``output``, streams the rows back in input order into that file and returns the
    :class:`BatchSummary`. ``num_cpus``/``num_gpus`` per worker default to the pipeline's
    hardware profile; ``concurrency`` rows of a batch are in flight at once in a worker
    (for pipelines that wait on a provider); ``options`` go to ``rerank`` (``top_k``,
    ``text_field``, ...)."""
    started = time.perf_counter()
    out = _ray_map(
        source,
        pipeline,
        workers=workers,
        batch_size=batch_size,
        num_cpus=num_cpus,
        num_gpus=num_gpus,
        address=address,
        preserve_order=preserve_order,
        concurrency=concurrency,
        options=options,
    )
    if output is None:
        return out.map_batches(_decode, batch_format="pyarrow")
    summary = write_rows(output, _stream(out))
    summary.seconds = time.perf_counter() - started
    return summary


def _ray_map(
    source: Any,
    pipeline: Any,
    *,
    workers: int,
    batch_size: int,
    num_cpus: float | None,
    num_gpus: float | None,
    address: str | None,
    preserve_order: bool,
    concurrency: int,
    options: Mapping[str, Any],
) -> Any:
    """The lazy Ray Dataset of encoded output rows."""
    from .api import load

    if workers < 1 or batch_size < 1 or concurrency < 1:
        raise InputError(
            "workers, batch_size and concurrency must be >= 1, got "
            f"{workers}, {batch_size} and {concurrency}"
        )
    spec = declared(pipeline)
    cpus, gpus = _resources(load(spec))  # also checks the spec here, before any worker
    _start_ray(address)
    ray_data = require("ray.data", "the ray engine")
    context = ray_data.DataContext.get_current()
    context.execution_options.preserve_order = preserve_order
    context.enable_progress_bars = False
    ds, lines = _ray_dataset(source)
    return ds.map_batches(
        _Worker,
        fn_constructor_kwargs={
            "spec": spec,
            "options": dict(options),
            "lines": lines,
            "concurrency": concurrency,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray_data.ActorPoolStrategy(size=workers),
        num_cpus=cpus if num_cpus is None else num_cpus,
        num_gpus=gpus if num_gpus is None else num_gpus,
    )


def _stream(out: Any) -> Iterator[dict[str, Any]]:
    for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
        for text in batch.column("rerankit_row").to_pylist():
            yield json.loads(text)


def iter_ray(
    source: Any,
    pipeline: Any,
    *,
    workers: int = 1,
    batch_size: int = 16,
    num_cpus: float | None = None,
    num_gpus: float | None = None,
    address: str | None = None,
    preserve_order: bool = True,
    concurrency: int = 1,
    **options: Any,
) -> Iterator[dict[str, Any]]:
    """The output rows of :func:`rerank_dataset` as they arrive (in input order unless
    ``preserve_order=False``), with their provider usage under a private key."""
    return _stream(
        _ray_map(
            source,
            pipeline,
            workers=workers,
            batch_size=batch_size,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            address=address,
            preserve_order=preserve_order,
            concurrency=concurrency,
            options=options,
        )
    )


def _decode(batch: Any) -> Any:
    import pyarrow as pa

    rows = [_public(json.loads(t)) for t in batch.column("rerankit_row").to_pylist()]
    return pa.Table.from_pylist(rows)


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
        return rerank_dataset(
            source,
            pipeline,
            output=output,
            workers=workers,
            batch_size=batch_size,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            address=address,
            concurrency=concurrency,
            **options,
        )
    if engine != "local":
        raise InputError(f"engine must be 'local' or 'ray', got {engine!r}")
    from .api import load

    reranker = load(pipeline)
    started = time.perf_counter()
    rows = read_rows(source) if isinstance(source, (str, Path)) else iter(source)
    results = (
        row
        for chunk in _chunks(rows, max(batch_size, concurrency))
        for row in rerank_rows(reranker, chunk, concurrency=concurrency, **options)
    )
    summary = write_rows(output, results)
    summary.seconds = time.perf_counter() - started
    return summary
