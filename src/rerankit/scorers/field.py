"""Scores read from the documents themselves (for example a first-stage retriever's score)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from ..documents import InvalidDocumentError
from ..types import Document

__all__ = ["FieldScorer"]

_MISSING = object()


def _lookup(doc: Document, path: str) -> Any:
    """Read ``path`` from a document's metadata; dots walk into nested mappings."""
    node: Any = doc.metadata
    if path in node:
        return node[path]
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


class FieldScorer:
    """Uses a numeric field of each document as its score (higher = more relevant).

    ``field`` names a metadata key (a dict input's own field, e.g. ``"score"``); dots reach
    into nested mappings (``"retrieval.score"``). A document without the field raises an
    ``InvalidDocumentError`` naming it, unless ``missing`` gives a value to use instead.
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

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        return self.values(docs)

    def values(self, docs: Sequence[Document]) -> np.ndarray:
        out = np.empty(len(docs), dtype=np.float64)
        for i, doc in enumerate(docs):
            value = _lookup(doc, self.field)
            if value is _MISSING or value is None:
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
        return out if self.higher_is_better else -out
