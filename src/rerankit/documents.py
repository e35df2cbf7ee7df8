"""Input adapters: turn what the caller passed into Documents, and map results back.

Accepted items: ``str``, :class:`~rerankit.types.Document`, and mappings (dicts) whose text
sits under ``text_field`` and optional id under ``id_field``; the remaining fields become the
Document's metadata. With a ``text_getter`` any object is accepted. The caller's objects are
never modified: dict outputs are new dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from .errors import InvalidDocumentError
from .types import Document

__all__ = ["output_for", "to_documents"]


def _check_sequence(documents: Any) -> list[Any]:
    if isinstance(documents, (str, bytes, Mapping, Document)):
        raise TypeError(
            f"documents must be a list of items, got a single {type(documents).__name__}; "
            "wrap it in a list"
        )
    if not isinstance(documents, Iterable):
        raise TypeError(f"documents must be a list, got {type(documents).__name__}")
    return list(documents)


def to_documents(
    documents: Iterable[Any],
    *,
    text_field: str = "text",
    id_field: str = "id",
    text_getter: Callable[[Any], str] | None = None,
) -> list[Document]:
    """Adapt the caller's items to Documents (each keeps its original object as ``source``).

    Raises :class:`InvalidDocumentError` (a ``ValueError``) naming the document's index and
    the field when a text is missing or not a string.
    """
    items = _check_sequence(documents)
    out: list[Document] = []
    for i, item in enumerate(items):
        if isinstance(item, Document):
            out.append(item if item.source is not None else replace(item, source=item))
        elif isinstance(item, str):
            out.append(Document(text=item, source=item))
        elif isinstance(item, Mapping) and text_getter is None:
            out.append(_from_mapping(item, i, text_field, id_field))
        elif text_getter is not None:
            text = text_getter(item)
            if not isinstance(text, str):
                raise InvalidDocumentError(
                    f"document {i}: text_getter returned {type(text).__name__}, expected str",
                    index=i,
                )
            out.append(Document(text=text, source=item))
        else:
            raise InvalidDocumentError(
                f"document {i}: unsupported type {type(item).__name__}; "
                "expected str, dict or Document",
                index=i,
            )
    return out


def _from_mapping(item: Mapping[str, Any], i: int, text_field: str, id_field: str) -> Document:
    if text_field not in item:
        raise InvalidDocumentError(
            f"document {i}: missing text field {text_field!r} (fields present: "
            f"{', '.join(map(repr, list(item)[:8])) or 'none'})",
            index=i,
            field=text_field,
        )
    text = item[text_field]
    if not isinstance(text, str):
        raise InvalidDocumentError(
            f"document {i}: field {text_field!r} must be a string, got {type(text).__name__}",
            index=i,
            field=text_field,
        )
    metadata = {k: v for k, v in item.items() if k != text_field and k != id_field}
    return Document(text=text, id=item.get(id_field), metadata=metadata, source=item)


def output_for(doc: Document, score: float, *, score_field: str = "rerank_score") -> Any:
    """The caller-kind output for one document: a new dict with the score for mapping inputs,
    otherwise the caller's own (immutable or untouched) object."""
    source = doc.source if doc.source is not None else doc
    if isinstance(source, Mapping):
        new = dict(source)
        new[score_field] = score
        return new
    return source
