"""docs/api.md's "At a glance" row of ``rerankit.rerank`` names every keyword the pages
pass to it (a reader of the table sees ``first_stage_field=``, which learning.md tells them
to pass, without guessing that ``**options`` takes it)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from test_api_glance import PAGE, glance_rows, split_call

import rerankit

REPO = Path(__file__).resolve().parents[2]


def test_the_rerank_row_names_every_keyword_the_pages_pass_it():
    (row,) = [r for r in glance_rows(PAGE.read_text()) if r.startswith("rerankit.rerank(")]
    named = {key for key, _ in split_call(row)[1]}
    pages = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
    calls = [c for p in pages for c in re.findall(r"rerankit\.rerank\(([^)]*)\)", p.read_text())]
    passed = {k for call in calls for k in re.findall(r"\b([a-z_]+)=", call)}
    assert "first_stage_field" in passed
    assert passed <= named, f"the row lacks {sorted(passed - named)}"


def test_the_rerank_rows_name_every_keyword_the_calls_declare():
    """``deadline`` was missing from both rows, so a reader scanning the table for a
    timeout concluded there was none and reached for ``asyncio.wait_for``."""
    rows = glance_rows(PAGE.read_text())
    for name, call in (
        ("rerankit.rerank(", rerankit.rerank),
        ("rerankit.Reranker.rerank(", rerankit.Reranker.rerank),
    ):
        (row,) = [r for r in rows if r.startswith(name)]
        named = {key for key, _ in split_call(row)[1]}
        declared = {
            p.name
            for p in inspect.signature(call).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        assert declared <= named, f"{name}...) lacks {sorted(declared - named)}"
