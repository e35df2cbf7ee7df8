"""The names an evaluation shows its rerankers under (:func:`reranker_labels`), the notes
saying which input got which, and the title layouts it runs them with (and what its
heading says of them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..api import pipeline_name
from ..errors import InputError, keyword_flag
from ..spec_toml import PIPELINE_SUFFIXES
from .data import TITLES

__all__ = ["TITLE_WORDS", "renamed_notes", "reranker_labels", "title_layouts", "titles_note"]


def title_layouts(titles: str | Sequence[str]) -> list[str]:
    """``titles`` (comma-separated, or a list) as layouts, each checked, in order, without
    repeats."""
    given = titles.split(",") if isinstance(titles, str) else list(titles)
    layouts = list(dict.fromkeys(str(t).strip() for t in given if str(t).strip()))
    wrong = [t for t in layouts if t not in TITLES]
    if wrong or not layouts:
        raise InputError(
            f"{keyword_flag('titles', titles)}: expected one or more of {', '.join(TITLES)}, "
            "separated by commas"
        )
    return layouts


def reranker_labels(given: Sequence[Any]) -> list[str]:
    """The name each reranker is shown under: a pipeline file's declared name (else its
    file name), a name or model as given, a reranker object's ``name``; a name listed
    before gets ``-2``, ``-3``, ... (one rule for the tables, ``results.json``, ``runs/``
    and ``baseline``)."""
    out: list[str] = []
    for item in given:
        name = _own_name(item)
        candidate, number = name, 1
        while candidate in out:
            number += 1
            candidate = f"{name}-{number}"
        out.append(candidate)
    return out


def _own_name(item: Any) -> str:
    """The name a reranker declares (see :func:`reranker_labels`), before any ``-2``."""
    if isinstance(item, (str, Path)):
        return pipeline_name(item)
    if isinstance(item, Mapping):
        return str(item.get("name") or "pipeline")
    return str(getattr(item, "name", None) or type(item).__name__)


def renamed_notes(given: Sequence[Any]) -> list[str]:
    """A line for each name that several of ``given`` declare, saying which input is
    listed under which label (``two pipelines are named 'my-ce': ce.toml is listed as
    my-ce, my-ce as my-ce-2``); empty when every name is its own."""
    labels = reranker_labels(given)
    names = [_own_name(item) for item in given]
    lines = []
    rows = list(zip(given, names, labels, strict=True))
    for name in dict.fromkeys(names):
        which = [(item, label) for item, n, label in rows if n == name]
        if len(which) > 1:
            count = {2: "two", 3: "three"}.get(len(which), str(len(which)))
            listed = ", ".join(f"{_given_as(item)} as {label}" for item, label in which)
            line = f"{count} pipelines are named {name!r}: {listed} (in the order given)"
            if sum(_a_file(item) for item, _ in which) > 1:  # e.g. copies of one example
                line += '; give each file its own name = "..." (a top-level key) to tell them apart'
            lines.append(line)
    return lines


def _a_file(item: Any) -> bool:
    """Whether ``item`` is a pipeline file (which names itself with its ``name`` key)."""
    return isinstance(item, (str, Path)) and Path(item).suffix.lower() in PIPELINE_SUFFIXES


def _given_as(item: Any) -> str:
    """How an input to :func:`reranker_labels` is named in a note: a path or name as
    given, else the kind of object."""
    if isinstance(item, (str, Path)):
        return str(item)
    return "a mapping" if isinstance(item, Mapping) else f"a {type(item).__name__}"


#: what the heading says of each title layout but ``field`` (see :data:`~.data.TITLES`)
TITLE_WORDS = {
    "newline": "joined to the text by a newline",
    "space": "joined to the text by a space",
    "period": "joined to the text by '. '",
    "drop": "left out",
}


def titles_note(layouts: Sequence[str]) -> str:
    """What the heading says of the title layouts (nothing for the default, ``field``)."""
    if len(layouts) > 1:
        return f"; each reranker once per title layout ({', '.join(layouts)})"
    return "" if layouts[0] == "field" else f"; titles: {TITLE_WORDS[layouts[0]]}"
