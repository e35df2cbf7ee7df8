"""How rankings are written: JSON Lines (non-finite numbers as null) or a table."""

from __future__ import annotations

import shutil
from typing import Any, TextIO

from .._jsonl import json_safe
from ..errors import InputError

__all__ = ["SCALE_FIELD", "json_safe", "records", "table"]

#: the field of each JSON Lines record that says what its score means (the result's
#: ``score_scale``: ``probability``, ``unit``, ``logit``, ``cosine``, ``relative``, ...)
SCALE_FIELD = "score_scale"


def records(result: Any, score_field: str, details: bool, *, explain: bool = False) -> list[dict]:
    """What ``rank`` writes a line each: the input objects with the score under
    ``score_field`` (a string input as ``{text, score_field}``), or with ``details`` the
    result records; each with the result's ``score_scale``, so that a reader of the lines
    knows what the score means; with ``explain``, each with an ``explanation`` field
    (``score_from_contributions`` and each strategy's ``raw``, ``normalized``, ``weight``
    and ``contribution``, as :meth:`~rerankit.RerankResult.explain` gives them)."""
    scale = {SCALE_FIELD: result.score_scale}
    if details:
        out = [{**r, **scale} for r in result.to_dicts()]
    else:
        out = []
        for r in result:
            doc = r.document
            out.append(
                {**doc, **scale}
                if isinstance(doc, dict)
                else {"text": r.text, score_field: r.score, **scale}
            )
    if not explain:
        return out
    explained = []
    for record, why in zip(out, result.explain(), strict=True):
        if EXPLANATION in record:
            raise InputError(
                f"the document at rank {why['rank']} has an {EXPLANATION!r} field already, "
                f"where --explain --format jsonl writes the explanation: rename that field"
            )
        kept = {k: why[k] for k in ("score_from_contributions", "strategies")}
        explained.append({**record, EXPLANATION: kept})
    return explained


#: the field each JSON line of ``rank --explain --format jsonl`` carries its explanation in
EXPLANATION = "explanation"


def table(result: Any, out: TextIO) -> None:
    width = max(40, min(shutil.get_terminal_size((100, 20)).columns, 160))
    id_width = max([2, *(len(str(r.id)) for r in result if r.id is not None)])
    id_width = min(id_width, 16)
    head = f"{'rank':>4}  {'score':>8}  {'id':<{id_width}}  text"
    out.write(head + "\n")
    room = max(10, width - len(head) + 4)
    for r in result:
        snippet = " ".join(r.text.split())
        if len(snippet) > room:
            snippet = snippet[: room - 1] + "…"
        rid = "" if r.id is None else str(r.id)[:id_width]
        out.write(f"{r.rank:>4}  {r.score:>8.4f}  {rid:<{id_width}}  {snippet}\n")
