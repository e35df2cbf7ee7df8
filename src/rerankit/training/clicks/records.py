"""The records of a click log (:mod:`.log` describes the format): :class:`Impression`,
:class:`Feedback`, each candidate as an impression keeps it (:class:`LoggedDocument`, built
by :func:`logged_document`) and :func:`text_hash`, how a log stored as ``hash`` names a
text."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...documents import TITLE, titled_text

__all__ = ["STORE", "Feedback", "Impression", "LoggedDocument", "logged_document", "text_hash"]

#: what an impression keeps of each document: its text, the SHA-256 of its text, or its id
STORE = ("text", "hash", "id")


def text_hash(text: str) -> str:
    """The SHA-256 of a text's UTF-8 bytes, hex: how a log stored as ``hash`` names a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
        return out


@dataclass(frozen=True)
class Feedback:
    """The clicks of one answer: indices into its impression's documents or document ids;
    ``dwell_ms`` one number for the answer, or one per click (None: not measured)."""

    id: str
    clicks: tuple[int | str, ...]
    dwell_ms: float | tuple[float | None, ...] | None = None
    time: float = 0.0

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
