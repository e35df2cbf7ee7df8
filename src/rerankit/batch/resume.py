"""What a batch run does with an ``--out`` that already holds rows: refuse it (the
default), start again (``overwrite``), or go on after its finished rows (``resume``); and
:class:`BatchInterrupted`, the Ctrl-C that says how far the output got."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from .._optional import require
from ..errors import InputError, said_for
from .io import input_format
from .rows import BatchSummary, RowFields, row_key

__all__ = [
    "BatchInterrupted",
    "OutputHoldsRows",
    "finished_rows",
    "output_rows",
    "skip_finished",
]

logger = logging.getLogger(__name__)


class OutputHoldsRows(InputError):
    """The output already holds rows and the run was told neither to resume nor to
    overwrite it: refused before any work (``rerankit batch`` exits 2, a usage error)."""


def _way(flag: str, keyword: str) -> str:
    """``--resume (resume=True)`` for Python, ``--resume`` at the command line."""
    return said_for(f"{flag} ({keyword}=True)", flag)


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) during a batch run: the rows written so far are whole lines in
    ``output`` and ``summary`` counts them (``summary.interrupted`` is set); a run with
    ``resume=True`` (``--resume``) goes on from there. A ``KeyboardInterrupt``, so code
    that does not catch it stops as on any Ctrl-C."""

    def __init__(self, summary: BatchSummary, output: str | Path) -> None:
        super().__init__(f"interrupted after {summary.rows + summary.skipped} rows in {output}")
        self.summary, self.output = summary, Path(output)


def _parquet_rows(path: Path) -> int | None:
    """The rows of a Parquet file, or None when it cannot be read (cut short)."""
    pq = require("pyarrow.parquet", "Parquet output")
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # no footer: the run that wrote it was killed
        return None


def finished_rows(
    path: str | Path, names: RowFields | None = None
) -> tuple[list[tuple[Any, Any]], int, int]:
    """The (query id, query) of each whole row of a JSON Lines batch output, the byte
    length of those rows (a last line without its newline, of a run killed while writing
    it, is not counted) and how many of them were written with an error. A whole line
    that is not a JSON object means the file is not a batch output: an error."""
    data = Path(path).read_bytes()
    end = data.rfind(b"\n") + 1  # a cut last line (no newline) is left out
    keys, failed = [], 0
    for number, line in enumerate(data[:end].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            raise InputError(
                f"{path}:{number}: not a row of a batch output (not a JSON object); "
                f"pass {_way('--overwrite', 'overwrite')} to start the file again"
            )
        keys.append(row_key(row, names))
        failed += bool(row.get("error"))
    return keys, end, failed


def output_rows(
    path: str | Path, *, resume: bool, overwrite: bool, names: RowFields | None = None
) -> tuple[list, int, int]:
    """Check what a run may do with ``path``: the finished rows to skip, the bytes to
    keep (none when it is absent, empty or overwritten) and how many of those rows hold an
    error (a resumed run does not rank them again: they count as failed). An existing
    non-empty output without ``resume`` or ``overwrite`` is refused, naming its rows and
    both ways on."""
    path = Path(path)
    if resume and overwrite:
        both = "give {} or {}, not both"
        raise InputError(
            said_for(both.format("resume=", "overwrite="), both.format("--resume", "--overwrite"))
        )
    parquet = input_format(path) == "parquet"
    if resume and parquet:
        raise InputError(
            f"{path}: {_way('--resume', 'resume')} needs a .jsonl --out: a Parquet file cannot be "
            "appended to, and one whose run was killed cannot be read"
        )
    if overwrite or not path.is_file() or path.stat().st_size == 0:
        return [], 0, 0
    if parquet:
        count = _parquet_rows(path)
        held = f"{count} rows" if count is not None else "rows (cut short: unreadable)"
        raise OutputHoldsRows(
            f"{path} already holds {held}; pass {_way('--overwrite', 'overwrite')} to start "
            "it again, or write JSON Lines (.jsonl) to be able to --resume"
        )
    keys, end, failed = finished_rows(path, names)
    if not resume:
        raise OutputHoldsRows(
            f"{path} already holds {len(keys)} rows; pass {_way('--resume', 'resume')} to "
            f"skip them and append the rest, or {_way('--overwrite', 'overwrite')} to start "
            "again"
        )
    return keys, end, failed


def skip_finished(
    rows: Iterable[dict[str, Any]],
    keys: list,
    output: str | Path,
    source: str | None,
    names: RowFields | None = None,
) -> Iterator[dict[str, Any]]:
    """``rows`` after the first ``len(keys)``, which are checked now against the finished
    output rows ``keys`` (same query ids and queries, in order): an output written from
    other rows is refused rather than appended to."""
    rows = iter(rows)
    done = list(islice(rows, len(keys)))
    name = source or "the input"
    if len(done) < len(keys):
        raise InputError(
            f"{output} holds {len(keys)} rows, more than the {len(done)} of {name}: it was "
            f"not written from these rows; pass {_way('--overwrite', 'overwrite')} to start "
            "again"
        )
    for number, (row, key) in enumerate(zip(done, keys, strict=True), start=1):
        if row_key(row, names) != key:
            got = row_key(row, names)
            raise InputError(
                f"{output} does not match {name}: its row {number} is query_id {key[0]!r}, "
                f"query {key[1]!r}, the input's is query_id {got[0]!r}, query {got[1]!r}; "
                f"pass {_way('--overwrite', 'overwrite')} to start again"
            )
    return rows
