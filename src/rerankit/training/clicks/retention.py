"""Retention by age for a click log (``retention_days``): each sweep deletes the files
(rotated or live) whose every record is older than the limit, and rewrites a file whose
oldest records are, keeping only the younger ones. Records are taken to be appended in
time order (as :class:`~.log.ClickLog` and the service write them): a file's first record
is its oldest and its last its newest. A line whose time cannot be
read (none, or not a time) counts as older than any limit, as the reader reads it as 0.

So a record older than the limit is gone after the next sweep; :class:`~.log.ClickLog`
sweeps at its first write and then at writes at least :data:`SWEEP_EVERY` seconds apart,
and the service also on a timer of that period, so no record stays more than
``retention_days`` plus that period (plus the time a sweep takes).
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from .records import record_time

__all__ = ["SWEEP_EVERY", "check_retention", "expire_files"]

logger = logging.getLogger(__name__)

#: seconds between sweeps: what a record may outlive ``retention_days`` by
SWEEP_EVERY = 3600.0

DAY = 86400.0


def check_retention(days: Any, where: str = "retention_days") -> None:
    """ValueError unless ``days`` is None or a number of days > 0."""
    if days is None:
        return
    if (
        isinstance(days, bool)
        or not isinstance(days, (int, float))
        or not math.isfinite(days)
        or days <= 0
    ):
        raise ValueError(f"{where} must be a number of days > 0 (or unset: no limit), got {days!r}")


def _line_time(line: bytes) -> float:
    try:
        value = json.loads(line)
        return record_time(value.get("time")) if isinstance(value, dict) else 0.0
    except ValueError:  # not JSON, or not a time: read as 0, as the reader reads it
        return 0.0


def _first_time(path: Path) -> float | None:
    """The time of the file's first record (None for an empty file)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                return _line_time(line)
    return None


def _last_time(path: Path, size: int) -> float | None:
    """The time of the file's last whole record (None when it has none)."""
    block = 1 << 16
    with open(path, "rb") as handle:
        while True:
            start = max(0, size - block)
            handle.seek(start)
            lines = [line for line in handle.read(size - start).split(b"\n")[:-1] if line.strip()]
            if lines and (start == 0 or len(lines) > 1):
                return _line_time(lines[-1])  # (a first line from mid-file may be cut)
            if start == 0:
                return None
            block *= 4


def expire_files(files: list[Path], cutoff: float) -> int:
    """Remove every record older than ``cutoff`` (seconds since the epoch) from ``files``
    (a log's files, oldest first; the caller holds the log's lock): the number of records
    removed (a whole file's are counted by its lines)."""
    removed = 0
    for path in files:
        try:
            last = _last_time(path, path.stat().st_size)
            if last is not None and last < cutoff:  # its newest record is older: all go
                with open(path, "rb") as handle:
                    removed += sum(1 for line in handle if line.strip())
                path.unlink()
                continue
            first = _first_time(path)
            if first is None:
                continue
            if first >= cutoff:
                break  # the later files hold later records
            removed += _rewrite(path, cutoff)
        except OSError as exc:
            logger.warning("click log retention: cannot expire %s: %s", path, exc)
    if removed:
        logger.info("click log retention: %d records older than the limit removed", removed)
    return removed


def _rewrite(path: Path, cutoff: float) -> int:
    """Keep the records of ``path`` from ``cutoff`` on (its modification time kept, which
    ``find -mtime`` reads); the number left out."""
    mtime = path.stat().st_mtime
    kept, dropped = [], 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            if line.endswith(b"\n") and _line_time(line) >= cutoff:
                kept.append(line)
            else:
                dropped += 1
    if not kept:
        path.unlink()
        return dropped
    scratch = path.with_name(path.name + ".expiring")  # not a rotated file's name
    with open(scratch, "wb") as handle:
        handle.writelines(kept)
    os.utime(scratch, (mtime, mtime))
    os.replace(scratch, path)
    return dropped
