"""What the framework adapters take: the options of ``rerank()`` that apply to the
framework's objects, and an error for any other, not a setting silently dropped."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..documents import TITLE
from ..options import unknown_keys
from ..rerankers.notes import logged_by_rerank, pipeline_note

__all__ = ["documents_said", "refuse_unknown_options"]

# the name the docs give (docs/api.md), not this private module's
logger = logging.getLogger("rerankit.integrations")

#: a rule's count of the documents it dropped (``outcome.py`` words it): a threshold or a
#: cap doing its work, logged at DEBUG while documents are left, at WARNING when none is
_DROPPED = re.compile(r"^(?:stage '[^']*': )?\S+ dropped \d+ documents? ")


def refuse_unknown_options(
    adapter: str, given: Any, known: Iterable[str], kind: str, text: str, own_id: str
) -> None:
    """A ``TypeError`` for the first of ``given``'s keys (an adapter's keyword arguments)
    that is not ``known``: ``text_field`` and ``id_field``, which name a dict's fields,
    with where ``kind`` keeps its text (``text``, the name ``text_fields`` gives it) and
    id (``own_id``) instead; any other
    with the close option and all of them. ``given`` that is not a mapping passes."""
    if not isinstance(given, Mapping):
        return
    reads = text if text == "page_content" else "get_content()"
    hints = {
        "text_field": (
            f"{kind}' text is their {reads}, and a {TITLE!r} key in their metadata is their "
            f"title; text_fields=({TITLE!r}, {text!r}) reads metadata keys as lines of the text"
        ),
        "id_field": f"{kind}' ids are their {own_id}",
    }
    message = unknown_keys(list(given), list(known), adapter, hints, word="option")
    if message is not None:
        raise TypeError(message)


def documents_said(adapter: str, result: Any, said: set[str]) -> list[Any]:
    """``result``'s documents in the framework's type, its warnings logged first (a
    framework gets documents only: a ``min_score`` stage that kept none, a fallback that
    left the order unchanged, would otherwise pass unsaid): what happened in this call on
    every call; a note on the pipeline's settings (the default hybrid leaving the
    retriever's scores unfused) once per adapter, ``said`` holding those logged; and not
    what the rerank logged itself (a shared id), which would come twice. A rule that
    dropped some documents and kept others (a threshold or a cap at work) is logged at
    DEBUG, at WARNING only when nothing is left."""
    for warning in result.warnings:
        if len(result) and _DROPPED.match(warning):
            logger.debug("%s: %s", adapter, warning)
            continue
        if logged_by_rerank(warning):
            continue
        note = pipeline_note(warning)
        if note is not None:
            if note in said:
                continue
            said.add(note)
        logger.warning("%s: %s", adapter, warning)
    return result.documents()
