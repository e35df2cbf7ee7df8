"""The click log: impressions (what a ranking showed) and feedback (what was clicked), one
JSON object per line, and :class:`ClickLog`, the writer the service and any other system
can use.

An **impression** records one answer as it was shown::

    {"type": "impression", "id": "a1b2", "time": 1767225600.0, "pipeline": "hybrid",
     "query": "what lowers blood pressure",
     "documents": [{"id": "d1", "text": "...", "first_stage_score": 12.1},
                   {"id": "d2", "sha256": "9f86...", "first_stage_score": 9.7}],
     "shown": [1, 0], "scores": [0.91, 0.40]}

``documents`` are the answer's candidates in the order the request gave them (all of them,
or only those shown); ``shown`` lists indices into ``documents`` best first: the document
at position ``p`` (1-based) is ``documents[shown[p - 1]]``; ``scores`` are the pipeline's
scores of the shown documents in that order (optional). Each document carries its ``id``
and, as configured (:data:`STORE`), its ``text``, the SHA-256 of its text (``sha256``, hex
of the UTF-8 bytes) or neither: the text a reranker reads (with a title: the title, a
newline, then the text); ``first_stage_score`` when the request gave one; ``positional``
(true) when it had no id and ``id`` is its index in the request. Optional:
``query_id`` (when the logging system has one), ``explore`` (``{"swapped": [p, ...]}``:
positions RandPair exchanged with the next, see :mod:`.propensity`) and ``interleaving``
(``{"pipelines": [a, b], "credits": [0.5, -0.25, ...]}``: each shown position's credit to
``a``, optimized interleaving, see :mod:`.optimized`; or ``{"pipelines": [a, b], "teams":
[-1, 0, 1, ...]}``: which pipeline placed each shown position, -1 for the common prefix
both rank first, team draft, see :mod:`.interleave`) and ``endpoint`` (``"explain"``: an
answer of the service's ``/v1/explain``, the playground's, which reading leaves out of
learning and interleaving unless asked; missing: a rerank endpoint's).

A **feedback** record says what was clicked in one answer::

    {"type": "feedback", "id": "a1b2", "time": 1767225612.5, "clicks": [1, "d7"],
     "dwell_ms": [5300, 800]}

``clicks`` are indices into the impression's ``documents`` (integers) or document ids
(strings: a numeric id goes as a string, since an integer is always an index); ``dwell_ms``
(optional) one number for the answer or one per click; ``unchecked`` (true): a service
replica whose log does not hold the answer wrote it unchecked (``accept_unknown_ids``),
for the reader to join with the impression in another replica's log. Feedback for the
same ``id`` sent twice counts once; later feedback adds its clicks (:mod:`.reader` joins
them). ``time`` is seconds since the Unix epoch (a number; an ISO 8601 string is also
read).

Privacy: the query is stored as sent, in clear (learning needs it); documents' texts as
``text``, ``hash`` (the SHA-256 only: learning then needs the corpus to look texts up) or
``id`` (ids only: the same); ids and scores as given. Retention is bounded by size: the
log rotates at ``max_bytes`` and keeps ``backups`` older files (``log.jsonl.1`` the newest
of them), deleting the oldest; with ``retention_days``, also by age (:mod:`.retention`:
no record stays more than that many days plus an hour). Fields a reader does not know are
ignored.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._jsonl import dumps_strict
from .records import (
    STORE,
    Answer,
    Feedback,
    Impression,
    LoggedDocument,
    answer_of,
    encodable,
    logged_document,
    text_hash,
)
from .retention import DAY, SWEEP_EVERY, check_retention, expire_files

try:  # a lock between processes writing one log (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writing process per log
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

__all__ = [
    "STORE",
    "ClickLog",
    "Feedback",
    "Impression",
    "LoggedDocument",
    "log_files",
    "text_hash",
]


#: how many of the impressions it wrote a :class:`ClickLog` checks feedback against
REMEMBERED = 10_000


def log_files(path: str | Path) -> list[Path]:
    """A log and its rotated files, oldest first (``log.jsonl.3``, ``.2``, ``.1``, then
    ``log.jsonl``), those that exist."""
    path = Path(path)
    rotated = []
    for candidate in path.parent.glob(path.name + ".*"):
        suffix = candidate.name[len(path.name) + 1 :]
        if suffix.isdigit():
            rotated.append((int(suffix), candidate))
    files = [p for _, p in sorted(rotated, reverse=True)]
    return [*files, path] if path.is_file() else files


@dataclass
class ClickLog:
    """An append-only JSON Lines log of impressions and feedback that never raises into its
    caller: a record that cannot be written is counted (:attr:`write_errors`, with the last
    error in :attr:`last_error`) and logged, and the caller goes on. Thread-safe; after a
    restart it appends to the same file. It rotates when the file would pass ``max_bytes``
    (0: never), keeping ``backups`` older files. Several processes may write one log (the
    workers of ``rerankit serve --workers``): on POSIX each append and rotation holds a
    lock on ``<path>.lock`` beside it, so none is lost or rotated twice.

    ``store``: what impressions keep of each document (:data:`STORE`). ``background``:
    write from a thread of its own through a queue of ``queue_size`` records, so a caller
    never waits on the disk; a record that finds the queue full is dropped and counted in
    :attr:`dropped`. Call :meth:`close` (or use ``with``) to write what is queued.

    ``retention_days``: remove records older than that many days (None: kept until
    rotation deletes them). The log sweeps at its first write and then at writes at least
    an hour apart, deleting the files whose records are all older and rewriting the one
    whose oldest are (see :mod:`.retention`), so no record stays more than
    ``retention_days`` plus an hour while the log is written to; a log no longer written
    to keeps its records until :meth:`expire` is called (from a scheduled job, say).
    ``clock``: the time in seconds since the epoch (default :func:`time.time`), which
    retention and records without a ``time`` read."""

    path: str | Path
    store: str = "text"
    max_bytes: int = 100_000_000
    backups: int = 5
    background: bool = False
    queue_size: int = 10_000
    retention_days: float | None = None
    clock: Callable[[], float] | None = field(default=None, repr=False)
    written: int = field(default=0, init=False)
    write_errors: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)
    last_error: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.store not in STORE:
            raise ValueError(f"store {self.store!r}: expected one of {', '.join(STORE)}")
        if self.max_bytes < 0 or self.backups < 0:
            raise ValueError("max_bytes and backups must be >= 0")
        check_retention(self.retention_days)
        self._next_sweep = float("-inf")  # the first write sweeps
        self._answers: OrderedDict[str, Answer] = OrderedDict()  # the last impressions'
        self.path = Path(self.path)
        self._lock = threading.Lock()  # held while writing to the file
        self._counting = threading.Lock()  # held while counting: never waits on the disk
        self._lock_file: Any = None  # <path>.lock, open while the log is
        self._queue: queue.Queue[str | None] | None = None
        self._worker: threading.Thread | None = None
        if self.background:
            self._queue = queue.Queue(self.queue_size)
            self._worker = threading.Thread(
                target=self._drain, name="rerankit-click-log", daemon=True
            )
            self._worker.start()

    # records -------------------------------------------------------------------------
    def impression(
        self,
        id: str,
        query: str,
        documents: Sequence[Any],
        shown: Sequence[int],
        *,
        scores: Sequence[float] | None = None,
        pipeline: str = "",
        time: float | None = None,
        query_id: str | None = None,
        explore: Mapping[str, Any] | None = None,
        interleaving: Mapping[str, Any] | None = None,
        endpoint: str | None = None,
    ) -> Impression:
        """An :class:`Impression` with the documents kept as :attr:`store` says (not written:
        pass it to :meth:`write`). Raises ValueError for indices outside ``documents``."""
        docs = tuple(logged_document(d, self.store, n) for n, d in enumerate(documents))
        shown = tuple(int(i) for i in shown)
        bad = [i for i in shown if not 0 <= i < len(docs)]
        if bad or len(set(shown)) != len(shown):
            raise ValueError(
                f"shown must be distinct indices into the {len(docs)} documents, got {list(shown)}"
            )
        if scores is not None and len(scores) != len(shown):
            raise ValueError(f"{len(scores)} scores for {len(shown)} shown documents")
        return Impression(
            id=str(id),
            query=query,
            documents=docs,
            shown=shown,
            scores=None if scores is None else tuple(float(s) for s in scores),
            pipeline=pipeline,
            time=self.now() if time is None else float(time),
            query_id=query_id,
            explore=explore,
            interleaving=interleaving,
            endpoint=endpoint,
        )

    def log_impression(
        self, id: str, query: str, documents: Sequence[Any], shown: Sequence[int], **options: Any
    ) -> bool:
        """Build an impression (:meth:`impression`) and write it; False (counted in
        :attr:`write_errors` and logged at WARNING, naming the impression) when it could
        not be built or written.

        ``documents``: the candidates in the order the request gave them: strings, dicts
        (``id``, ``text``, ``title``, ``first_stage_score``, ``sha256``), objects with
        those attributes (a :class:`~rerankit.Document`), ``(id, text[, score])`` tuples
        or :class:`LoggedDocument` s. The text kept or hashed is the one a reranker reads:
        ``title``, a newline, then ``text`` when there is a title. A document without an
        id is logged by its index, marked ``positional``. ``shown``: indices into
        ``documents``, best first. ``options`` (keywords, all optional): ``scores`` (the
        shown documents' scores, in ``shown``'s order), ``pipeline`` (its name),
        ``time`` (seconds since the epoch; default now), ``query_id``, ``explore``
        (``{"swapped": [p, ...]}``, see :func:`~rerankit.training.clicks.randpair`) and
        ``interleaving`` (``{"pipelines": [a, b], "credits": [...]}``, see
        :func:`~rerankit.training.clicks.optimized_interleave`, or ``{"pipelines": [a, b],
        "teams": [...]}``, see :func:`~rerankit.training.clicks.team_draft`) and ``endpoint``
        (``"explain"``: left out of learning when read)."""
        try:
            record = self.impression(id, query, documents, shown, **options)
        except Exception as exc:  # never into the caller
            return self._failed(exc, f"impression {id!r}")
        return self.write(record)

    def log_feedback(
        self,
        id: str,
        clicks: Iterable[int | str],
        *,
        dwell_ms: Any = None,
        time: float | None = None,
        unchecked: bool = False,
    ) -> bool:
        """Write a :class:`Feedback` record; False (counted) when it could not be written.

        ``clicks``: an integer is always an index into the impression's documents (from
        0); a string is a document id. So send numeric ids (a SKU ``1001``) as strings
        (``"1001"``): as a number it is read as an index, and one past the documents names
        nothing. Feedback for one of the last :data:`REMEMBERED` impressions this log wrote
        is checked against it: a click naming none of its documents, or one it did not
        show, refuses the record (False, counted in :attr:`write_errors`, the click named in
        :attr:`last_error` and the warning). Feedback for another answer (written before a
        restart, or by another process) is written unchecked: :func:`~.reader.read_log`'s
        report counts such clicks. ``unchecked``: mark the record as written without its
        answer at hand (a service replica's ``accept_unknown_ids``)."""
        try:
            answer = self._answers.get(str(id))
            if answer is not None:
                answer.indices(clicks := list(clicks))
            dwell = tuple(dwell_ms) if isinstance(dwell_ms, (list, tuple)) else dwell_ms
            when = self.now() if time is None else time
            record = Feedback(str(id), tuple(clicks), dwell, when, unchecked=unchecked)
        except Exception as exc:
            return self._failed(exc, f"feedback {id!r}")
        return self.write(record)

    # writing -------------------------------------------------------------------------
    def write(self, record: Impression | Feedback | Mapping[str, Any]) -> bool:
        """Append one record (written, or queued in the background); False when it was not
        (counted in :attr:`write_errors` or :attr:`dropped`)."""
        what = _what(record)
        if isinstance(record, Impression):  # feedback for it is checked against it
            with self._counting:
                self._answers[record.id] = answer_of([d.id for d in record.documents], record.shown)
                if len(self._answers) > REMEMBERED:
                    self._answers.popitem(last=False)
        try:
            value = record if isinstance(record, Mapping) else record.as_dict()
            line = dumps_strict(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
            line = encodable(line) + "\n"
        except Exception as exc:
            return self._failed(exc, what)
        if self._queue is None:
            return self._append(line)
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            with self._counting:
                self.dropped += 1
            return False
        return True

    def _drain(self) -> None:
        assert self._queue is not None
        while True:
            line = self._queue.get()
            try:
                if line is None:
                    return
                self._append(line)
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        """Wait until every queued record is written (background mode)."""
        if self._queue is not None:
            self._queue.join()

    def close(self) -> None:
        """Write what is queued and stop the background thread (a no-op otherwise)."""
        if self._queue is not None and self._worker is not None and self._worker.is_alive():
            self._queue.put(None)
            self._worker.join()
        with self._lock:
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None

    def __enter__(self) -> ClickLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, line: str) -> bool:
        data = line.encode("utf-8")
        with self._lock:
            try:
                path = Path(self.path)
                path.parent.mkdir(parents=True, exist_ok=True)
                with self._between_processes(path):
                    if self.retention_days and self.now() >= self._next_sweep:
                        self._expire(path, self.now())
                    if self.max_bytes and path.exists():
                        size = path.stat().st_size
                        if size and size + len(data) > self.max_bytes:
                            self._rotate(path)
                    with open(path, "ab") as f:
                        f.write(data)
            except Exception as exc:
                return self._failed(exc)
        with self._counting:
            self.written += 1
        return True

    def expire(self, now: float | None = None) -> int:
        """Remove the records older than ``retention_days`` before ``now`` (default: the
        clock's time) from the log and its rotated files, as a write does once an hour: the
        number removed (0 without ``retention_days``). Never raises: a failure is logged."""
        if not self.retention_days:
            return 0
        now = self.now() if now is None else now
        with self._lock:
            path = Path(self.path)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with self._between_processes(path):
                    return self._expire(path, now)
            except Exception as exc:
                logger.warning("click log %s: retention not applied (%s)", self.path, exc)
                return 0

    def _expire(self, path: Path, now: float) -> int:
        assert self.retention_days
        self._next_sweep = now + SWEEP_EVERY
        return expire_files(log_files(path), now - self.retention_days * DAY)

    def now(self) -> float:
        """The clock's time: seconds since the epoch."""
        return _now() if self.clock is None else self.clock()

    @contextmanager
    def _between_processes(self, path: Path) -> Iterator[None]:
        """Hold the lock other processes writing this log take (a no-op without fcntl)."""
        if fcntl is None:
            yield
            return
        if self._lock_file is None:
            self._lock_file = open(path.with_name(path.name + ".lock"), "ab")  # noqa: SIM115
        fcntl.flock(self._lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    def _rotate(self, path: Path) -> None:
        if self.backups == 0:
            path.unlink()
            return
        oldest = path.with_name(f"{path.name}.{self.backups}")
        if oldest.exists():
            oldest.unlink()
        for n in range(self.backups - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))

    def _failed(self, exc: BaseException, what: str = "a record") -> bool:
        with self._counting:
            self.write_errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        logger.warning("click log %s: %s not written (%s)", self.path, what, self.last_error)
        return False


def _what(record: Any) -> str:
    """A record as a write failure names it: its type and id."""
    if isinstance(record, Mapping):
        return f"{record.get('type') or 'record'} {record.get('id')!r}"
    return f"{type(record).__name__.lower()} {getattr(record, 'id', None)!r}"


def _plain(value: Any) -> Any:
    """numpy numbers and arrays as plain JSON values (the service's orders may be numpy)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _now() -> float:
    return time.time()
