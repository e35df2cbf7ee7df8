"""How rankings are written: JSON Lines (non-finite numbers as null) or a table."""

from __future__ import annotations

import codecs
import re
import shutil
import sys
import unicodedata
from typing import Any, TextIO

from .._jsonl import json_safe
from ..errors import InputError

__all__ = [
    "DEGRADED_FIELD",
    "SCALE_FIELD",
    "console_stdout",
    "display_width",
    "json_safe",
    "records",
    "table",
    "utf8_stdout",
    "with_traceback_hint",
]

#: the field of each JSON Lines record that says what its score means (the result's
#: ``score_scale``: ``probability``, ``unit``, ``logit``, ``cosine``, ``relative``, ...)
SCALE_FIELD = "score_scale"

#: the field that marks a degraded result's records (a scorer or a rule stage failed for
#: some documents or all, or did not finish: :attr:`~rerankit.RerankResult.degraded`), as
#: ``batch`` rows and ``--details`` records say it
DEGRADED_FIELD = "degraded"


def records(result: Any, score_field: str, details: bool, *, explain: bool = False) -> list[dict]:
    """What ``rank`` writes a line each: the input objects with the score under
    ``score_field`` (a string input as ``{text, score_field}``), or with ``details`` the
    result records; each with the result's ``score_scale``, so that a reader of the lines
    knows what the score means, and, only when the result is degraded, ``degraded: true``
    (``--details`` records say it either way); with ``explain``, each with an ``explanation`` field
    (``score_from_contributions``, ``ranked_by``: the pipeline stage that decided the
    place, and each strategy's ``raw``, ``normalized``, ``weight`` and ``contribution``, as
    :meth:`~rerankit.RerankResult.explain` gives them)."""
    scale = {SCALE_FIELD: result.score_scale}
    if details:  # whether a scorer or a rule stage failed: the same on each record
        out = [{**r, **scale, DEGRADED_FIELD: result.degraded} for r in result.to_dicts()]
    else:
        if result.degraded:  # a fallback's order: each line says so, as batch rows do
            scale[DEGRADED_FIELD] = True
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
        kept = {k: why[k] for k in ("score_from_contributions", "ranked_by", "strategies")}
        explained.append({**record, EXPLANATION: kept})
    return explained


#: the field each JSON line of ``rank --explain --format jsonl`` carries its explanation in
EXPLANATION = "explanation"


#: how a warning says that a scorer or a stage raised (its traceback is in the log)
_FAILED = re.compile(r"\b(scorer|stage) '[^']*' failed\b")


def with_traceback_hint(warnings: Any, command: str, verbose: int) -> list[str]:
    """``warnings``, the first that says a scorer or a stage raised ending with where to
    see the traceback (``rerankit -v COMMAND ...``), unless ``-v`` was given already."""
    out = list(warnings)
    at = next((i for i, w in enumerate(out) if _FAILED.search(w)), None)
    if at is not None and not verbose:
        out[at] += f" (rerankit -v {command} ... shows the traceback)"
    return out


def utf8_stdout() -> TextIO:
    """Standard output writing UTF-8, whatever the console's encoding (``PYTHONIOENCODING``,
    the locale, a Windows console's cp1252): machine-readable output (JSON Lines) is UTF-8,
    as ``--input`` reads it and ``batch --out`` writes it."""
    out = sys.stdout
    encoding = getattr(out, "encoding", None) or "utf-8"
    if codecs.lookup(encoding).name != "utf-8" and hasattr(out, "reconfigure"):
        out.flush()
        out.reconfigure(encoding="utf-8")
    return out


def console_stdout(text: str) -> TextIO:
    """Standard output for ``text`` meant for a person (a table): in the console's encoding;
    where that encoding cannot write some of ``text``'s characters, they become ``?`` and one
    note on stderr says so."""
    out = sys.stdout
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        if hasattr(out, "reconfigure"):
            out.flush()
            out.reconfigure(errors="replace")
            print(
                f"rerankit: note: the console's encoding ({encoding}) cannot write some "
                "characters of the table; they show as '?' (set PYTHONIOENCODING=utf-8, or "
                "use --format jsonl, which is always UTF-8)",
                file=sys.stderr,
            )
    except LookupError:
        pass
    return out


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: 2 for a wide or full-width character (East Asian
    width W or F: CJK, kana, hangul), 0 for a combining mark, 1 for the others."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _cut(text: str, room: int) -> str:
    """``text`` cut to at most ``room`` columns, ending with ``…`` where cut."""
    if display_width(text) <= room:
        return text
    used, out = 0, []
    for c in text:
        used += display_width(c)
        if used > room - 1:
            break
        out.append(c)
    return "".join(out) + "…"


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def table(result: Any) -> str:
    """The ranking as a table (rank, score, id, text), each text cut to the terminal's width
    in columns (a CJK character takes two), its lines (a title, then the body) joined by
    `` / ``."""
    width = max(40, min(shutil.get_terminal_size((100, 20)).columns, 160))
    id_width = max([2, *(display_width(str(r.id)) for r in result if r.id is not None)])
    id_width = min(id_width, 16)
    head = f"{'rank':>4}  {'score':>8}  {'id':<{id_width}}  text"
    lines = [head]
    room = max(10, width - len(head) + 4)
    for r in result:
        rid = "" if r.id is None else _cut(str(r.id), id_width)
        # a title and its body (read as lines) stay told apart: "Title / body"
        lines_of = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
        snippet = _cut(" / ".join(lines_of), room)
        lines.append(f"{r.rank:>4}  {r.score:>8.4f}  {_pad(rid, id_width)}  {snippet}")
    return "\n".join(lines) + "\n"
