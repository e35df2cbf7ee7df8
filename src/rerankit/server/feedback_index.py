"""The answers feedback may name in the service (:class:`AnswerIndex`), and the feedback
already recorded for them, so that a repeat is answered without writing it again."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..training.clicks.log import log_files
from ..training.clicks.records import Answer, answer_of

__all__ = ["AnswerIndex", "feedback_key"]

logger = logging.getLogger(__name__)


class AnswerIndex:
    """The answers feedback may name, and the feedback already recorded (so a repeat is
    answered without writing it again): those this process logged, and those the log
    holds, read on the first miss and then only as far as it grew; at most ``limit``, the
    most recent by time (older ones are forgotten with their feedback: naming one is a
    404, and reading the log again never brings them back). Beside them, the feedback kept
    unchecked for ids no answer known has (``accept_unknown_ids``: another replica's
    answers), so a repeat of it is not written again either: at most ``limit`` ids."""

    def __init__(self, path: str | Path, limit: int = 100_000) -> None:
        self.path = Path(path)
        self.limit = limit
        self.answers: OrderedDict[str, Answer] = OrderedDict()  # oldest first
        self.seen: dict[str, set[Any]] = {}
        self.unchecked: OrderedDict[str, set[Any]] = OrderedDict()  # oldest first
        self._times: dict[str, float] = {}
        self._cutoff = float("-inf")  # the time of the newest answer forgotten
        self._lock = threading.Lock()
        self._file: tuple[int, int] | None = None  # (inode, bytes read) of the current file

    def add(self, rid: str, answer: Answer, when: float | None = None) -> None:
        """Remember ``answer`` (given at ``when``, default now) as the most recent."""
        with self._lock:
            self._put(rid, answer, time.time() if when is None else when)
            self._trim()

    def _put(self, rid: str, answer: Answer, when: float) -> None:
        if when > self._cutoff and rid not in self.answers:
            self.answers[rid] = answer
            self._times[rid] = when

    def _trim(self) -> None:
        while len(self.answers) > self.limit:
            rid, _ = self.answers.popitem(last=False)
            self._cutoff = max(self._cutoff, self._times.pop(rid))
            self.seen.pop(rid, None)

    def forget_before(self, cutoff: float) -> None:
        """Forget the answers given before ``cutoff`` (their records left the log)."""
        with self._lock:
            while self.answers:
                rid = next(iter(self.answers))
                if self._times[rid] >= cutoff:
                    break
                del self.answers[rid]
                self._cutoff = max(self._cutoff, self._times.pop(rid))
                self.seen.pop(rid, None)

    def find(self, rid: str) -> Answer | None:
        """The answer ``rid``, reading what the log gained when it is not known yet (on a
        thread: this reads the disk)."""
        with self._lock:
            if rid not in self.answers:
                self._catch_up()
            return self.answers.get(rid)

    def remember(self, rid: str, key: Any) -> bool:
        """Record a feedback key for ``rid`` (an answer :meth:`find` found); False when it
        was recorded already."""
        with self._lock:
            keys = self.seen.setdefault(rid, set())
            if key in keys:
                return False
            keys.add(key)
            return True

    def remember_unchecked(self, rid: str, key: Any) -> bool:
        """Record a feedback key for ``rid``, an id no answer known has (call :meth:`find`
        first: it reads what the log gained); False when it was recorded already."""
        with self._lock:
            return self._put_unchecked(rid, key)

    def _put_unchecked(self, rid: str, key: Any) -> bool:
        keys = self.unchecked.get(rid)
        if keys is None:
            keys = self.unchecked[rid] = set()
            while len(self.unchecked) > self.limit:
                self.unchecked.popitem(last=False)
        if key in keys:
            return False
        keys.add(key)
        return True

    def _catch_up(self) -> None:
        try:
            stat = self.path.stat()
        except OSError:
            stat = None
        if stat is not None and self._file is not None and self._file[0] == stat.st_ino:
            if stat.st_size > self._file[1]:  # what was appended since: the newest answers
                self._file = (stat.st_ino, self._file[1] + self._read(self.path, self._file[1]))
                self._trim()
            return
        # first read, or the log rotated: all of it with the answers this process knows
        # (some still queued), in order of time, keeping the most recent
        known = [(self._times[rid], rid, answer) for rid, answer in self.answers.items()]
        self.answers, self._times = OrderedDict(), {}
        for path in log_files(self.path):
            read = self._read(path, 0)
            if path == self.path and stat is not None:
                self._file = (stat.st_ino, read)
        for when, rid, answer in known:
            self._put(rid, answer, when)
        order = sorted(self.answers, key=self._times.__getitem__)
        self.answers = OrderedDict((rid, self.answers[rid]) for rid in order)
        self._trim()
        for rid in [rid for rid in self.seen if rid not in self.answers]:
            del self.seen[rid]  # feedback read for answers not kept

    def _read(self, path: Path, start: int) -> int:
        """Index the whole lines of ``path`` from byte ``start``; the bytes consumed."""
        consumed = 0
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                for line in handle:  # line by line: a large log is never held whole
                    if not line.endswith(b"\n"):
                        break  # a record still being written: read it next time
                    consumed += len(line)
                    for kind, rid, value, when in _records(line):
                        if kind == "impression":
                            self._put(rid, value, when)
                        elif kind == "unchecked":
                            self._put_unchecked(rid, value)
                        elif rid in self.answers:
                            self.seen.setdefault(rid, set()).add(value)
        except OSError as exc:
            logger.warning("feedback: cannot read %s: %s", path, exc)
        return consumed


def _records(line: bytes) -> Iterator[tuple[str, str, Any, float]]:
    """A log line as (kind: ``impression``, ``feedback`` or ``unchecked`` feedback, answer
    id, answer or feedback key, time: now when it has none)."""
    try:
        record = json.loads(line)
        kind, rid, when = record.get("type"), str(record["id"]), record.get("time")
        if isinstance(when, bool) or not isinstance(when, (int, float)):
            when = time.time()
        if kind == "impression":
            ids = [str(d["id"]) for d in record["documents"]]
            yield kind, rid, answer_of(ids, record.get("shown")), float(when)
        elif kind == "feedback":
            kind = "unchecked" if record.get("unchecked") is True else kind
            yield kind, rid, feedback_key(record["clicks"], record.get("dwell_ms")), float(when)
    except (ValueError, KeyError, TypeError, AttributeError):
        return  # not a record of the format: read_log reports these


def feedback_key(clicks: Any, dwell: Any) -> tuple[Any, Any]:
    return tuple(clicks), tuple(dwell) if isinstance(dwell, list) else dwell
