"""At most N documents per value of a field: the ``cap`` rule (:class:`Cap`), such as a few
chunks per source in a RAG context, so that one long document does not fill it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .docfields import field_names, field_value
from .documents import to_documents
from .errors import InvalidDocumentError
from .outcome import Outcome, Rule

__all__ = ["Cap"]

#: what a cap does with the documents past its limit
RESTS = ("after", "drop")


class Cap(Rule):
    """Keeps at most ``limit`` documents per value of ``field``, the best-ranked ones, in
    their order; the rest are moved after the others, in their order (``rest="after"``,
    the default: a ``top_k`` then cuts them first, and a short list still fills), or
    dropped (``rest="drop"``: listed in ``result.dropped``, and a warning names them).
    ``Cap("source", limit=2)``; in a pipeline file ``rule = { type = "cap", field =
    "source", limit = 2 }``.

    The field is read as every rule reads one, whatever the documents are: a dict's key, a
    :class:`~rerankit.Document`'s, a LangChain Document's or a LlamaIndex node's metadata
    key, an object's attribute; a dotted path reaches into nested mappings
    (``"meta.site"``). Values are compared as text (``7`` and ``"7"`` are one value). A
    document without the field (or with None) is not capped, and a warning counts such
    documents; a field that none of the documents has is an
    :class:`~rerankit.errors.InvalidDocumentError` naming it (a misspelt name would cap
    nothing), so a pipeline call fails with it. Scores stay as they were: after a cap,
    scores can rise with rank. ``limit`` below 1, an empty ``field`` or another ``rest``
    is a ``ValueError``."""

    name = "cap"

    def __init__(self, field: str, limit: int = 2, *, rest: str = "after") -> None:
        if not isinstance(field, str) or not field:
            raise ValueError(f"field must be a non-empty string (the one to cap by), got {field!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        if rest not in RESTS:
            raise ValueError(f"rest must be 'after' or 'drop', got {rest!r}")
        self.field, self.limit, self.rest = field, limit, rest
        self.reorders = rest == "after"  # a cap that drops keeps the order it is given

    def decide(self, items: Sequence[Any]) -> Outcome:
        docs = to_documents(items, missing_text="empty")
        values = [field_value(doc, self.field) for doc in docs]
        if not docs:
            return Outcome([], [])
        if all(v is None for v in values):
            fix = "check its spelling"
            if not any(doc.metadata for doc in docs):  # texts alone: nothing to cap by
                fix = (
                    f"send documents with fields (dicts, or the service's Cohere v1 object "
                    f"documents), each with its {self.field!r}"
                )
            raise InvalidDocumentError(
                f"rule 'cap': field {self.field!r} is in none of the {len(docs)} documents "
                f"(document 0 has {field_names(docs[0])}); {fix}",
                index=0,
                field=self.field,
            )
        seen: Counter[str] = Counter()
        kept: list[int] = []
        past: list[int] = []
        for i, value in enumerate(values):
            if value is not None:
                seen[str(value)] += 1
            (kept if value is None or seen[str(value)] <= self.limit else past).append(i)
        lacking = sum(v is None for v in values)
        warnings = ()
        if lacking:
            warnings = (
                f"rule 'cap': {lacking} of {len(docs)} documents have no {self.field!r}; "
                "they are not capped",
            )
        note = f"more than {self.limit} per {self.field!r}"
        if self.rest == "drop":
            return Outcome(kept, past, note=note, warnings=warnings)
        return Outcome(kept + past, [], warnings=warnings)
