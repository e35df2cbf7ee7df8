"""A click log's records (:mod:`.log`'s format) from their JSON values, checked:
:func:`parse_record`, which :func:`~.reader.read_log` reads each line with."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .log import Feedback, Impression, LoggedDocument
from .records import record_time

__all__ = ["parse_record"]


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return float(value)


def _document(value: Any, n: int) -> LoggedDocument:
    if not isinstance(value, Mapping) or not isinstance(value.get("id"), (str, int)):
        raise ValueError(f"documents[{n}] must be an object with an id, got {value!r:.60}")
    score = value.get("first_stage_score")
    return LoggedDocument(
        id=str(value["id"]),
        text=None if value.get("text") is None else str(value["text"]),
        sha256=None if value.get("sha256") is None else str(value["sha256"]),
        first_stage_score=None if score is None else _number(score, "first_stage_score"),
        positional=value.get("positional") is True,
    )


def _check_interleaving(info: Any, shown: int, rid: Any) -> None:
    """An impression's ``interleaving``: two pipelines, and a team (team draft) or a
    credit (optimized interleaving) for at most each position shown."""
    if info is None:
        return
    where = f"impression {rid}: interleaving"
    if not isinstance(info, Mapping):
        raise ValueError(f"{where} must be an object")
    names = info.get("pipelines")
    if not isinstance(names, list) or len(names) != 2:
        raise ValueError(f"{where}.pipelines must name two pipelines")
    for name, kinds in (("teams", (int,)), ("credits", (int, float))):
        values = info.get(name)
        if values is None:
            continue
        if (
            not isinstance(values, list)
            or len(values) > shown
            or any(isinstance(v, bool) or not isinstance(v, kinds) for v in values)
        ):
            raise ValueError(f"{where}.{name} must be a list of numbers, one per position shown")


def _endpoint(value: Any, rid: Any) -> str | None:
    """An impression's ``endpoint``: None (a rerank endpoint's answer) or a string."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"impression {rid}: endpoint must be a string, got {value!r}")
    return value


def parse_record(value: Any) -> Impression | Feedback:
    """A record of the format from its JSON value; ValueError naming the field that is
    wrong. A converter from another system's log can build these values and check them
    here."""
    if not isinstance(value, Mapping):
        raise ValueError(f"a record must be a JSON object, got {type(value).__name__}")
    kind, rid = value.get("type"), value.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
        raise ValueError(f"id must be a non-empty string, got {rid!r}")
    if kind == "impression":
        query, docs, shown = value.get("query"), value.get("documents"), value.get("shown")
        if not isinstance(query, str):
            raise ValueError(f"impression {rid}: query must be a string")
        if not isinstance(docs, list):
            raise ValueError(f"impression {rid}: documents must be a list")
        documents = tuple(_document(d, n) for n, d in enumerate(docs))
        if not isinstance(shown, list) or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(documents)
            for i in shown
        ):
            raise ValueError(
                f"impression {rid}: shown must list indices into its {len(documents)} documents"
            )
        if len(set(shown)) != len(shown):
            raise ValueError(f"impression {rid}: shown lists an index twice")
        scores = value.get("scores")
        if scores is not None and (not isinstance(scores, list) or len(scores) != len(shown)):
            raise ValueError(f"impression {rid}: scores must have one number per shown document")
        _check_interleaving(value.get("interleaving"), len(shown), rid)
        return Impression(
            id=str(rid),
            query=query,
            documents=documents,
            shown=tuple(shown),
            scores=None
            if scores is None
            else tuple(math.nan if s is None else _number(s, "scores") for s in scores),
            pipeline=str(value.get("pipeline") or ""),
            time=record_time(value.get("time"), f"impression {rid}"),
            query_id=None if value.get("query_id") is None else str(value["query_id"]),
            explore=value.get("explore"),
            interleaving=value.get("interleaving"),
            endpoint=_endpoint(value.get("endpoint"), rid),
        )
    if kind == "feedback":
        clicks = value.get("clicks")
        if not isinstance(clicks, list) or any(
            isinstance(c, bool) or not isinstance(c, (int, str)) for c in clicks
        ):
            raise ValueError(f"feedback {rid}: clicks must list document indices or ids")
        dwell = value.get("dwell_ms")
        if isinstance(dwell, list):
            if len(dwell) != len(clicks):
                raise ValueError(f"feedback {rid}: dwell_ms must have one value per click")
            dwell = tuple(None if d is None else _number(d, "dwell_ms") for d in dwell)
        elif dwell is not None:
            dwell = _number(dwell, "dwell_ms")
        when = record_time(value.get("time"), f"feedback {rid}")
        unchecked = value.get("unchecked") is True
        return Feedback(str(rid), tuple(clicks), dwell, when, unchecked=unchecked)
    raise ValueError(f"type must be 'impression' or 'feedback', got {kind!r}")
