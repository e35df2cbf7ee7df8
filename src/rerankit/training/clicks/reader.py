"""Reading a click log (:mod:`.log`'s format) and joining each impression with its
feedback into a :class:`Session`.

An impression without feedback is a session without clicks. Feedback for an ``id`` sent
more than once counts once: the clicks of every record for the id are united, so a
repeated record changes nothing and a later one adds its clicks. Feedback whose ``id`` no
impression has is counted (``orphan_feedback``; of them, ``orphan_unchecked`` those a service
replica kept unchecked, its answer in a log not read) and left out; so is feedback that came more
than ``max_feedback_delay`` seconds after its impression, when one is given
(``late_feedback``). An impression whose ``id`` an earlier one has (the same log written
twice, say) is counted (``duplicate_impressions``), noted with its file and line, logged
at WARNING and left out: the first is kept, and all feedback for the id joins it. A click
naming by id a document whose id other documents of its impression share is counted
(``ambiguous_clicks``) and left out: it cannot say which of them was clicked. A line that
is not a valid record is counted and described (with its file and line) and skipped, or
raised with ``strict=True``. An impression of the service's ``/v1/explain`` (``"endpoint":
"explain"``: the playground's tries, not a user's search) is counted
(``explain_impressions``) and left out with its feedback, unless ``explain=True``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._words import counted
from ...errors import InputError, no_such_file
from .log import Feedback, Impression, log_files
from .parsing import parse_record

__all__ = [
    "ReadReport",
    "Session",
    "check_delay",
    "join",
    "logs_files",
    "parse_record",
    "read_log",
]

#: how many problems a :class:`ReadReport` describes (all are counted)
PROBLEMS_KEPT = 10
#: an id that several documents of an impression share, in the ids a click can name
_SHARED = -1

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Session:
    """One impression and what was clicked in it: ``clicks`` are indices into
    ``impression.documents`` (sorted, distinct); ``dwell_ms`` the dwell of a clicked index
    when the feedback gave one."""

    impression: Impression
    clicks: tuple[int, ...] = ()
    dwell_ms: Mapping[int, float] = field(default_factory=dict)

    def clicked_positions(self) -> list[int]:
        """The 1-based positions of the clicked documents that were shown."""
        where = {i: p for p, i in enumerate(self.impression.shown, start=1)}
        return sorted(where[i] for i in self.clicks if i in where)


@dataclass
class ReadReport:
    """What :func:`read_log` read and what it left out."""

    files: list[str] = field(default_factory=list)
    impressions: int = 0
    feedback: int = 0
    #: impressions left out: an earlier one has their id (the first of each id is kept)
    duplicate_impressions: int = 0
    repeated_feedback: int = 0
    #: feedback records left out: their answer is in none of the logs read
    orphan_feedback: int = 0
    #: of ``orphan_feedback``, those a replica kept unchecked (``accept_unknown_ids``): the
    #: answer is in another replica's log, not read
    orphan_unchecked: int = 0
    #: impressions left out with their feedback: ``/v1/explain``'s (the playground's)
    explain_impressions: int = 0
    #: feedback records left out: later than ``max_feedback_delay`` after their impression
    late_feedback: int = 0
    unknown_clicks: int = 0
    #: of ``unknown_clicks``, the integers past the impression's documents: an integer
    #: click is an index, so a numeric document id sent as a number names nothing
    index_clicks: int = 0
    #: clicks on a document of the impression it did not show (learning leaves them out):
    #: a client that sent positions on screen, say, rather than ``results[].index``
    unshown_clicks: int = 0
    #: clicks left out: an id several documents of the impression share
    ambiguous_clicks: int = 0
    malformed: int = 0
    #: impressions left out of learning: a document without a text (in the log or corpus)
    unresolved: int = 0
    #: documents found by their id: their logged hash matches no text of the corpus given
    found_by_id: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self, problem: str) -> None:
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(problem)

    def counts(self) -> dict[str, Any]:
        """The files read and what of them was read and left out, for a JSON report
        (``rerankit interleave-report --json``'s ``read``)."""
        return {
            "files": self.files,
            "impressions": self.impressions,
            "feedback": self.feedback,
            "late_feedback": self.late_feedback,
            "duplicate_impressions": self.duplicate_impressions,
            "orphan_feedback": self.orphan_feedback,
            "explain_impressions": self.explain_impressions,
        }

    def describe(self) -> str:
        """One line of what was read and left out, then the problems kept, one a line."""
        unknown = f"{counted(self.unknown_clicks, 'click')} naming no document"
        if self.index_clicks:
            unknown += (
                f" ({self.index_clicks} an integer past the documents: an integer click is "
                "an index; send ids as strings)"
            )
        left_out = [
            (self.repeated_feedback, f"{self.repeated_feedback} repeated feedback"),
            (self.orphan_feedback, _orphans(self.orphan_feedback, self.orphan_unchecked)),
            (
                self.late_feedback,
                f"{self.late_feedback} feedback later than the maximum delay after its impression",
            ),
            (
                self.duplicate_impressions,
                counted(self.duplicate_impressions, "impression")
                + " repeating an earlier one's id (the first kept)",
            ),
            (self.unknown_clicks, unknown),
            (
                self.unshown_clicks,
                f"{counted(self.unshown_clicks, 'click')} on a document not shown",
            ),
            (
                self.ambiguous_clicks,
                f"{counted(self.ambiguous_clicks, 'click')} by an id several documents share",
            ),
            (self.malformed, counted(self.malformed, "bad line")),
            (
                self.explain_impressions,
                counted(self.explain_impressions, "impression")
                + " of /v1/explain (the playground's) left out",
            ),
        ]
        line = (
            f"read {counted(len(self.files), 'file')}: {counted(self.impressions, 'impression')}, "
            f"{counted(self.feedback, 'feedback record')}"
        )
        kinds = [what for count, what in left_out if count]
        if self.unresolved:
            kinds.append(
                f"{counted(self.unresolved, 'impression')} left out: a document without a text"
            )
        if self.found_by_id:
            kinds.append(
                f"{counted(self.found_by_id, 'document')} found by id: the logged hash matches "
                "no text of the corpus"
            )
        if kinds:
            line += f" ({', '.join(kinds)})"
        return "\n".join([line, *(f"  {problem}" for problem in self.problems)])


def _orphans(n: int, unchecked: int) -> str:
    """Feedback whose answer no log read holds; when a replica kept some unchecked, where
    the answers are."""
    named = "names an answer" if n == 1 else "name answers"
    said = f"{counted(n, 'feedback record')} {named} in none of the logs read"
    return f"{said}: read every replica's log" if unchecked else said


def _resolve(click: int | str, impression: Impression, ids: dict[str, int] | None) -> int | None:
    """The index ``click`` names, None for none, :data:`_SHARED` for an id that several
    documents have."""
    if isinstance(click, int):
        return click if 0 <= click < len(impression.documents) else None
    if ids is None:
        return None
    return ids.get(click)


def _at(sources: Sequence[tuple[str, int]] | None, n: int) -> str:
    """`` (FILE, line N)`` of record ``n``, or nothing without ``sources``."""
    return f" ({sources[n][0]}, line {sources[n][1]})" if sources else ""


def _ids(impression: Impression) -> dict[str, int]:
    """The index of each document id of ``impression`` (:data:`_SHARED` for a shared one)."""
    ids: dict[str, int] = {}
    for i, d in enumerate(impression.documents):
        ids[d.id] = _SHARED if d.id in ids else i
    return ids


def check_delay(max_feedback_delay: float | None) -> None:
    """ValueError unless ``max_feedback_delay`` is None or a number of seconds >= 0."""
    if max_feedback_delay is not None and not (
        isinstance(max_feedback_delay, (int, float))
        and not isinstance(max_feedback_delay, bool)
        and max_feedback_delay >= 0
    ):
        raise ValueError(
            f"max_feedback_delay must be seconds >= 0 or None, got {max_feedback_delay!r}"
        )


def _late(record: Feedback, impression: Impression, limit: float | None) -> bool:
    """Feedback more than ``limit`` seconds after its impression (never when either has no
    time: a record without one reads as 0)."""
    if limit is None or not record.time or not impression.time:
        return False
    return record.time - impression.time > limit


def join(
    records: Iterable[Impression | Feedback],
    report: ReadReport | None = None,
    *,
    max_feedback_delay: float | None = None,
    sources: Sequence[tuple[str, int]] | None = None,
    explain: bool = False,
) -> list[Session]:
    """Sessions from impressions and feedback in any order (see the module doc), in the
    order of the impressions' first appearance. A second impression with an id already
    seen is counted, noted and left out (the first is kept). ``max_feedback_delay``:
    seconds after its impression past which a feedback record is counted and left out
    (None: no limit; a record or impression without a time is kept). ``sources``: the file
    and line of each record, named in the notes. ``explain``: keep the impressions of
    ``/v1/explain`` (left out by default, counted)."""
    check_delay(max_feedback_delay)
    report = report if report is not None else ReadReport()
    impressions: dict[str, Impression] = {}
    first: dict[str, int] = {}  # the record number of each impression kept
    feedback: dict[str, list[Feedback]] = {}
    repeated: dict[str, int] = {}  # the files of the impressions left out, and how many
    tried: set[str] = set()  # the ids of /v1/explain's impressions, left out
    line_of: dict[int, int] = {}  # each feedback record's number, for its file and line
    for n, record in enumerate(records):
        if isinstance(record, Impression):
            if record.endpoint == "explain" and not explain:
                report.explain_impressions += 1
                tried.add(record.id)
                continue
            if record.id in impressions:
                report.duplicate_impressions += 1
                file = sources[n][0] if sources else "the click log"
                repeated[file] = repeated.get(file, 0) + 1
                report.note(
                    f"impression {record.id!r}{_at(sources, n)} repeats the id of an earlier "
                    f"one{_at(sources, first[record.id])}: left out (the first kept)"
                )
                continue
            impressions[record.id], first[record.id] = record, n
            report.impressions += 1
        else:
            feedback.setdefault(record.id, []).append(record)
            line_of[id(record)] = n
            report.feedback += 1
    if repeated:
        logger.warning(
            "%s: %s left out: an earlier impression has the answer id (the first of each id "
            "is kept, and all feedback for the id joins it); was the same log written twice, "
            "by an example run again, say?",
            ", ".join(repeated),
            counted(sum(repeated.values()), "impression"),
        )
    for rid, records_of in feedback.items():
        if rid not in impressions and rid not in tried:
            report.orphan_feedback += len(records_of)
            report.orphan_unchecked += sum(r.unchecked for r in records_of)
    sessions = []
    for rid, impression in impressions.items():
        clicks: set[int] = set()
        dwell: dict[int, float] = {}
        ids: dict[str, int] | None = None
        seen: set[tuple[Any, ...]] = set()
        shown = set(impression.shown)
        for record in feedback.get(rid, ()):
            if _late(record, impression, max_feedback_delay):
                report.late_feedback += 1
                continue
            key = (record.clicks, record.dwell_ms)
            if key in seen:
                report.repeated_feedback += 1
                continue
            seen.add(key)
            at = _at(sources, line_of[id(record)])
            if ids is None and any(isinstance(c, str) for c in record.clicks):
                ids = _ids(impression)
            for n, click in enumerate(record.clicks):
                index = _resolve(click, impression, ids)
                if index == _SHARED:
                    report.ambiguous_clicks += 1
                    report.note(
                        f"feedback {rid}: click {click!r} is the id of several of its "
                        f"documents, so it names none of them alone (left out){at}"
                    )
                    continue
                if index is None:
                    report.unknown_clicks += 1
                    why = ""
                    if isinstance(click, int):
                        report.index_clicks += 1
                        why = (
                            f" (an integer click is an index into its "
                            f"{len(impression.documents)} documents; send ids as strings)"
                        )
                    report.note(
                        f"feedback {rid}: click {click!r} names none of its documents{why}{at}"
                    )
                    continue
                if index not in shown:
                    report.unshown_clicks += 1
                    report.note(
                        f"feedback {rid}: click {click!r} names document {index}, which the "
                        f"impression did not show (left out){at}"
                    )
                clicks.add(index)
                d = record.dwell_ms
                value = d[n] if isinstance(d, tuple) else d
                if value is not None:
                    dwell[index] = max(dwell.get(index, 0.0), float(value))
        sessions.append(Session(impression, tuple(sorted(clicks)), dwell))
    return sessions


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8-sig") as handle:
        yield from enumerate(handle, start=1)


def _records(
    files: Sequence[Path], report: ReadReport, strict: bool
) -> tuple[list[Any], list[tuple[str, int]]]:
    """The records of ``files`` and the file and line of each."""
    out, sources = [], []
    for path in files:
        report.files.append(str(path))
        try:
            lines = _lines(path)
            for lineno, line in lines:
                if not line.strip():
                    continue
                try:
                    out.append(parse_record(json.loads(line)))
                    sources.append((str(path), lineno))
                except ValueError as exc:  # json.JSONDecodeError is a ValueError
                    where = f"{path}:{lineno}"
                    if strict:
                        raise InputError(f"{where}: {exc}") from None
                    report.malformed += 1
                    report.note(f"{where}: {exc}")
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text; a click log is UTF-8 JSON Lines") from None
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return out, sources


def logs_files(logs: Sequence[str | Path]) -> list[Path]:
    """The files of several click logs (one per replica, say), each with its rotated files
    oldest first: what :func:`read_log` reads of them all (an InputError for a log with no
    file)."""
    files = []
    for log in logs:
        found = log_files(log)
        if not found:
            raise InputError(no_such_file(log, "a click log, or its rotated files"))
        files.extend(found)
    return files


def read_log(
    paths: str | Path | Sequence[str | Path],
    *,
    strict: bool = False,
    max_feedback_delay: float | None = None,
    explain: bool = False,
) -> tuple[list[Session], ReadReport]:
    """The sessions of a click log: a file (read with its rotated files, oldest first), or
    several files in the order given (:func:`logs_files` lists several logs' files, each
    with its rotated ones). Feedback is joined with its impression whichever file holds
    each. ``strict``: raise :class:`~rerankit.errors.InputError` at the first bad line
    (naming the file and line) instead of counting it. ``max_feedback_delay``: seconds
    after its impression past which feedback is left out (counted in the report's
    ``late_feedback``); None (the default) keeps feedback however late. ``explain``: keep
    the impressions of the service's ``/v1/explain`` (the playground's tries), which are
    left out by default and counted in ``explain_impressions``."""
    check_delay(max_feedback_delay)
    files = logs_files([paths]) if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    report = ReadReport()
    records, sources = _records(files, report, strict)
    sessions = join(
        records, report, max_feedback_delay=max_feedback_delay, sources=sources, explain=explain
    )
    return sessions, report
