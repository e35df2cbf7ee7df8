"""Scores read from the documents themselves: a numeric field (a first-stage retriever's
score), recency with a half-life, log-scaled popularity, or any callable."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from .._threads import in_thread
from ..documents import FIRST_STAGE_SCORE, PASS_FIRST_STAGE, field_value
from ..errors import InvalidDocumentError
from ..types import Document
from .base import ScoreBatch

__all__ = ["FieldScorer", "FunctionScorer", "PopularityScorer", "RecencyScorer"]

_MISSING = object()


class FieldScorer:
    """Uses a numeric field of each document as its score (higher = more relevant).

    ``field`` names a metadata key (a dict input's own field, e.g. ``"score"``); dots reach
    into nested mappings (``"retrieval.score"``). A document without the field raises an
    ``InvalidDocumentError`` naming it, unless ``missing`` gives a value to use instead:
    then each such document is flagged ``missing:<field>`` and the result carries a warning
    saying how many lacked it and how to pass it (the result is not ``degraded``: the
    fallback is the configured one).
    Set ``higher_is_better=False`` for distances or ranks. NaN or infinite values pass through
    to the reranker's non-finite policy (worst score, flagged, with a warning).
    """

    def __init__(
        self,
        field: str,
        *,
        name: str | None = None,
        missing: float | None = None,
        higher_is_better: bool = True,
    ) -> None:
        if not field:
            raise ValueError("field must be a non-empty string")
        self.field = field
        self.name = name or field
        self.missing = missing
        self.higher_is_better = higher_is_better

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        raw, absent = self._read(docs)
        return _with_missing(self, self._shaped(raw), absent)

    def values(self, docs: Sequence[Document]) -> np.ndarray:
        return self._shaped(self._read(docs)[0])

    def _shaped(self, values: np.ndarray) -> np.ndarray:
        """The scores from the field's values (as they are here; a subclass may reshape)."""
        return values

    def _read(self, docs: Sequence[Document]) -> tuple[np.ndarray, list[int]]:
        """The scores, and the documents without the field (scored ``missing``)."""
        out = np.empty(len(docs), dtype=np.float64)
        absent: list[int] = []
        for i, doc in enumerate(docs):
            value = field_value(doc, self.field, _MISSING)
            if value is _MISSING or value is None:
                absent.append(i)
                if self.missing is None:
                    raise InvalidDocumentError(
                        f"document {i}: missing numeric field {self.field!r} for scorer "
                        f"{self.name!r} (pass missing=<value> to allow it)",
                        index=i,
                        field=self.field,
                    )
                value = self.missing
            if isinstance(value, bool) or not isinstance(value, Real):
                raise InvalidDocumentError(
                    f"document {i}: field {self.field!r} must be a number, got {value!r}",
                    index=i,
                    field=self.field,
                )
            out[i] = float(value)
        return (out if self.higher_is_better else -out), absent


def _with_missing(scorer: Any, values: np.ndarray, absent: list[int]) -> ScoreBatch:
    """A field scorer's scores, with the documents ``absent`` (without its field, scored
    its ``missing``) flagged ``missing:<field>`` and one warning saying how many."""
    if not absent:
        return ScoreBatch(values=values)
    total = len(values)
    which = "every document" if len(absent) == total else f"{len(absent)} of {total} documents"
    how = f"give each document a {scorer.field!r} field"
    if scorer.field == FIRST_STAGE_SCORE:
        how = f"pass the retriever's score: {PASS_FIRST_STAGE}"
    return ScoreBatch(
        values=values,
        flags={i: [f"missing:{scorer.field}"] for i in absent},
        warnings=[
            f"scorer {scorer.name!r}: field {scorer.field!r} is missing from {which}; they "
            f"score missing={scorer.missing!r} ({how})"
        ],
    )


#: a number of this range is read as a date written YYYYMMDD (as epoch seconds it would be a
#: moment of August 1970)
_YYYYMMDD = (19000101, 21001231)
#: numbers from here up are epoch milliseconds (as seconds: after the year 5138)
_MILLISECONDS = 1e11
#: and from here up neither (as milliseconds: after the year 5138; microseconds?)
_TOO_LARGE = 1e14
#: what a RecencyScorer does with a value that is no time: fail the call, or score it missing
ON_BAD_DATE = ("error", "missing")
#: how many of those a warning names
_BAD_NAMED = 5
#: what a time may be, said by an error
TIME_FORMATS = (
    "a datetime, an ISO-8601 string such as '2025-06-01' or '2025-06-01T12:30:00Z', a "
    "YYYYMMDD number such as 20250601, epoch seconds or epoch milliseconds"
)


def _not_a_time(value: Any, i: int, field: str, why: str = "") -> InvalidDocumentError:
    where = f"document {i}: field {field!r}" if i >= 0 else repr(field)
    return InvalidDocumentError(
        f"{where} is not a time ({TIME_FORMATS}): {value!r}{why}",
        index=i if i >= 0 else None,
        field=field,
    )


def _number_as_seconds(value: Real, i: int, field: str) -> float:
    """A number as epoch seconds: a YYYYMMDD date, epoch seconds, or epoch milliseconds
    (told apart by size: no moment before 5138 is 1e11 epoch seconds or more)."""
    x = float(value)
    if not math.isfinite(x):
        raise _not_a_time(value, i, field)
    if x.is_integer() and _YYYYMMDD[0] <= x <= _YYYYMMDD[1]:
        digits = str(int(x))
        try:
            day = dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
        except ValueError:
            why = "; a number of this size is read as a date written YYYYMMDD, and this is none"
            raise _not_a_time(value, i, field, why) from None
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()
    if abs(x) < _MILLISECONDS:
        return x
    if abs(x) < _TOO_LARGE:
        return x / 1000.0
    raise _not_a_time(
        value, i, field, "; too large for epoch milliseconds (microseconds? divide by 1000)"
    )


def _as_seconds(value: Any, i: int, field: str) -> float:
    """A timestamp as epoch seconds: a datetime/date (naive: UTC), an ISO-8601 string, or a
    number (:func:`_number_as_seconds`). Anything else is an ``InvalidDocumentError`` naming
    document ``i`` (-1: ``field`` is a setting), the field and the value."""

    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return moment.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp()
    if isinstance(value, str):
        try:
            return _as_seconds(dt.datetime.fromisoformat(value.replace("Z", "+00:00")), i, field)
        except ValueError:
            pass
    if isinstance(value, Real) and not isinstance(value, bool):
        return _number_as_seconds(value, i, field)
    raise _not_a_time(value, i, field)


class RecencyScorer:
    """``0.5 ** (age in days / half_life_days)``: 1.0 for a document from ``now`` (default:
    the time of the call), 0.5 one half-life older, towards 0 for old ones (future dates
    count as now). ``field`` holds a datetime or date (naive: UTC), an ISO-8601 string
    (``"2025-06-01"``, ``"2025-06-01T12:30:00Z"``), or a number: one from 19000101 to
    21001231 is a date written YYYYMMDD (20250601), and it must be a real date; otherwise
    below 1e11 epoch seconds, from 1e11 to 1e14 epoch milliseconds (1e11 seconds would be
    after the year 5138); larger is an error. ``now`` may be any of these. A document
    without the field scores ``missing`` (default 0.0) and is flagged ``missing:<field>``,
    and the result carries a warning saying how many lacked it (as :class:`FieldScorer`'s).
    An empty string (or one of spaces) counts as missing, as None does. A value that is no
    time is an ``InvalidDocumentError`` naming the document, the field and the value, which
    fails the call; with ``on_bad_date="missing"`` it scores ``missing`` instead, flagged
    ``bad_date:<field>``, and a warning names the documents and their values."""

    def __init__(
        self,
        field: str = "published_at",
        *,
        half_life_days: float = 30.0,
        now: Any = None,
        missing: float = 0.0,
        on_bad_date: str = "error",
        name: str = "recency",
    ) -> None:
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, Real):
            raise TypeError(f"half_life_days must be a number of days, got {half_life_days!r}")
        if half_life_days <= 0:
            raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
        if now is not None:
            try:
                _as_seconds(now, -1, "now")
            except InvalidDocumentError:
                raise ValueError(f"now must be {TIME_FORMATS}, got {now!r}") from None
        if on_bad_date not in ON_BAD_DATE:
            raise ValueError(
                f"on_bad_date must be 'error' (a value that is no time fails the call) or "
                f"'missing' (it scores missing=, flagged), got {on_bad_date!r}"
            )
        self.field, self.half_life_days, self.now = field, half_life_days, now
        self.missing, self.on_bad_date, self.name = missing, on_bad_date, name

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:

        now = _as_seconds(self.now, -1, "now") if self.now is not None else time.time()
        out = np.full(len(docs), float(self.missing))
        absent: list[int] = []
        bad: dict[int, Any] = {}  # the values that are no time, with on_bad_date="missing"
        for i, doc in enumerate(docs):
            value = field_value(doc, self.field, _MISSING)
            if value is _MISSING or value is None or (isinstance(value, str) and not value.strip()):
                absent.append(i)
                continue
            try:
                seconds = _as_seconds(value, i, self.field)
            except InvalidDocumentError:
                if self.on_bad_date == "error":
                    raise
                bad[i] = value
                continue
            out[i] = 0.5 ** (max(0.0, now - seconds) / 86_400.0 / self.half_life_days)
        batch = _with_missing(self, out, absent)
        return batch if not bad else self._with_bad(batch, bad)

    def _with_bad(self, batch: ScoreBatch, bad: dict[int, Any]) -> ScoreBatch:
        """``batch`` with the documents whose value is no time (scored ``missing``) flagged
        ``bad_date:<field>`` and one warning naming the first few, with their values."""
        named = ", ".join(f"document {i}: {v!r}" for i, v in list(bad.items())[:_BAD_NAMED])
        more = f" and {len(bad) - _BAD_NAMED} more" if len(bad) > _BAD_NAMED else ""
        which = f"{len(bad)} of {len(batch.values)} documents"
        flags = {i: list(f) for i, f in batch.flags.items()}
        for i in bad:
            flags.setdefault(i, []).append(f"bad_date:{self.field}")
        warning = (
            f"scorer {self.name!r}: field {self.field!r} is not a time in {which} "
            f"({named}{more}); they score missing={self.missing!r} (on_bad_date='missing')"
        )
        return ScoreBatch(values=batch.values, flags=flags, warnings=[*batch.warnings, warning])


class PopularityScorer(FieldScorer):
    """``log1p`` of a non-negative count field (views, citations, stars), so a thousand
    views beat ten by a margin, not a hundredfold. Negative values count as 0."""

    def __init__(
        self, field: str = "popularity", *, missing: float | None = 0.0, name: str = "popularity"
    ) -> None:
        super().__init__(field, name=name, missing=missing)

    def _shaped(self, values: np.ndarray) -> np.ndarray:
        return np.log1p(np.clip(values, 0.0, None))


class FunctionScorer:
    """Any callable as a scorer: ``fn(query, document) -> float`` per document, or with
    ``batch=True``, ``fn(query, documents) -> sequence of floats``. Documents are
    :class:`~rerankit.Document` (text, id, metadata). The callable runs on a worker thread,
    so a slow one does not stall other requests of an async application."""

    def __init__(self, fn: Any, *, name: str | None = None, batch: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        self.fn, self.batch = fn, batch
        self.name = name or getattr(fn, "__name__", "function")

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:

        return await in_thread(self.values, query, docs)  # never block the loop

    def values(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        if self.batch:
            return np.asarray(self.fn(query, list(docs)), dtype=np.float64)
        return np.asarray([float(self.fn(query, d)) for d in docs], dtype=np.float64)
