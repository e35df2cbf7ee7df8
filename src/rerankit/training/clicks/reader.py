"""Reading a click log (:mod:`.log`'s format) and joining each impression with its
feedback into a :class:`Session`.

An impression without feedback is a session without clicks. Feedback for an ``id`` sent
more than once counts once: the clicks of every record for the id are united, so a
repeated record changes nothing and a later one adds its clicks. Feedback whose ``id`` no
impression has is counted (``orphan_feedback``) and left out; so is feedback that came more
than ``max_feedback_delay`` seconds after its impression, when one is given
(``late_feedback``). A line that is not a valid
record is counted and described (with its file and line) and skipped, or raised with
``strict=True``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError, no_such_file
from .log import Feedback, Impression, LoggedDocument, log_files
from .records import record_time

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
    duplicate_impressions: int = 0
    repeated_feedback: int = 0
    orphan_feedback: int = 0
    #: feedback records left out: later than ``max_feedback_delay`` after their impression
    late_feedback: int = 0
    unknown_clicks: int = 0
    #: of ``unknown_clicks``, the integers past the impression's documents: an integer
    #: click is an index, so a numeric document id sent as a number names nothing
    index_clicks: int = 0
    #: clicks on a document of the impression it did not show (learning leaves them out):
    #: a client that sent positions on screen, say, rather than ``results[].index``
    unshown_clicks: int = 0
    malformed: int = 0
    #: impressions left out of learning: a document without a text (in the log or corpus)
    unresolved: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self, problem: str) -> None:
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(problem)

    def describe(self) -> str:
        """One line of what was read and left out, then the problems kept, one a line."""
        unknown = f"{_count(self.unknown_clicks, 'click')} naming no document"
        if self.index_clicks:
            unknown += (
                f" ({self.index_clicks} an integer past the documents: an integer click is "
                "an index; send ids as strings)"
            )
        left_out = [
            (self.repeated_feedback, f"{self.repeated_feedback} repeated feedback"),
            (self.orphan_feedback, f"{self.orphan_feedback} feedback without an impression"),
            (
                self.late_feedback,
                f"{self.late_feedback} feedback later than the maximum delay after its impression",
            ),
            (
                self.duplicate_impressions,
                _count(self.duplicate_impressions, "repeated impression id"),
            ),
            (self.unknown_clicks, unknown),
            (
                self.unshown_clicks,
                f"{_count(self.unshown_clicks, 'click')} on a document not shown",
            ),
            (self.malformed, _count(self.malformed, "bad line")),
        ]
        line = (
            f"read {_count(len(self.files), 'file')}: {_count(self.impressions, 'impression')}, "
            f"{_count(self.feedback, 'feedback record')}"
        )
        counted = [what for count, what in left_out if count]
        if self.unresolved:
            counted.append(
                f"{_count(self.unresolved, 'impression')} left out: a document without a text"
            )
        if counted:
            line += f" ({', '.join(counted)})"
        return "\n".join([line, *(f"  {problem}" for problem in self.problems)])


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return float(value)


def _document(value: Any, n: int) -> LoggedDocument:
    if not isinstance(value, Mapping) or not isinstance(value.get("id"), (str, int)):
        raise ValueError(f"documents[{n}] must be an object with an id, got {value!r:.60}")
    score = value.get("first_stage_score")
    return LoggedDocument(
        id=str(value["id"]),
        text=None if value.get("text") is None else str(value["text"]),
        sha256=None if value.get("sha256") is None else str(value["sha256"]),
        first_stage_score=None if score is None else _number(score, "first_stage_score"),
        positional=value.get("positional") is True,
    )


def _check_interleaving(info: Any, shown: int, rid: Any) -> None:
    """An impression's ``interleaving``: two pipelines, and a team (team draft) or a
    credit (optimized interleaving) for at most each position shown."""
    if info is None:
        return
    where = f"impression {rid}: interleaving"
    if not isinstance(info, Mapping):
        raise ValueError(f"{where} must be an object")
    names = info.get("pipelines")
    if not isinstance(names, list) or len(names) != 2:
        raise ValueError(f"{where}.pipelines must name two pipelines")
    for name, kinds in (("teams", (int,)), ("credits", (int, float))):
        values = info.get(name)
        if values is None:
            continue
        if (
            not isinstance(values, list)
            or len(values) > shown
            or any(isinstance(v, bool) or not isinstance(v, kinds) for v in values)
        ):
            raise ValueError(f"{where}.{name} must be a list of numbers, one per position shown")


def parse_record(value: Any) -> Impression | Feedback:
    """A record of the format from its JSON value; ValueError naming the field that is
    wrong. A converter from another system's log can build these values and check them
    here."""
    if not isinstance(value, Mapping):
        raise ValueError(f"a record must be a JSON object, got {type(value).__name__}")
    kind, rid = value.get("type"), value.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
        raise ValueError(f"id must be a non-empty string, got {rid!r}")
    if kind == "impression":
        query, docs, shown = value.get("query"), value.get("documents"), value.get("shown")
        if not isinstance(query, str):
            raise ValueError(f"impression {rid}: query must be a string")
        if not isinstance(docs, list):
            raise ValueError(f"impression {rid}: documents must be a list")
        documents = tuple(_document(d, n) for n, d in enumerate(docs))
        if not isinstance(shown, list) or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(documents)
            for i in shown
        ):
            raise ValueError(
                f"impression {rid}: shown must list indices into its {len(documents)} documents"
            )
        if len(set(shown)) != len(shown):
            raise ValueError(f"impression {rid}: shown lists an index twice")
        scores = value.get("scores")
        if scores is not None and (not isinstance(scores, list) or len(scores) != len(shown)):
            raise ValueError(f"impression {rid}: scores must have one number per shown document")
        _check_interleaving(value.get("interleaving"), len(shown), rid)
        return Impression(
            id=str(rid),
            query=query,
            documents=documents,
            shown=tuple(shown),
            scores=None
            if scores is None
            else tuple(math.nan if s is None else _number(s, "scores") for s in scores),
            pipeline=str(value.get("pipeline") or ""),
            time=record_time(value.get("time"), f"impression {rid}"),
            query_id=None if value.get("query_id") is None else str(value["query_id"]),
            explore=value.get("explore"),
            interleaving=value.get("interleaving"),
        )
    if kind == "feedback":
        clicks = value.get("clicks")
        if not isinstance(clicks, list) or any(
            isinstance(c, bool) or not isinstance(c, (int, str)) for c in clicks
        ):
            raise ValueError(f"feedback {rid}: clicks must list document indices or ids")
        dwell = value.get("dwell_ms")
        if isinstance(dwell, list):
            if len(dwell) != len(clicks):
                raise ValueError(f"feedback {rid}: dwell_ms must have one value per click")
            dwell = tuple(None if d is None else _number(d, "dwell_ms") for d in dwell)
        elif dwell is not None:
            dwell = _number(dwell, "dwell_ms")
        return Feedback(
            str(rid), tuple(clicks), dwell, record_time(value.get("time"), f"feedback {rid}")
        )
    raise ValueError(f"type must be 'impression' or 'feedback', got {kind!r}")


def _resolve(click: int | str, impression: Impression, ids: dict[str, int] | None) -> int | None:
    if isinstance(click, int):
        return click if 0 <= click < len(impression.documents) else None
    if ids is None:
        return None
    return ids.get(click)


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
) -> list[Session]:
    """Sessions from impressions and feedback in any order (see the module doc), in the
    order of the impressions' first appearance. A second impression with an id already
    seen is counted and left out. ``max_feedback_delay``: seconds after its impression past
    which a feedback record is counted and left out (None: no limit; a record or
    impression without a time is kept)."""
    check_delay(max_feedback_delay)
    report = report if report is not None else ReadReport()
    impressions: dict[str, Impression] = {}
    feedback: dict[str, list[Feedback]] = {}
    for record in records:
        if isinstance(record, Impression):
            if record.id in impressions:
                report.duplicate_impressions += 1
                continue
            impressions[record.id] = record
            report.impressions += 1
        else:
            feedback.setdefault(record.id, []).append(record)
            report.feedback += 1
    report.orphan_feedback += sum(len(v) for k, v in feedback.items() if k not in impressions)
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
            if ids is None and any(isinstance(c, str) for c in record.clicks):
                ids = {}
                for i, d in enumerate(impression.documents):
                    ids.setdefault(d.id, i)
            for n, click in enumerate(record.clicks):
                index = _resolve(click, impression, ids)
                if index is None:
                    report.unknown_clicks += 1
                    why = ""
                    if isinstance(click, int):
                        report.index_clicks += 1
                        why = (
                            f" (an integer click is an index into its "
                            f"{len(impression.documents)} documents; send ids as strings)"
                        )
                    report.note(f"feedback {rid}: click {click!r} names none of its documents{why}")
                    continue
                if index not in shown:
                    report.unshown_clicks += 1
                    report.note(
                        f"feedback {rid}: click {click!r} names document {index}, which the "
                        "impression did not show (left out)"
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


def _records(files: Sequence[Path], report: ReadReport, strict: bool) -> list[Any]:
    out = []
    for path in files:
        report.files.append(str(path))
        try:
            lines = _lines(path)
            for lineno, line in lines:
                if not line.strip():
                    continue
                try:
                    out.append(parse_record(json.loads(line)))
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
    return out


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
) -> tuple[list[Session], ReadReport]:
    """The sessions of a click log: a file (read with its rotated files, oldest first), or
    several files in the order given (:func:`logs_files` lists several logs' files, each
    with its rotated ones). Feedback is joined with its impression whichever file holds
    each. ``strict``: raise :class:`~rerankit.errors.InputError` at the first bad line
    (naming the file and line) instead of counting it. ``max_feedback_delay``: seconds
    after its impression past which feedback is left out (counted in the report's
    ``late_feedback``); None (the default) keeps feedback however late."""
    check_delay(max_feedback_delay)
    files = logs_files([paths]) if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    report = ReadReport()
    sessions = join(_records(files, report, strict), report, max_feedback_delay=max_feedback_delay)
    return sessions, report
