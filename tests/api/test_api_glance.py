"""docs/api.md's "At a glance" tables, the API reference a user reads in the repository,
stay true: every name of ``rerankit.__all__`` has a row, every call resolves, and every
argument a row names is one the callable takes, with the default the row shows."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

import rerankit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"

#: where a callable's ``**options`` go, so a keyword named for them is checked there
OPTIONS_GO_TO = {
    "rerankit.rerank": "rerankit.InputFields",
    "rerankit.Reranker.rerank": "rerankit.InputFields",
    "rerankit.training.tune": "rerankit.training.TuneOptions",
    "rerankit.training.clicks.learn_from_log": "rerankit.training.clicks.learn_from_clicks",
    "rerankit.batch.run_batch": "rerankit.rerank",
    "rerankit.scorers.CrossEncoderScorer": "rerankit.scorers.local.LocalModelScorer",
}


def glance_rows(text: str) -> list[str]:
    """The first cell (the code in backticks) of every table row of the page's "At a
    glance" section."""
    section = re.search(r"^## At a glance\n(.*?)^## ", text, flags=re.S | re.M)
    assert section, "docs/api.md has no '## At a glance' section"
    cells = []
    for line in section.group(1).splitlines():
        if line.startswith("| `"):
            cell = line.split("|")[1].strip()
            cells.append(re.match(r"`([^`]+)`", cell).group(1))
    return cells


def split_call(code: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``name(a, *, b=1)`` -> ("name", [("a", None), ("b", "1")]); no parentheses: a name
    that is not a call (no arguments checked)."""
    if "(" not in code:
        return code, []
    name, args = code[: code.index("(")], code[code.index("(") + 1 : code.rindex(")")]
    parts, depth, current = [], 0, ""
    for char in args:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    out = []
    for part in parts:
        if part in ("", "*", "...", "/"):
            continue
        key, _, default = part.partition("=")
        out.append((key.strip(), default.strip() if default else None))
    return name, out


def resolve(dotted: str):
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if error.name and not dotted.startswith(error.name):
                raise  # an optional package missing, not a part of the name
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(f"{dotted} names nothing")


def parameters(dotted: str) -> dict[str, inspect.Parameter]:
    """The named parameters of ``dotted``, and of where its ``**options`` go."""
    found = {}
    while dotted:
        params = inspect.signature(resolve(dotted)).parameters
        found |= {
            p.name: p
            for p in params.values()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in found
        }
        dotted = (
            OPTIONS_GO_TO.get(dotted)
            if any(p.kind is p.VAR_KEYWORD for p in params.values())
            else None
        )
    return found


def problems(code: str) -> list[str]:
    """What is untrue in one row's call (an empty list: nothing)."""
    name, args = split_call(code)
    if not args:
        resolve(name)
        return []
    params = parameters(name)
    out = []
    for key, default in args:
        if key not in params:
            out.append(f"{name} takes no argument {key!r}")
            continue
        actual = params[key].default
        if default is None or actual is inspect.Parameter.empty:
            continue
        if actual is dataclasses._HAS_DEFAULT_FACTORY:  # type: ignore[attr-defined]
            continue
        try:
            shown = ast.literal_eval(default)
        except (ValueError, SyntaxError):
            continue  # not a literal (``...``, a call): not compared
        if shown is not Ellipsis and shown != actual:
            out.append(f"{name}: {key}={default} on the page, {actual!r} in the code")
    return out


ROWS = glance_rows(PAGE.read_text(encoding="utf-8"))


def test_every_public_name_has_a_row():
    named = {split_call(code)[0] for code in ROWS}
    missing = [n for n in rerankit.__all__ if f"rerankit.{n}" not in named]
    assert missing == [], f"docs/api.md's At a glance has no row for {missing}"


@pytest.mark.parametrize("code", ROWS, ids=[split_call(c)[0] for c in ROWS])
def test_a_row_names_only_what_the_call_takes(code):
    try:
        found = problems(code)
    except ImportError as error:  # an adapter whose optional package is not installed
        pytest.skip(f"{split_call(code)[0]} needs {error.name}")
    assert found == []


def test_the_checks_catch_a_wrong_row():
    """A keyword the call lacks, a wrong default and a missing public name are each found."""
    assert problems("rerankit.rerank(query, documents, *, top_n=3)") == [
        "rerankit.rerank takes no argument 'top_n'"
    ]
    assert problems('rerankit.rerank(query, documents, *, text_field="body")') != []
    assert problems("rerankit.training.tune(data, *, folds=5, candidates=100)") == []
    assert problems("rerankit.training.tune(data, *, epochs=5)") != []
    rows = glance_rows("## At a glance\n\n| `rerankit.rerank(query)` | x | y |\n\n## Next\n")
    assert rows == ["rerankit.rerank(query)"]
    assert {split_call(code)[0] for code in rows} != {f"rerankit.{n}" for n in rerankit.__all__}


def _row_text(name: str) -> str:
    """The whole table row whose call is ``name``."""
    text = PAGE.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(rf"\| `{re.escape(name)}[`(]", line)]
    (row,) = rows
    return row


@pytest.mark.parametrize("name", ["RerankResult", "RankedDocument"])
def test_a_result_row_names_every_method_of_the_result(name):
    """A reader looking for ``top_k`` or ``documents()`` (code moving from another library
    asks for them) finds every public method of the result classes in their rows."""
    cls = getattr(rerankit, name)
    methods = [m for m, v in vars(cls).items() if not m.startswith("_") and inspect.isfunction(v)]
    row = _row_text(f"rerankit.{name}")
    assert methods and [m for m in methods if f".{m}(" not in row] == []


def test_a_coroutine_method_row_says_await():
    """``ResultReranker.rerank`` is a coroutine, as in the API it keeps: its row says so."""
    from rerankit.compat import ResultReranker

    assert inspect.iscoroutinefunction(ResultReranker.rerank)
    assert "`await .rerank(" in _row_text("rerankit.compat.ResultReranker")
