"""Pinning and burying documents by id, per query: the ``pin`` rule (:class:`Pin`), the
one rule that reads the query (see :class:`~rerankit.ordering.Rule`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .documents import to_documents
from .outcome import Outcome, Rule

__all__ = ["Pin", "query_key"]


def query_key(query: str) -> str:
    """How :class:`Pin` compares queries: case-folded, runs of white space as one space, no
    space at either end (``"  Solar  Panels "`` is ``"solar panels"``)."""
    return " ".join(query.casefold().split())


def _table(value: Any, what: str) -> dict[str, tuple[str, ...]]:
    """``{query: [ids]}`` as ``{query_key: (ids as text, ...)}``; a ValueError naming the
    mistake otherwise (a rule's options are checked when it is built)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(
            f"{what} must map each query to a list of document ids "
            f'({what}={{"solar panels": ["d3", "d7"]}}), got {value!r}'
        )
    out: dict[str, tuple[str, ...]] = {}
    said: dict[str, str] = {}
    for query, ids in value.items():
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{what}: a query must be a non-empty string, got {query!r}")
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise ValueError(
                f'{what}[{query!r}] must be a list of document ids, got {ids!r} (one id: ["{ids}"])'
            )
        for doc_id in ids:
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                raise ValueError(f"{what}[{query!r}]: a document id is a string or an integer, "
                                 f"got {doc_id!r}")  # fmt: skip
        key = query_key(query)
        if key in out:
            raise ValueError(
                f"{what}: {said[key]!r} and {query!r} are the same query (case and spaces "
                "are not told apart): give its ids once"
            )
        out[key], said[key] = tuple(dict.fromkeys(str(i) for i in ids)), query
    return out


class Pin(Rule):
    """Pins and buries documents by id, for the queries named: for a query of ``pin``, the
    documents with those ids go first, in the order listed; for a query of ``bury``, the
    documents with those ids go last, in the order they had; the others keep their order
    between them. ``pin={"solar panels": ["d3", "d7"]}``, ``bury={"solar panels": ["d9"]}``;
    in a pipeline file ``rule = { type = "pin", pin = { "solar panels" = ["d3", "d7"] } }``.

    A query matches a key when both are equal ignoring case and runs of spaces
    (:func:`query_key`); other queries are left as they are. Ids are compared as text, so a
    document whose ``id`` is ``7`` matches ``"7"``; an id that is not among the documents is
    skipped (the rule reorders what it is given: in a cascade, put it before the stage whose
    ``keep`` would cut the document). The rule reads the query, so called on a plain list it
    needs ``query=``: ``Pin(pin=...)(hits, query="solar panels")``. An id both pinned and
    buried for one query is a ``ValueError``. Scores stay as they were: a pinned document
    keeps its own score above better-scored ones."""

    name = "pin"

    def __init__(
        self,
        pin: Mapping[str, Sequence[str | int]] | None = None,
        bury: Mapping[str, Sequence[str | int]] | None = None,
    ) -> None:
        self.pin, self.bury = _table(pin, "pin"), _table(bury, "bury")
        for key, ids in self.pin.items():
            both = [i for i in ids if i in self.bury.get(key, ())]
            if both:
                raise ValueError(
                    f"document {both[0]!r} is both pinned and buried for query {key!r}"
                )

    def decide(self, items: Sequence[Any], *, query: str | None = None) -> Outcome:
        n = len(items)
        key = query_key(query) if query is not None else None
        pinned, buried = self.pin.get(key or "", ()), self.bury.get(key or "", ())
        if not pinned and not buried:
            return Outcome(list(range(n)), [])
        docs = to_documents(items, missing_text="empty")
        ids = [None if d.id is None else str(d.id) for d in docs]
        first = [i for doc_id in pinned for i in range(n) if ids[i] == doc_id]
        last = [i for i in range(n) if ids[i] in buried]
        taken = set(first) | set(last)
        return Outcome([*first, *(i for i in range(n) if i not in taken), *last], [])
