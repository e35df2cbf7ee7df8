"""Reading and writing batch rows: JSON Lines (a bad line becomes that row's error) and
Parquet (extra ``parquet``; nested fields as JSON columns)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._jsonl import dumps_strict
from .._optional import require
from ..errors import InputError, no_such_file, said_for
from .rows import DIGEST_KEY, LINE_KEY, NOTES_KEY, UNREADABLE_KEY, USAGE_KEY, BatchSummary

__all__ = [
    "SUFFIXES",
    "decode_json_columns",
    "input_format",
    "json_columns",
    "parse_line",
    "public_fields",
    "read_lines",
    "read_rows",
    "row_candidates",
    "tell_blank_lines",
    "total_rows",
    "write_rows",
]

logger = logging.getLogger(__name__)


#: the suffixes of each format ``batch`` reads and writes (docs/batch.md names them all)
SUFFIXES = {"jsonl": (".jsonl", ".ndjson", ".json"), "parquet": (".parquet", ".pq")}


def input_format(path: str | Path) -> str:
    """``jsonl`` or ``parquet``, from the file name (:data:`SUFFIXES`)."""
    suffix = Path(path).suffix.lower()
    for name, suffixes in SUFFIXES.items():
        if suffix in suffixes:
            return name
    raise InputError(
        f"{path}: use a JSON Lines file ({', '.join(SUFFIXES['jsonl'])}) or a Parquet file "
        f"({', '.join(SUFFIXES['parquet'])}) (got {suffix or 'no suffix'!r})"
    )


def parse_line(line: str, lineno: int | None) -> dict[str, Any]:
    """A JSON Lines row; a line that is not a JSON object becomes a row holding its error
    (where it is, ``FILE:LINE``, is added when the row is reranked; a line read without its
    number is named by its start)."""
    snippet = line.strip()
    snippet = snippet if len(snippet) <= 60 else snippet[:59] + "…"
    where = "" if lineno is not None else f"line {snippet!r}: "
    try:  # without its line end, which would put an error at the end on "line 2 column 1"
        value = json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        hint = _ONE_LINE if snippet in ("{", "[") else ""  # a pretty-printed file's first line
        return {
            LINE_KEY: lineno,
            UNREADABLE_KEY: f"{where}not JSON ({exc.msg.removesuffix(' at')} at column "
            f"{exc.colno}){hint}",
        }
    if isinstance(value, list):  # a file that is one JSON array, on one line
        return {
            LINE_KEY: lineno,
            UNREADABLE_KEY: f"{where}a row must be a JSON object, got a JSON array{_ONE_LINE}",
        }
    if not isinstance(value, dict):
        return {LINE_KEY: lineno, UNREADABLE_KEY: f"{where}a row must be a JSON object"}
    return {**value, LINE_KEY: lineno}


#: what a JSON file given where JSON Lines are read needs
_ONE_LINE = (
    "; JSON Lines hold one row, a JSON object, on each line: a JSON file (an array of rows, "
    "or pretty-printed) converts with `jq -c '.[]' FILE` (an array) or `jq -c . FILE`"
)


def read_lines(
    lines: Iterable[str], blank: Callable[[int], None] | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of JSON Lines text (a file or standard input, line by line). A blank line
    is skipped, as ``jq`` and pandas skip it, and told to ``blank`` with its number."""
    for lineno, line in enumerate(lines, start=1):
        if line.strip():
            yield parse_line(line, lineno)
        elif blank is not None:
            blank(lineno)


def tell_blank_lines(path: str | Path, blank: Callable[[int], None]) -> None:
    """Tell ``blank`` each blank line of a JSON Lines file, as :func:`read_lines` does
    while it reads the rows (for the ``ray`` engine, whose workers read them)."""
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                blank(lineno)


def read_rows(
    path: str | Path, blank: Callable[[int], None] | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of a JSON Lines or Parquet file, streamed (Parquet by row group). A JSON
    Lines line that cannot be read comes as a row that :func:`rerank_row` turns into an
    error row; a blank line is skipped (see :func:`read_lines`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(no_such_file(path, "the batch rows to rerank"))
    if input_format(path) == "parquet":
        pq = require("pyarrow.parquet", "Parquet input")
        with pq.ParquetFile(path) as f:
            encoded = _encoded(f.schema_arrow)
            for group in range(f.num_row_groups):
                for row in f.read_row_group(group).to_pylist():
                    yield decode_json_columns(row, encoded)
        return
    with open(path, encoding="utf-8-sig", errors="strict") as f:
        try:
            yield from read_lines(f, blank)
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def total_rows(source: str | os.PathLike[str] | Any) -> int | None:
    """How many rows the JSON Lines or Parquet file ``source`` holds, for a progress line:
    Parquet's from its metadata (extra ``parquet``), JSON Lines' by counting its lines, fast,
    up to 4 GB (a last line without its line end counts; a blank line counts too). None
    when that is not known: ``source`` is not a path (rows in memory, standard input), the
    file is larger or cannot be read."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = Path(source)
    try:
        if path.suffix.lower() in SUFFIXES["parquet"]:
            pq = require("pyarrow.parquet", "Parquet input")
            return int(pq.ParquetFile(path).metadata.num_rows)
        if path.stat().st_size > 4 << 30:
            return None
        count, last = 0, b"\n"
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                count, last = count + block.count(b"\n"), block[-1:]
        return count + (last != b"\n")
    except Exception:  # progress only: unknown
        return None


def row_candidates(path: str | Path, candidates_field: str = "candidates") -> Iterator[Any]:
    """The candidates of the batch rows in the file ``path`` (JSON Lines or Parquet), row
    by row, as the rows hold them (strings or objects); a row that cannot be read, or
    lacks the field, has none (reranked, it fails with its own error). When no row has a
    list under ``candidates_field``, an :class:`InputError` (raised once every row was
    read) names the fields of the first readable row, so that a file whose rows call their
    candidates otherwise is told how to name that field: a check to make before reranking
    (``rerankit batch`` makes it when ``--id-field`` is given)."""
    first, found = None, False
    for row in read_rows(path):
        candidates = row.get(candidates_field)
        if isinstance(candidates, list):
            found = True
            yield from candidates
        elif first is None and UNREADABLE_KEY not in row:
            first = row
    if first is not None and not found:  # a row without them alone: that row's error
        present = ", ".join(repr(k) for k in first if not k.startswith("_")) or "none"
        how = said_for(
            "candidates_field= (and query_field=, query_id_field=)",
            "--candidates-field (and --query-field, --query-id-field)",
        )
        raise InputError(
            f"{path}: no row has a {candidates_field!r} field (the candidates; fields "
            f"present in the first: {present}); name yours with {how}"
        )


def _text_ids(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its results' ids as text (None stays None), as Parquet stores them."""
    results = row.get("results")
    if not results or all(r.get("id") is None or isinstance(r.get("id"), str) for r in results):
        return row
    texts = [{**r, "id": None if r.get("id") is None else str(r["id"])} for r in results]
    return {**row, "results": texts}


def public_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in (USAGE_KEY, LINE_KEY, NOTES_KEY)}


_JSON_COLUMNS = b"rerankit.json_columns"


def _encoded(schema: Any) -> list[str]:
    meta = schema.metadata or {}
    return json.loads(meta[_JSON_COLUMNS]) if _JSON_COLUMNS in meta else []


def json_columns(path: str | Path) -> list[str]:
    """The fields of a Parquet file that rerankit wrote as JSON text (its metadata names
    them); none for another file."""
    pq = require("pyarrow.parquet", "Parquet input")
    return _encoded(pq.read_schema(path))


def decode_json_columns(row: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``row`` with its ``names`` fields, stored as JSON text, decoded (in place)."""
    for name in names:
        if isinstance(row.get(name), str):
            row[name] = json.loads(row[name])
    return row


class _ParquetWriter:
    """Rows to one Parquet file, a row group per chunk; the added fields have fixed types
    (a result's ``id`` is text, whatever the input's ids are) so that a chunk of failures,
    or of odd rows, has the same schema as a chunk of results, night after night. The
    ``json_fields`` (the candidates) are always stored as JSON text, whatever their rows
    hold (objects, strings, a broken row's value), so that one odd row cannot change the
    column's type; another input field whose values Arrow cannot hold in one type is stored
    as JSON text too. Both are named in the file's metadata, and :func:`read_rows` decodes
    them again."""

    def __init__(self, path: Path, chunk: int = 1000, json_fields: Iterable[str] = ()) -> None:
        self.pa = require("pyarrow", "Parquet output")
        self.pq = require("pyarrow.parquet", "Parquet output")
        self.path, self.chunk = path, chunk
        self.rows: list[dict[str, Any]] = []
        self.writer: Any = None
        self.schema: Any = None
        self.always_json = list(json_fields)
        self.json_columns: list[str] = []

    def _schema(self, rows: list[dict[str, Any]]) -> Any:
        pa = self.pa
        fixed = {
            "results": pa.list_(
                pa.struct(
                    [
                        ("index", pa.int64()),
                        ("rank", pa.int64()),
                        ("id", pa.string()),
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
            DIGEST_KEY: pa.string(),
        }
        names = list(dict.fromkeys(k for r in rows for k in r if k not in fixed))
        inferred = []
        for name in names:
            if name in self.always_json:
                self.json_columns.append(name)
                inferred.append(pa.field(name, pa.string()))
                continue
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
        rows = [_text_ids(r) for r in self.rows]
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
    """Rows to a JSON Lines file, each flushed as written: a run that is killed leaves its
    finished rows (and at most a cut last line, which ``resume`` drops)."""

    def __init__(self, path: Path, keep: int | None = None) -> None:
        if keep is None:
            self.f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        else:  # resume: the finished rows' bytes kept, a cut last line dropped
            self.f = open(path, "r+", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self.f.truncate(keep)
            self.f.seek(0, 2)  # the end

    def add(self, row: dict[str, Any]) -> None:
        self.f.write(dumps_strict(row, ensure_ascii=False, default=str) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def write_rows(
    path: str | Path,
    rows: Iterable[Mapping[str, Any]],
    summary: BatchSummary | None = None,
    *,
    keep: int | None = None,
    progress: Callable[[BatchSummary], None] | None = None,
    json_fields: Iterable[str] = ("candidates",),
) -> BatchSummary:
    """Write output rows (JSON Lines or Parquet by the file name) as they come, counting
    them into ``summary`` (and telling ``progress`` after each). ``keep``: append to a JSON
    Lines file after its first ``keep`` bytes (the finished rows a resumed run skips)
    instead of starting it again. In Parquet, the ``json_fields`` (the rows' candidates) are
    stored as JSON text, one type whatever the rows hold."""
    path = Path(path)
    summary = summary if summary is not None else BatchSummary()
    fmt = input_format(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    writer: Any = (
        _ParquetWriter(path, json_fields=json_fields)
        if fmt == "parquet"
        else _JsonlWriter(path, keep)
    )
    try:
        for row in rows:
            summary.count(row, row.get(USAGE_KEY))
            writer.add(public_fields(row))
            if progress is not None:
                progress(summary)
    finally:
        writer.close()
    return summary
