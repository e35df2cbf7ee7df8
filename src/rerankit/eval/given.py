"""A first stage given in memory: each query's candidates as a mapping query id -> doc ids
(best first) or ``(doc id, score)`` pairs, read as a run file's lines are (see
:func:`~rerankit.eval.first_stage.first_stage`), for a caller whose retriever's output is
already in Python (a notebook's DataFrame grouped by query)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

from ..errors import InputError

__all__ = [
    "CANDIDATES_FILE",
    "IN_MEMORY",
    "check_first_stage",
    "given_candidates",
    "given_placeholder",
    "refit_first_stage",
    "source_name",
]

#: what an evaluation records as its first stage when given candidates in memory (see
#: :func:`refit_first_stage`)
IN_MEMORY = "<candidates in memory>"

#: each query with its candidates, one JSON line each (the rows `rerankit batch` and
#: `eval --first-stage` read), written by ``--out``
CANDIDATES_FILE = "candidates.jsonl"

_WHAT = (
    "'auto', 'bm25', 'run', the path of a run/candidates file, or a mapping query id -> "
    "candidates (doc ids best first, or (doc id, score) pairs)"
)


def source_name(source: Any) -> str:
    """A first stage as an error or note names it: a file's path, or the mapping's size."""
    if isinstance(source, Mapping):
        return f"first_stage (candidates given for {len(source)} queries)"
    return os.fspath(source)


#: how a suggested call names candidates given in memory: by a placeholder, never by
#: their contents (a notebook's mapping of thousands of candidates on one line)
PLACEHOLDER = "<the same mapping you passed>"


def given_placeholder() -> tuple[str, str]:
    """What a suggested call (a refit by tune) writes for a first stage given in memory,
    and what to say of it after the call: tune takes the same mapping."""
    return PLACEHOLDER, (
        "first_stage: the mapping query id -> candidates you gave as first_stage, "
        "which tune takes as evaluate does"
    )


def refit_first_stage(written: Sequence[os.PathLike[str]]) -> str:
    """What to say after a refit call of candidates given in memory (the call names them by
    :func:`given_placeholder`: tune takes the same mapping), with the ``candidates.jsonl``
    among the evaluation's files ``written`` as another way, when out= wrote one."""
    said = given_placeholder()[1]
    for path in written:
        if os.path.basename(path) == CANDIDATES_FILE:
            said += f", or {os.fspath(path)}, where out= wrote them"
            break
    return said


def check_first_stage(source: Any) -> None:
    """An :class:`InputError` for a ``first_stage`` that is none of :data:`_WHAT` (a
    DataFrame: group it first), and for any mistake in a mapping's entries."""
    if isinstance(source, Mapping):
        given_candidates(source)
    elif not isinstance(source, (str, os.PathLike)):
        hint = ""
        if hasattr(source, "groupby"):
            hint = (
                "; from a DataFrame of query, doc id and score columns: "
                "{q: list(zip(g.doc_id, g.score)) for q, g in df.groupby('query_id')}"
            )
        raise InputError(f"first_stage: expected {_WHAT}, got {type(source).__name__}{hint}")


def given_candidates(
    source: Mapping[Any, Any], *, corpus: Any = None, queries: Any = None
) -> dict[str, list[tuple[str, float]]]:
    """``source`` as query id -> ``(doc id, score)``, best first (a new dict: ``source`` is
    kept as given). A query's candidates are doc ids, ranked as listed (each scored by its
    position, as a bare id of a candidates file is), or ``(doc id, score)`` pairs, ranked by
    score (ties: as listed), as a run file's lines are. With ``queries``, other queries are
    skipped and with ``corpus``, a document it lacks is an error, as :func:`~.data.load_run`
    reads a file; every mistake is an :class:`InputError` naming the query and the entry."""
    out: dict[str, list[tuple[str, float]]] = {}
    given_as: dict[str, Any] = {}
    for key, entries in source.items():
        qid = _id(key, "first_stage: query id")
        if qid in given_as:
            raise InputError(
                f"first_stage: query {qid!r} is given twice (as {given_as[qid]!r} and {key!r})"
            )
        given_as[qid] = key
        where = f"first_stage: query {qid!r}"
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise InputError(
                f"{where}: expected a list of doc ids or (doc id, score) pairs, got "
                f"{type(entries).__name__}"
            )
        ranked = [_entry(entry, i, f"{where}, entry {i}") for i, entry in enumerate(entries)]
        bare = [s is None for _, s in ranked]
        if any(bare) and not all(bare):
            first = bare.index(not bare[0])
            which = "a bare id after pairs" if bare[first] else "a pair after bare ids"
            raise InputError(
                f"{where}, entry {first}: {which}: "
                "give one query's candidates all as doc ids or all as (doc id, score) pairs"
            )
        if queries is not None and qid not in queries:
            continue  # another collection's query, as a run file's line for one
        for i, (doc, _) in enumerate(ranked):
            if corpus is not None and doc not in corpus:
                raise InputError(f"{where}, entry {i}: document {doc!r} is not in the corpus")
        scored = [(doc, float(-i) if s is None else s) for i, (doc, s) in enumerate(ranked)]
        order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
        out[qid] = [scored[i] for i in order]
    return out


def _id(value: Any, what: str) -> str:
    """A query or document id as a string (a string or an integer is one)."""
    if isinstance(value, str) or (isinstance(value, Integral) and not isinstance(value, bool)):
        return str(value)
    raise InputError(f"{what} {value!r}: expected a string or an integer")


def _entry(entry: Any, i: int, where: str) -> tuple[str, float | None]:
    """One candidate: ``(doc id, score)``, or ``(doc id, None)`` for a bare id."""
    if isinstance(entry, (str, Integral)) and not isinstance(entry, bool):
        return str(entry), None
    if not isinstance(entry, (tuple, list)) or len(entry) != 2:
        shown = repr(entry) if len(repr(entry)) <= 60 else repr(entry)[:57] + "..."
        raise InputError(f"{where}: expected a doc id or a (doc id, score) pair, got {shown}")
    doc = _id(entry[0], f"{where}: doc id")
    score = entry[1]
    if isinstance(score, bool) or not isinstance(score, Real) or math.isnan(score):
        raise InputError(f"{where} ({doc!r}): the score must be a number, got {score!r}")
    return doc, float(score)
