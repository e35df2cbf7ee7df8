"""What a corpus file's rows say of their texts. A corpus none of whose documents has a
``text`` (its texts under other field names, say) is an error naming the fields found:
every reranker would rank empty documents, every score would be 0, and the table would
still look like one. A corpus where only some documents have no text is read, with a note
that counts them: a collection may hold a few empty documents, which then rank as what
they are and change little, so refusing the whole file would be more harm than they do."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["TextCheck"]

#: fields a note names of a row, at most
SHOWN_FIELDS = 5


class TextCheck:
    """Watches the rows of a corpus file as they are read (:meth:`see`), then says what
    :meth:`result` finds: an :class:`InputError` when no row has a non-empty ``text``
    string, a note (returned) counting the rows with no ``text`` field or with an empty
    text and no title, None otherwise. A row with a title and an empty text (an article
    without its abstract, as some BEIR corpora hold) is ranked by its title, as BEIR ranks
    it, and is not counted."""

    def __init__(self, source: Path | str) -> None:
        self.source = source
        self.rows = 0
        self.with_text = 0
        self.first: tuple[int, str, str] | None = None  # (line, id, why) of the first counted
        self.count = 0

    def see(self, line: int, doc_id: str, row: Mapping[str, Any]) -> None:
        """Count one row (``line``: its line in the file)."""
        self.rows += 1
        text = row.get("text")
        if isinstance(text, str) and text.strip():
            self.with_text += 1
            return
        if "text" not in row:
            why = f"no 'text' field{_found(row)}"
        elif str(row.get("title") or "").strip():
            return  # a title and no text: ranked by the title
        else:
            why = "an empty text and no title"
        self.count += 1
        if self.first is None:
            self.first = (line, doc_id, why)

    def result(self) -> str | None:
        """The error to raise (raised), the note to give, or None."""
        if not self.rows or self.with_text:
            return self._note()
        line, _, why = self.first or (None, "", "")
        if line is not None and why.startswith("no 'text'"):
            raise InputError(
                f"{self.source}:{line}: the document has {why}, and no document of the "
                "file has one: BEIR files name a document's text 'text' and its title "
                "'title'; rename the fields"
            )
        raise InputError(
            f"{self.source}: no document has any text (every 'text' is empty; a corpus of "
            "titles alone: name them 'text')"
        )

    def _note(self) -> str | None:
        if not self.count:
            return None
        line, doc_id, why = self.first or (0, "", "")
        some = "1 of" if self.count == 1 else f"{self.count:,} of"
        return (
            f"{self.source}: {some} {self.rows:,} documents have no text (the first, line "
            f"{line}, {doc_id!r}: {why}); each is ranked by its title alone, or as an empty "
            "document when it has none"
        )


def _found(row: Mapping[str, Any]) -> str:
    """`` (found 'headline', 'body')``: the fields of ``row`` besides its id."""
    names = [k for k in row if k not in ("_id", "id")]
    if not names:
        return ""
    more = ", ..." if len(names) > SHOWN_FIELDS else ""
    return f" (found {', '.join(repr(k) for k in names[:SHOWN_FIELDS])}{more})"
