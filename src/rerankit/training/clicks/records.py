"""The records of a click log (:mod:`.log` describes the format): :class:`Impression`,
:class:`Feedback`, each candidate as an impression keeps it (:class:`LoggedDocument`, built
by :func:`logged_document`) and :func:`text_hash`, how a log stored as ``hash`` names a
text."""

from __future__ import annotations

import hashlib
import math
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ...documents import TITLE, titled_text

__all__ = [
    "STORE",
    "Answer",
    "ClickError",
    "Feedback",
    "Impression",
    "LoggedDocument",
    "answer_of",
    "encodable",
    "logged_document",
    "record_time",
    "text_hash",
]

#: what an impression keeps of each document: its text, the SHA-256 of its text, or its id
STORE = ("text", "hash", "id")


def record_time(value: Any, what: str = "record") -> float:
    """A record's ``time`` as seconds since the epoch: a number as it is, an ISO 8601
    string (``2026-10-06T05:33:55+02:00``; ``Z`` for UTC; one without an offset is read as
    UTC, whatever the machine's time zone), None as 0; ValueError naming ``what``
    otherwise."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            return when.timestamp()
    raise ValueError(f"{what}: time must be seconds since the epoch or ISO 8601, got {value!r}")


def text_hash(text: str) -> str:
    """The SHA-256 of a text's UTF-8 bytes, hex: how a log stored as ``hash`` names a text
    (a lone surrogate hashed as the U+FFFD it is written as: :func:`encodable`)."""
    return hashlib.sha256(encodable(text).encode("utf-8")).hexdigest()


def encodable(text: str) -> str:
    """``text`` with each lone surrogate (text that is not Unicode, which scoring reads as
    U+FFFD) as U+FFFD too, so that it can be written in UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class LoggedDocument:
    """One candidate as an impression keeps it: ``id`` and, as configured, ``text`` or
    ``sha256``; ``first_stage_score`` when the request gave one. ``positional``: the
    request gave the document no id, so ``id`` is its index in the request (``"0"``,
    ``"1"``, ...), which names no document of a corpus: learning never looks it up by it."""

    id: str
    text: str | None = None
    sha256: str | None = None
    first_stage_score: float | None = None
    positional: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.positional:
            out["positional"] = True
        if self.text is not None:
            out["text"] = self.text
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.first_stage_score is not None:
            out["first_stage_score"] = self.first_stage_score
        return out


@dataclass(frozen=True)
class Impression:
    """One answer as shown (see the module doc for the fields)."""

    id: str
    query: str
    documents: tuple[LoggedDocument, ...]
    shown: tuple[int, ...]
    scores: tuple[float, ...] | None = None
    pipeline: str = ""
    time: float = 0.0
    query_id: str | None = None
    explore: Mapping[str, Any] | None = None
    interleaving: Mapping[str, Any] | None = None
    #: what answered it, where not a rerank endpoint: ``"explain"`` (the service's
    #: ``/v1/explain``, which the playground calls), left out of learning
    endpoint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "impression",
            "id": self.id,
            "time": self.time,
            "pipeline": self.pipeline,
            "query": self.query,
        }
        if self.query_id is not None:
            out["query_id"] = self.query_id
        out["documents"] = [d.as_dict() for d in self.documents]
        out["shown"] = list(self.shown)
        if self.scores is not None:
            out["scores"] = list(self.scores)
        if self.explore is not None:
            out["explore"] = dict(self.explore)
        if self.interleaving is not None:
            out["interleaving"] = dict(self.interleaving)
        if self.endpoint is not None:
            out["endpoint"] = self.endpoint
        return out


@dataclass(frozen=True)
class Feedback:
    """The clicks of one answer: indices into its impression's documents or document ids;
    ``dwell_ms`` one number for the answer, or one per click (None: not measured).
    ``unchecked``: written by a service replica whose log does not hold the answer
    (``accept_unknown_ids``), so its clicks were not checked against it."""

    id: str
    clicks: tuple[int | str, ...]
    dwell_ms: float | tuple[float | None, ...] | None = None
    time: float = 0.0
    unchecked: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "feedback",
            "id": self.id,
            "time": self.time,
            "clicks": list(self.clicks),
        }
        if self.dwell_ms is not None:
            dwell = self.dwell_ms
            out["dwell_ms"] = list(dwell) if isinstance(dwell, tuple) else dwell
        if self.unchecked:
            out["unchecked"] = True
        return out


def logged_document(doc: Any, store: str, n: int) -> LoggedDocument:
    """Candidate ``n`` (a string, a ``LoggedDocument``, a dict with ``id``/``text``/
    ``title``/``first_stage_score``, an object with those attributes, or an ``(id, text[,
    first_stage_score])`` tuple) as ``store`` keeps it: its text as a reranker reads it
    (:func:`~rerankit.documents.titled_text`), its id or, without one, its index
    (``positional``)."""
    digest, positional = None, False
    if isinstance(doc, LoggedDocument):
        doc_id, text, digest = doc.id, doc.text, doc.sha256
        score, positional = doc.first_stage_score, doc.positional
    elif isinstance(doc, str):
        doc_id, text, score = None, doc, None
    elif isinstance(doc, Mapping):
        doc_id, text = doc.get("id"), doc.get("text")
        digest, score = doc.get("sha256"), doc.get("first_stage_score")
        if text is not None:
            text = titled_text(str(text), doc.get(TITLE))
    elif isinstance(doc, tuple):
        doc_id, text = doc[0], doc[1] if len(doc) > 1 else None
        score = doc[2] if len(doc) > 2 else None
    else:
        doc_id, text = getattr(doc, "id", None), getattr(doc, "text", None)
        metadata = getattr(doc, "metadata", None) or {}
        score = metadata.get("first_stage_score")
    if text is not None and digest is None:
        digest = text_hash(str(text))
    keep_text = store == "text" and text is not None
    return LoggedDocument(
        id=str(n if doc_id is None else doc_id),
        text=str(text) if keep_text else None,
        sha256=digest if store == "hash" or (store == "text" and not keep_text) else None,
        first_stage_score=None if score is None else float(score),
        positional=positional or doc_id is None,
    )


@dataclass(frozen=True)
class Answer:
    """What feedback is checked against: the answer's number of documents, their ids (None
    when each id is its index) and the indices it showed (None: all of them)."""

    documents: int
    ids: tuple[str, ...] | None = None
    shown: frozenset[int] | None = None

    def resolve(self, click: int | str) -> int | None:
        """The index a click names (an index: any integer, numpy's too; or a document id, a
        string), or None."""
        if isinstance(click, bool):
            return None
        if not isinstance(click, str):
            try:
                index = operator.index(click)
            except TypeError:
                return None
            return index if 0 <= index < self.documents else None
        if self.ids is None:
            return int(click) if click.isdigit() and int(click) < self.documents else None
        try:
            return self.ids.index(click)
        except ValueError:
            return None

    def indices(self, clicks: Any) -> list[int]:
        """The indices ``clicks`` name; :class:`ClickError` for the first that names no
        document of the answer, one it did not show, or an id several of its documents
        have (which of them was clicked, the id cannot say)."""
        out = []
        for n, click in enumerate(clicks):
            if isinstance(click, str) and self.ids is not None and self.ids.count(click) > 1:
                at = [i for i, d in enumerate(self.ids) if d == click]
                raise ClickError(
                    n,
                    f"{click!r} is the id of documents {at} of the answer, so it names none of "
                    "them alone: name the one clicked by its index (results[].index)",
                )
            index = self.resolve(click)
            if index is None:
                hint = "an index from 0, or a document id"
                if isinstance(click, int):
                    hint = "an integer is an index from 0; send document ids as strings"
                raise ClickError(
                    n, f"{click!r} names none of the answer's {self.documents} documents ({hint})"
                )
            if self.shown is not None and index not in self.shown:
                raise ClickError(
                    n,
                    f"{click!r} names document {index}, which the answer did not show (it "
                    f"showed {sorted(self.shown)}, as results[].index gives them): a click "
                    "names a document shown",
                )
            out.append(index)
        return out


class ClickError(ValueError):
    """A click that names no document of its answer, or one not shown: ``n`` is its place
    in the clicks."""

    def __init__(self, n: int, message: str) -> None:
        super().__init__(f"clicks[{n}]: {message}")
        self.n = n
        self.reason = message


def answer_of(ids: Any, shown: Any = None) -> Answer:
    """The :class:`Answer` of documents with these ids (as strings) that showed ``shown``
    (indices; None: all)."""
    ids = [str(i) for i in ids]
    plain = all(d == str(i) for i, d in enumerate(ids))
    seen = None if shown is None else frozenset(int(i) for i in shown)
    if seen is not None and len(seen) == len(ids):
        seen = None  # all shown: nothing to check, nothing to keep
    return Answer(len(ids), None if plain else tuple(ids), seen)
