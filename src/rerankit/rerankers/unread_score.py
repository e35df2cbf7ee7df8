"""The warning for documents that carry a ``score`` field and no first-stage score:
rerankit 0.1.0's hybrid fused a document's ``score``; now the retriever's score is read
from ``first_stage_score`` or the field ``first_stage_field=`` names, so a caller who kept
0.1.0's field gets a ranking by the texts alone, and this says why."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

from ..documents import PASS_FIRST_STAGE
from ..types import Document

__all__ = ["unread_score_note"]


def unread_score_note(docs: Sequence[Document]) -> str | None:
    """The warning when every one of ``docs`` carries a numeric ``score`` field (and, as
    the caller checks, none a first-stage score); None otherwise."""
    if not docs or not all(
        isinstance(v := d.metadata.get("score"), Real) and not isinstance(v, bool) for d in docs
    ):
        return None
    return (
        "every document carries a 'score' field, which is not read as the retriever's "
        f"score: the first-stage score is {PASS_FIRST_STAGE} (first_stage_field='score' "
        "reads this one)"
    )
