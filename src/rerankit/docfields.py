"""The fields a caller names on documents already read: a field's value (dots walk into
nested mappings), the fields a document has (for messages), the error for a named field
that no document has (a misspelt name), and the first-stage score read from a named field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from numbers import Real
from typing import Any

from .errors import InvalidDocumentError
from .types import Document

__all__ = ["FIRST_STAGE_SCORE", "absent_field", "field_names", "field_value", "with_first_stage"]

#: the metadata key holding a document's first-stage (retriever) score, higher is better
FIRST_STAGE_SCORE = "first_stage_score"


def field_value(doc: Document, path: str, default: Any = None) -> Any:
    """A field of a document's metadata: the key itself, else a dotted path into nested
    mappings (``"retrieval.score"``), else the same inside a ``metadata`` mapping."""
    for node in (doc.metadata, doc.metadata.get("metadata")):
        if not isinstance(node, Mapping):
            continue
        if path in node:
            return node[path]
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            return node
    return default


def field_names(doc: Document) -> str:
    """The fields besides the text and the id that ``doc`` has, for an error message
    (``the fields ['date', 'url']``)."""
    names = sorted(map(str, doc.metadata))
    inner = doc.metadata.get("metadata")
    if isinstance(inner, Mapping):
        names += [f"metadata.{k}" for k in sorted(map(str, inner))]
    return f"the fields {names}" if names else "no field besides its text and id"


def absent_field(
    what: str, field: str, docs: list[Document], first: int, otherwise: str
) -> InvalidDocumentError:
    """The error for a field the caller named that none of ``docs`` has (a misspelt name),
    showing the fields document ``first`` has and what leaving it out does."""
    given = docs[first].source  # the caller's own fields, the text, id and title among them
    has = f"the fields {sorted(map(str, given))}" if isinstance(given, Mapping) else None
    return InvalidDocumentError(
        f"{what} {field!r} is in none of the {len(docs)} documents (document {first} has "
        f"{has or field_names(docs[first])}); check its spelling, or leave it out {otherwise}",
        index=first,
        field=field,
    )


def with_first_stage(docs: list[Document], field: str, higher_is_better: bool) -> list[Document]:
    """``docs`` with ``field``'s value as their first-stage score (negated when lower is
    better); a document without it keeps none. A field that no document has is an error:
    a misspelt name would otherwise rank as if no first stage had been given."""
    values = [field_value(doc, field, None) for doc in docs]
    if docs and all(v is None for v in values):
        raise absent_field("first-stage field", field, docs, 0, "to rank the texts alone")
    out = []
    for i, (doc, value) in enumerate(zip(docs, values, strict=True)):
        if value is None:
            out.append(doc)
            continue
        if isinstance(value, bool) or not isinstance(value, Real):
            raise InvalidDocumentError(
                f"document {i}: first-stage field {field!r} must be a number, got {value!r}",
                index=i,
                field=field,
            )
        score = float(value) if higher_is_better else -float(value)
        out.append(replace(doc, metadata={**doc.metadata, FIRST_STAGE_SCORE: score}))
    return out
