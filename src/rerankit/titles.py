"""Titles: how a document's title is read and written before its text.

A title is a non-empty string, or a number written as text (``42``, as ``text_fields``
writes it); None or NaN (a pandas frame's empty cell) is no title, and another kind is an
error naming the document. Scorers read a document's text with its title on the line
before (:func:`titled_text`), and a scorer that splits documents into passages starts
every passage with it (:func:`document_title`). :mod:`rerankit.documents` re-exports these.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

from .errors import InvalidDocumentError
from .types import Document

__all__ = ["TITLE", "document_title", "read_title", "titled_text"]

#: the field (and metadata key) holding a document's title; ``title_field`` names another
#: field to read it from, which a document's metadata then holds under this key
TITLE = "title"


def read_title(value: Any, index: int | None, field: str = TITLE) -> str | None:
    """A title value as read: a string (None when blank), a number as text, None for None
    or NaN; anything else is an InvalidDocumentError naming document ``index`` and
    ``field`` (the field it was read from; ``index`` None: no title, unchecked)."""
    if isinstance(value, Real) and not isinstance(value, bool):
        return None if value != value else str(value)  # NaN is no title
    if value is None or isinstance(value, str) or index is None:
        return value if isinstance(value, str) and value.strip() else None
    raise InvalidDocumentError(
        f"document {index}: field {field!r} must be a string, a number or None (no title), "
        f"got {type(value).__name__}",
        index=index,
        field=field,
    )


def titled_text(text: str, title: Any, index: int | None = None, field: str = TITLE) -> str:
    """A document's text as scorers read it: with a title (see :func:`read_title`), the
    title, a newline, then the text (the title alone when the text is blank)."""
    title = read_title(title, index, field)
    return (f"{title}\n{text}" if text.strip() else title) if title else text


def document_title(doc: Document) -> str | None:
    """The document's title: its ``title`` metadata when that is a non-empty string or a
    number (written as text); None for none, a blank, NaN or another kind."""
    return read_title(doc.metadata.get(TITLE), None)
