"""The row schema of a batch job and the per-row rerank both engines run: input rows
``{"query_id"?, "query", "candidates"}``, output rows with ``results``, ``error``,
``degraded``, ``warnings``, ``score_scale`` and ``seconds``, and the job's summary."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cache.keys import canonical_json, digest
from ..errors import InputError, InvalidDocumentError, said_for
from ..rerankers.base import run_sync
from ..rerankers.notes import pipeline_note
from .summary import NOTES_KEY, BatchSummary

__all__ = [
    "FORMATS",
    "LINE_KEY",
    "NOTES_KEY",
    "OUTPUT_FIELDS",
    "UNREADABLE_KEY",
    "USAGE_KEY",
    "BatchSummary",
    "RowFields",
    "arerank_row",
    "candidates_digest",
    "chunks",
    "rerank_row",
    "rerank_rows",
    "row_key",
]

logger = logging.getLogger(__name__)


#: the output row's digest of the candidates it was ranked from (:func:`candidates_digest`),
#: which ``resume`` checks against the input's: a row whose candidates changed is not done
DIGEST_KEY = "candidates_digest"

#: the fields every output row gains
OUTPUT_FIELDS = ("results", "error", "degraded", "warnings", "score_scale", "seconds", DIGEST_KEY)


def candidates_digest(candidates: Any) -> str:
    """16 hex digits of a row's candidates as given (their ids, texts and every other
    field, in order; a null field counts as absent, as Parquet writes one): the same
    candidates give the same digest in every process, JSON Lines or Parquet."""
    if isinstance(candidates, Sequence) and not isinstance(candidates, (str, bytes)):
        candidates = [
            {k: v for k, v in c.items() if v is not None} if isinstance(c, Mapping) else c
            for c in candidates
        ]
    try:
        text = canonical_json(candidates, "candidates")
    except TypeError:  # not plain JSON data (a Parquet scalar): its JSON text
        text = json.dumps(candidates, sort_keys=True, default=str)
    return digest(text, 16)


USAGE_KEY = "_usage"  # travels with a row from a worker to the summary; never written


def pipeline_notes(warnings: Iterable[str]) -> tuple[list[str], list[str]]:
    """A row's warnings split into those about the row and the notes about the pipeline's
    settings, which every row gets (:func:`~rerankit.rerankers.notes.pipeline_note`,
    worded without the row's own counts): batch says them once, in the summary's notes."""
    kept, notes = [], []
    for warning in warnings:
        note = pipeline_note(warning)
        if note is None:
            kept.append(warning)
        else:
            notes.append(note)
    return kept, notes


LINE_KEY = "_line"  # the input line of a JSON Lines row, for messages; never written


UNREADABLE_KEY = "_unreadable"  # why a JSON Lines line could not be read; becomes the row's error


FORMATS = ("jsonl", "parquet")


def _row_place(
    row: Mapping[str, Any], source: str | None = None, query_id_field: str = "query_id"
) -> str:
    """Where a row is, as its error says it: ``FILE:LINE: query 'q1'``, of what is known
    (``line 3`` without the file; ``FILE`` alone for a Parquet row without a query id;
    empty when nothing is)."""
    place, line = source or "", row.get(LINE_KEY)
    if line is not None:
        place = f"{place}:{line}" if place else f"line {line}"
    parts = [place] if place else []
    if row.get(query_id_field) is not None:
        parts.append(f"query {row[query_id_field]!r}")
    return ": ".join(parts)


def _located(
    row: Mapping[str, Any], source: str | None, problem: str, query_id_field: str = "query_id"
) -> str:
    """``problem`` of ``row``, after where the row is."""
    place = _row_place(row, source, query_id_field)
    return f"{place}: {problem}" if place else problem


def _absent(row: Mapping[str, Any], name: str, what: str, keyword: str) -> InputError:
    """A row without its ``name`` field: the fields it has, and how to name another."""
    present = ", ".join(repr(k) for k in row if not str(k).startswith("_")) or "none"
    flag = "--" + keyword.replace("_", "-")
    how = said_for(f"{keyword}= ({flag})", flag)
    return InputError(
        f"no {name!r} field ({what}; fields present: {present}); name yours with {how}"
    )


def _candidates(row: Mapping[str, Any], names: RowFields) -> list[Any]:
    """The row's candidates as the reranker takes them (errors name the field; the caller
    says which row)."""
    if names.query not in row:
        raise _absent(row, names.query, "the query", "query_field")
    query = row[names.query]
    if not isinstance(query, str) or not query.strip():
        got = "null" if query is None else repr(query)[:40]
        raise InputError(f"{names.query!r} must be a non-empty string, got {got}")
    if names.candidates not in row:
        raise _absent(row, names.candidates, "the candidates", "candidates_field")
    cands = row[names.candidates]
    if isinstance(cands, (str, bytes)) or not isinstance(cands, Sequence):
        got = "null" if cands is None else f"a {type(cands).__name__}"
        raise InputError(f"{names.candidates!r} must be a list, got {got}")
    out = []
    for i, c in enumerate(cands):
        if isinstance(c, Mapping):  # a null field (Parquet's way of 'absent') is absent
            out.append({k: v for k, v in c.items() if v is not None})
        elif isinstance(c, str):
            out.append(c)
        else:
            raise InputError(
                f"candidates[{i}] must be a string or an object with 'text', got {type(c).__name__}"
            )
    return out


#: what to do with a candidate whose text is absent, null or not a string
_GIVE_TEXT = (
    'give it its text ("" when it has none: ranked, with the flag empty_content), or leave '
    "the candidate out of the row"
)


def _problem(exc: Exception, row: Mapping[str, Any], names: RowFields, id_field: str) -> str:
    """What went wrong with a row, in the row's terms: a document's error names its
    ``candidates[i]`` (the library's ``document i``) and its id; a text field that is
    null, not a string, or missing where other candidates of the row have it says what to
    do; an unexpected error its type."""
    if isinstance(exc, InvalidDocumentError) and exc.index is not None:
        cands = row.get(names.candidates)
        ok = isinstance(cands, list) and exc.index < len(cands)
        doc = cands[exc.index] if ok else None
        where = f"{names.candidates}[{exc.index}]"
        if isinstance(doc, Mapping) and doc.get(id_field) is not None:
            where += f" ({id_field} {doc[id_field]!r})"
        field = exc.field
        if isinstance(doc, Mapping) and field is not None:
            if field in doc and doc[field] is None:
                return f"{where}: text field {field!r} is null: {_GIVE_TEXT}"
            if field in doc:
                got = type(doc[field]).__name__
                return f"{where}: text field {field!r} must be a string, got {got}: {_GIVE_TEXT}"
            if any(isinstance(c, Mapping) and field in c for c in cands):
                present = ", ".join(repr(k) for k in doc) or "none"
                return (
                    f"{where}: no text field {field!r} (fields present: {present}), which other "
                    f"candidates of the row have: {_GIVE_TEXT}"
                )
        return f"{where}: " + str(exc).removeprefix(f"document {exc.index}: ")
    return str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class RowFields:
    """The names of a row's query, query id and candidates fields."""

    query: str = "query"
    query_id: str = "query_id"
    candidates: str = "candidates"


def row_key(row: Mapping[str, Any], names: RowFields | None = None) -> tuple[Any, Any]:
    """What ties an output row to its input row: the query id and the query."""
    names = names or RowFields()
    return row.get(names.query_id), row.get(names.query)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def rerank_row(
    reranker: Any,
    row: Mapping[str, Any],
    *,
    source: str | None = None,
    keep_candidates: bool = True,
    query_field: str = "query",
    query_id_field: str = "query_id",
    candidates_field: str = "candidates",
    **options: Any,
) -> dict[str, Any]:
    """``row`` plus its results (or its error); never raises for a bad row or a failed
    scorer. ``options`` go to ``reranker.rerank`` (``top_k``, ``text_field``, ...). An
    error says where the row is (``FILE:LINE: query 'q1': ...``, ``source`` naming the
    file it was read from). ``keep_candidates=False`` leaves the row's ``candidates`` out of
    it (``results`` still name each by ``index`` and ``id``). ``query_field``,
    ``query_id_field`` and ``candidates_field`` name the row's fields (``--query-field``,
    ...), as ``text_field`` and ``id_field`` name a candidate's; the row keeps its names.
    The provider usage rides along under a private key that the writers drop, as do the
    pipeline's notes (a warning every row would get, such as the hybrid's not fusing the
    candidates' first-stage scores: not in ``warnings``, counted in the summary's
    ``notes``)."""

    return run_sync(
        arerank_row(
            reranker,
            row,
            source=source,
            keep_candidates=keep_candidates,
            query_field=query_field,
            query_id_field=query_id_field,
            candidates_field=candidates_field,
            **options,
        )
    )


async def arerank_row(
    reranker: Any,
    row: Mapping[str, Any],
    *,
    source: str | None = None,
    keep_candidates: bool = True,
    query_field: str = "query",
    query_id_field: str = "query_id",
    candidates_field: str = "candidates",
    **options: Any,
) -> dict[str, Any]:
    """:func:`rerank_row` for async code (``reranker.arerank``)."""
    names = RowFields(query_field, query_id_field, candidates_field)
    dropped = OUTPUT_FIELDS if keep_candidates else (*OUTPUT_FIELDS, candidates_field)
    out = {k: v for k, v in row.items() if k not in dropped}
    started = time.perf_counter()
    if UNREADABLE_KEY in row:  # a line that could not be read
        out.pop(UNREADABLE_KEY)
        out.update(
            results=[],
            error=_located(row, source, row[UNREADABLE_KEY], query_id_field),
            degraded=False,
            warnings=[],
            score_scale=None,
            seconds=0.0,
        )
        out[DIGEST_KEY] = candidates_digest(None)
        return out
    try:
        docs = _candidates(row, names)
        result = await reranker.arerank(row[query_field], docs, **options)
    except Exception as exc:  # a bad row, or a pipeline that cannot run: written, counted
        fields = options.get("fields")
        id_field = options.get("id_field") or getattr(fields, "id_field", None) or "id"
        error = _located(row, source, _problem(exc, row, names, id_field), query_id_field)
        out.update(results=[], error=error, degraded=False, warnings=[], score_scale=None)
    else:
        warnings, notes = pipeline_notes(result.warnings)
        out.update(
            results=[
                {
                    "index": r.index,
                    "rank": r.rank,
                    "id": r.id,
                    "score": _finite(r.score),
                    "flags": list(r.flags),
                }
                for r in result
            ],
            error=result.unusable,
            degraded=bool(result.degraded),
            warnings=warnings,
            score_scale=result.score_scale,
        )
        if notes:
            out[NOTES_KEY] = notes
        if result.usage:
            out[USAGE_KEY] = dict(result.usage)
    out["seconds"] = round(time.perf_counter() - started, 6)
    out[DIGEST_KEY] = candidates_digest(row.get(candidates_field))
    return out


def rerank_rows(
    reranker: Any,
    rows: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = 1,
    source: str | None = None,
    **options: Any,
) -> list[dict]:
    """:func:`rerank_row` for each row, in order, with up to ``concurrency`` rows in flight
    at once (worth it where a pipeline waits on a provider; local models gain nothing)."""

    rows = list(rows)
    if concurrency <= 1 or len(rows) <= 1:
        return [rerank_row(reranker, row, source=source, **options) for row in rows]

    async def run_all() -> list[dict]:
        gate = asyncio.Semaphore(concurrency)

        async def one(row: Mapping[str, Any]) -> dict:
            async with gate:
                return await arerank_row(reranker, row, source=source, **options)

        return list(await asyncio.gather(*(one(r) for r in rows)))

    return run_sync(run_all())


def chunks(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
