"""Impressions and feedback in the service (opt-in: ``[server.feedback]``).

With feedback on, every rerank answer that carries an ``id`` (Cohere ``/v1/rerank`` and
``/v2/rerank``, rerankit's ``/v1/explain``) appends an impression to a click log
(:class:`rerankit.training.clicks.ClickLog`'s JSON Lines format): the answer id, time,
pipeline, query, each document's id (without one: its index, marked ``positional``) and,
as ``store`` says, its text (as the pipeline read it: a title, a newline, the text), its
SHA-256 or neither, the order shown and the relevance scores answered. ``POST /v1/feedback`` adds
what was clicked. The writes happen on a thread of their own behind a bounded queue: a
request never waits on the disk, and a record that cannot be written (or finds the queue
full) is counted in ``rerankit_feedback_write_errors_total``, never failing a request.

Settings (``[server.feedback]``, or ``[server] feedback = "PATH"`` for the defaults)::

    [server.feedback]
    path = "clicks.jsonl"   # the log (relative: to the settings file's folder); rotated
                            # files beside it (clicks.jsonl.1 the newest); $NAME and
                            # ${NAME} are replaced by environment variables (unset: an error)
    store = "hash"          # each document's "text", its SHA-256 ("hash") or "id" only;
                            # the query is kept in clear text whatever this says
    max_bytes = 100000000   # rotate past this size (0: never)
    backups = 5             # rotated files kept: retention by size
    retention_days = 30     # remove records older than this (+ at most an hour); unset: no limit
    queue_size = 10000      # records waiting to be written; more are dropped and counted
    max_answers = 100000    # answers feedback may name: the most recent ones
    accept_unknown_ids = false  # true: feedback naming an answer this log does not hold
                            # (another replica's) is written unchecked (202), not a 404

Feedback may name any of the last ``max_answers`` answers the log holds, also one issued
before a restart or by another worker process (``serve --workers``): an id this process
has not seen is looked up in what the log holds (read once, then only what was appended
since). The bound keeps a long-running service's memory flat: each answer remembered
costs about a hundred bytes plus its document ids. With ``accept_unknown_ids``, feedback
naming an id the log does not hold is checked as far as it can be without its answer
(its shape, its dwell times) and written marked ``unchecked``: reading every replica's
log joins it with its impression and checks its clicks there.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..documents import FIRST_STAGE_SCORE
from ..options import unknown_keys
from ..training.clicks.interleave import METHODS, method_name
from ..training.clicks.log import STORE, ClickLog, log_files
from ..training.clicks.records import answer_of
from ..training.clicks.retention import DAY, SWEEP_EVERY, check_retention
from .feedback_index import AnswerIndex, feedback_key
from .opt_out import OPTED_OUT

__all__ = [
    "UNSET_NOTED",
    "AnswerIndex",
    "FeedbackLog",
    "FeedbackSettings",
    "check_experiments",
    "expand_path",
    "expand_variables",
    "experiments_said",
    "feedback_beside",
]

logger = logging.getLogger(__name__)

#: set (by ``rerankit check``) to a list: an unset variable is noted there as (key, name)
#: and left as written, rather than an error
UNSET_NOTED: ContextVar[list[tuple[str, str]] | None] = ContextVar("rerankit_unset", default=None)

#: an environment variable in a path, as :func:`os.path.expandvars` finds it
_VARIABLE = re.compile(r"\$(?:\{([^}]*)\}|(\w+))")


def expand_variables(text: str, key: str, shown: str | None = None) -> str:
    """``text``, the value of the settings file's ``key``, with each ``$NAME`` or
    ``${NAME}`` replaced by the environment variable's value; a ValueError names the key
    (and ``shown``, the value as it may be said: default ``text``) and a variable that is
    not set."""
    for match in _VARIABLE.finditer(text):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name not in os.environ and (noted := UNSET_NOTED.get()) is not None:
            noted.append((key, name))  # left as written (``rerankit check``: CI has no secrets)
        elif name not in os.environ:
            raise ValueError(
                f"{key} {text if shown is None else shown!r}: the environment variable "
                f"{name!r} is not set (a $NAME or ${{NAME}} in it is replaced by its value)"
            )
    return os.path.expandvars(text)


def expand_path(path: str) -> str:
    """``path`` with its environment variables' values (:func:`expand_variables`): one log
    path for replicas that share a settings file."""
    return expand_variables(path, "[server.feedback] path")


@dataclass(frozen=True)
class FeedbackSettings:
    """``[server.feedback]``: the names are :class:`~rerankit.training.clicks.ClickLog`'s."""

    path: str
    store: str = "text"
    max_bytes: int = 100_000_000
    backups: int = 5
    queue_size: int = 10_000
    max_answers: int = 100_000
    retention_days: float | None = None
    accept_unknown_ids: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise ValueError("[server.feedback] path: the click log's file, e.g. 'clicks.jsonl'")
        object.__setattr__(self, "path", expand_path(self.path))
        if not isinstance(self.accept_unknown_ids, bool):
            raise ValueError(
                f"[server.feedback] accept_unknown_ids: true or false, got "
                f"{self.accept_unknown_ids!r}"
            )
        if self.store not in STORE:
            raise ValueError(
                f"[server.feedback] store {self.store!r}: expected one of {', '.join(STORE)}"
            )
        for name in ("max_bytes", "backups"):
            if getattr(self, name) < 0:
                raise ValueError(f"[server.feedback] {name} must be >= 0")
        for name in ("queue_size", "max_answers"):
            if getattr(self, name) < 1:
                raise ValueError(f"[server.feedback] {name} must be >= 1")
        check_retention(self.retention_days, "[server.feedback] retention_days")

    @classmethod
    def parse(cls, value: Any) -> FeedbackSettings | None:
        """From the settings' value: a table, a path (the defaults), or None/"" (off)."""
        if value is None or value == "" or isinstance(value, cls):
            return value or None
        if isinstance(value, (str, os.PathLike)):
            return cls(path=str(value))
        if isinstance(value, Mapping):
            problem = unknown_keys(value, [f.name for f in fields(cls)], "[server.feedback]")
            if problem is not None:
                raise ValueError(problem)
            return cls(**value)
        raise ValueError(f"[server] feedback: a table or a path, got {value!r}")

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """What the click log keeps and for how long (the start line, and ``rerankit
        check``'s): its file, queries in clear text, documents as ``store``, retention."""
        kept = "until rotation deletes them"
        if self.retention_days:
            days = self.retention_days
            kept = f"at most {days:g} day{'' if days == 1 else 's'} and an hour"
        unchecked = (
            "; feedback naming answers this log does not hold (another replica's) written unchecked"
            if self.accept_unknown_ids
            else ""
        )
        return (
            f"answers and clicks logged to {Path(self.path).resolve()} (queries stored in "
            f"clear text, documents stored as {self.store}; records kept {kept}){unchecked}"
        )


def feedback_beside(value: Any, folder: Path) -> Any:
    """``[server] feedback`` (a table or a path) with a relative log path taken from
    ``folder`` (the settings file's), as a pipeline file's is; an absolute one as it is."""
    path = value.get("path") if isinstance(value, Mapping) else value
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        return value
    path = expand_path(str(path))  # before its folder is known: a variable may make it absolute
    if Path(path).is_absolute():
        return {**value, "path": path} if isinstance(value, Mapping) else path
    there = str(folder / path)
    if Path(path).resolve() != Path(there).resolve() and log_files(path) and not log_files(there):
        logger.warning(
            "feedback: the click log is written beside the settings file, to %s; the log "
            "at %s (taken from the working folder before) is no longer appended to: move "
            "its files there to keep them together",
            there,
            Path(path).resolve(),
        )
    return {**value, "path": there} if isinstance(value, Mapping) else there


def check_experiments(settings: Any) -> None:
    """``[server]``'s feedback, ``interleave``, ``interleave_share``, ``interleave_method``,
    ``explore`` and
    ``explore_pairs``, checked (and ``feedback`` parsed) for :class:`ServerSettings`."""
    settings.feedback = FeedbackSettings.parse(settings.feedback)
    pair = settings.interleave
    if pair is not None:
        pair = settings.interleave = list(pair)
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"interleave: two different pipelines' names, got {pair}")
        missing = [p for p in pair if p not in (settings.pipelines or {})]
        if missing:
            raise ValueError(
                f"interleave names {missing}, not among {sorted(settings.pipelines or {})}"
            )
    settings.interleave_method = method_name(settings.interleave_method)  # team_draft too
    if settings.interleave_method not in METHODS:
        raise ValueError(
            f"interleave_method {settings.interleave_method!r}: expected one of "
            f"{', '.join(map(repr, METHODS))}"
        )
    for name in ("interleave_share", "explore", "explore_pairs"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a share in [0, 1], got {value!r}")
    if pair and settings.interleave_share + settings.explore > 1:
        raise ValueError(
            f"interleave_share ({settings.interleave_share:g}) + explore "
            f"({settings.explore:g}) is over 1: both are shares of the same requests (an "
            "interleaved request is never explored), so together at most 1; lower one of them"
        )
    if (pair or settings.explore) and settings.feedback is None:
        raise ValueError(
            "interleave and explore need [server.feedback]: their clicks are read from its log"
        )


def experiments_said(settings: Any) -> list[str]:
    """The experiments ``settings`` run on logged answers, one line each (the service's
    start lines, and ``rerankit check``'s): interleaving, then exploration."""
    said = []
    if settings.interleave:
        a, b = settings.interleave
        said.append(
            f"interleave: {100 * settings.interleave_share:g} % of the requests to {a!r} "
            f"answered with {b!r} interleaved ({settings.interleave_method})"
        )
    if settings.explore:
        said.append(
            f"explore: {100 * settings.explore:g} % of all requests with pairs below the top 3 "
            f"exchanged (each with chance {settings.explore_pairs:g})"
        )
    return said


class FeedbackLog:
    """The service's click log: impressions written on a thread of their own (a bounded
    queue; a full one drops the record and counts it), the answers feedback may name
    (:class:`AnswerIndex`), and the counts /metrics reports."""

    def __init__(self, settings: FeedbackSettings, *, clock: Any = None) -> None:
        self.settings = settings
        self.log = ClickLog(
            settings.path,
            store=settings.store,
            max_bytes=settings.max_bytes,
            backups=settings.backups,
            retention_days=settings.retention_days,
            clock=clock,
        )
        self.index = AnswerIndex(settings.path, settings.max_answers)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="rerankit-feedback")
        self._pending = 0
        self._count = threading.Lock()
        self.dropped = 0
        self.impressions = 0
        self.feedback = 0
        self._stop = threading.Event()
        self._unlearnable = False  # said once: documents without ids, logged as ids only
        if settings.retention_days:
            self._submit(self.sweep)  # at start, then every hour
            threading.Thread(
                target=self.sweeping,
                args=(self._stop.wait,),
                name="rerankit-retention",
                daemon=True,
            ).start()
        logger.info("feedback on: %s", settings.describe())

    def sweep(self) -> None:
        """Apply ``retention_days`` now (on the writer thread): the log's old records are
        removed, and the answers they held are forgotten (feedback naming one is a 404)."""
        now = self.log.now()
        self.log.expire(now)
        if self.settings.retention_days:
            self.index.forget_before(now - self.settings.retention_days * DAY)

    def sweeping(self, wait: Any) -> None:
        """Queue :meth:`sweep` every hour until ``wait(seconds)`` says to stop (True)."""
        while not wait(SWEEP_EVERY):
            self._submit(self.sweep)

    def close(self) -> None:
        """Write what is queued and stop the retention timer."""
        self._stop.set()
        self.flush()

    @property
    def write_errors(self) -> int:
        """Records not written: failed writes and records dropped from a full queue."""
        return self.log.write_errors + self.dropped

    def _submit(self, fn: Any, *args: Any, **kwargs: Any) -> bool:
        with self._count:
            if self._pending >= self.settings.queue_size:
                self.dropped += 1
                return False
            self._pending += 1

        def run() -> None:
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # never raised anywhere: counted by the log
                self.log.write_errors += 1
                logger.warning("feedback: record not written (%s)", exc)
            finally:
                with self._count:
                    self._pending -= 1

        try:
            self._writer.submit(run)
        except RuntimeError:  # shut down
            with self._count:
                self._pending -= 1
                self.dropped += 1
            return False
        return True

    def impression(
        self,
        answer: Mapping[str, Any],
        documents: list[Any],
        query: str,
        pipeline: str,
        **extra: Any,
    ) -> None:
        """Log the impression of ``answer`` (a response body with ``id`` and ``results``
        of ``index`` and ``relevance_score``) over the request's ``documents``; ``extra``:
        ``explore`` or ``interleaving``, ``endpoint`` (``"explain"``). Returns at once; logs
        nothing for a request sent with ``x-rerankit-experiment: off`` (:mod:`.opt_out`)."""
        if OPTED_OUT.get():
            return
        rid = str(answer["id"])
        ids = [str(i) if d.id is None else str(d.id) for i, d in enumerate(documents)]
        when = self.log.now()  # the answer's time, in the index and the log alike
        results = answer["results"]
        self.index.add(rid, answer_of(ids, [r["index"] for r in results]), when)
        # the text as the pipeline read it (a title on the line before); a document
        # without an id is logged by its index, marked positional
        docs = [
            {"id": d.id, "text": d.text, FIRST_STAGE_SCORE: d.metadata.get(FIRST_STAGE_SCORE)}
            for d in documents
        ]
        unlearnable = any(d.id is None for d in documents) and self.settings.store == "id"
        if unlearnable and not self._unlearnable:
            self._unlearnable = True
            logger.warning(
                "feedback: an answer's documents came without ids (a /v2/rerank request's "
                'strings, say) and store = "id" keeps only ids: such impressions are '
                "logged by each document's index and can never be learned from (no corpus "
                "can give their texts). Send each document's id (/v1/rerank takes objects "
                'with an id), or set store = "hash" or "text" (said once)'
            )
        shown = [r["index"] for r in results]
        scores = [r["relevance_score"] for r in results]
        options = {"scores": scores, "pipeline": pipeline, "time": when, **extra}
        if self._submit(self.log.log_impression, rid, query, docs, shown, **options):
            self.impressions += 1

    def record_feedback(
        self, rid: str, clicks: list[Any], dwell_ms: Any, *, unchecked: bool = False
    ) -> bool:
        """Log feedback (clicks as indices; ``unchecked``: for an id the log does not hold,
        the clicks as sent, marked so); False when it repeats feedback already recorded for
        the answer (nothing is written then)."""
        remember = self.index.remember_unchecked if unchecked else self.index.remember
        if not remember(rid, feedback_key(clicks, dwell_ms)):
            return False
        options = {"dwell_ms": dwell_ms, "unchecked": unchecked}
        if self._submit(self.log.log_feedback, rid, clicks, **options):
            self.feedback += 1
        return True

    def flush(self) -> None:
        """Wait until every queued record is written."""
        self._writer.submit(lambda: None).result()

    def collector(self) -> Any:
        """A Prometheus collector of the counts (read when /metrics is scraped)."""
        return _Collector(self)


class _Collector:
    def __init__(self, feedback: FeedbackLog) -> None:
        self.feedback = feedback

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        f = self.feedback
        for name, text, value in (
            ("impressions", "Impressions queued for the click log", f.impressions),
            ("records", "Feedback records queued for the click log", f.feedback),
            (
                "write_errors",
                "Click log records not written (a failed write, or a full queue)",
                f.write_errors,
            ),
        ):
            yield CounterMetricFamily(f"rerankit_feedback_{name}", text, value=value)
