"""What the commands show beside their results: progress bars (or plain progress lines) on
stderr, the notes of a collection read, and the :class:`~rerankit.training.Reporter` that
prints a learning function's account."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..eval.data import Dataset, read_split
from ..training.reporting import Reporter

__all__ = [
    "PROGRESS_EVERY",
    "RowProgress",
    "export_notes",
    "limit_queries",
    "progress_bar",
    "read_collection",
    "reporter",
    "training_progress",
]


#: without a progress bar (``batch``: always), a plain line at most every this many seconds
PROGRESS_EVERY = 10.0

#: rows written within this many seconds of the first are of the first block (a Ray block's
#: rows land together): ``batch``'s rate counts the rows after them, from when they landed
FIRST_BLOCK = 0.05


def progress_bar(label: str, enabled: bool) -> Any:
    """How a loop over queries reports progress on stderr: nothing unless ``enabled``
    (``--no-progress``); a tqdm bar on a terminal (when tqdm is installed); else, as in a
    log file, a plain line every :data:`PROGRESS_EVERY` seconds and one at the end, so a
    long job there is never silent for minutes."""
    if not enabled:
        return lambda items: items
    if _terminal(sys.stderr):
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return lambda items: tqdm(items, desc=label, unit="query", file=sys.stderr, leave=False)
    return lambda items: _plain_progress(label, items)


def training_progress(enabled: bool) -> Any:
    """How ``train`` shows progress (see :data:`rerankit.training.trainer.Progress`): the
    trainer's bars on a terminal, else a plain line on stderr at each logged step (a log
    file gets no bars redrawn in place nor the trainer's loss dicts); nothing unless
    ``enabled``."""
    if not enabled:
        return False
    if _terminal(sys.stderr):
        return True
    return lambda line: print(f"rerankit: train: {line}", file=sys.stderr)


def _terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (a bar redrawn in place reads well only there)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _plain_progress(label: str, items: Any) -> Any:
    items = list(items)
    start = last = time.perf_counter()
    for done, item in enumerate(items, start=1):
        yield item
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY or done == len(items):
            last = now
            print(
                f"rerankit: {label}: {done}/{len(items)} queries ({now - start:.1f} s)",
                file=sys.stderr,
                flush=True,
            )


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class RowProgress:
    """``batch``'s progress on stderr, called after each row written: a line at most every
    :data:`PROGRESS_EVERY` seconds, on a terminal or in a log alike (``rerankit: batch: 120/2000
    rows, 0.4 rows/s, 2 failed, about 1h18m left``; the total and time left when the
    number of input rows is known). None once the last row is written: the summary
    follows. Never on stdout."""

    def __init__(self, total: int | None, skipped: int = 0) -> None:
        self.total, self.skipped = total, skipped
        self.start = self.last = time.perf_counter()
        #: when the first rows were written, and how many: the rate is measured from there,
        #: not from the start (loading the models, Ray's start-up)
        self.first: tuple[float, int] | None = None

    def __call__(self, summary: Any) -> None:
        now, done = time.perf_counter(), summary.rows + summary.skipped
        if self.first is None or now - self.first[0] < FIRST_BLOCK:
            # the first rows, and those written with them (a Ray block lands at once)
            self.first = (self.first[0] if self.first else now, summary.rows)
        if now - self.last < PROGRESS_EVERY or (self.total and done >= self.total):
            return
        self.last = now
        since, rows = now - self.first[0], summary.rows - self.first[1]
        rate = rows / since if rows and since > 0 else None  # None: not measured yet
        text = f"{done}/{self.total} rows" if self.total else f"{done} rows"
        text += f", {rate:.2f} rows/s" if rate else ""
        text += f", {summary.failures} failed"
        if self.total and rate and self.total >= done:
            text += f", about {_duration((self.total - done) / rate)} left"
        print(f"rerankit: batch: {text}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """A side remark on stderr, as ``rerankit: message``."""
    print(f"rerankit: {message}", file=sys.stderr)


class _ExportNote(logging.Handler):
    """Says on stderr the export a model makes on first use (the library logs it, with
    the model under ``exporting``), before the wait it causes."""

    def emit(self, record: logging.LogRecord) -> None:
        model = getattr(record, "exporting", None)
        if model is not None:
            note(
                f"note: exporting {model} to ONNX for this machine, once (it can take a "
                "minute); later runs start at once"
            )
        elif record.levelno >= logging.WARNING and not logging.getLogger().handlers:
            last = logging.lastResort  # a warning: as if this handler were not there
            if last is not None:
                last.handle(record)


@contextlib.contextmanager
def export_notes() -> Iterator[None]:
    """While a command runs: the export of a model to ONNX on first use said on stderr as
    it starts (:class:`_ExportNote`), where the library only logs it."""
    logger = logging.getLogger("rerankit.backends.export")
    handler, level = _ExportNote(logging.INFO), logger.level
    logger.addHandler(handler)
    if not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def reporter(args: argparse.Namespace) -> Reporter:
    """The account on stdout, notes on stderr, progress bars unless ``--no-progress``."""
    enabled = not getattr(args, "no_progress", False)
    return Reporter(say_to=print, note=note, progress=lambda label: progress_bar(label, enabled))


def limit_queries(data: Dataset, n: int | None) -> Dataset:
    """``data`` cut to its first ``n`` queries (all when ``n`` is None)."""
    if n:
        data.queries = dict(list(data.queries.items())[:n])
    return data


def read_collection(
    path: str | Path, split: str, max_queries: int | None = None, **options: Any
) -> Dataset:
    """:func:`~rerankit.eval.data.load_beir` with its notes said on stderr, cut to the first
    ``max_queries``."""
    return read_split(path, split, max_queries, note=lambda m: note(f"warning: {m}"), **options)
