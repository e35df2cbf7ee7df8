"""What the HTTP service page says of an answer's ``meta.rerankit`` (which keys come when,
the shape of ``flags``) and of how ``x-rerankit-warnings`` writes ``meta.warnings`` is what
the service does: its example answers are a live service's, and its recipe for matching
the header's warnings with ``meta.warnings`` gives the header's text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app
from rerankit.server.routes import warnings_header

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text(encoding="utf-8")
SECTION = PAGE.split("### The answer's meta and warnings header\n", 1)[1].split("\n## ", 1)[0]
DOCS = ["wind at sea", "solar panels on a roof turn sunlight into power, all day long"]


def test_the_recipe_writes_a_warning_as_the_header_does():
    recipe = re.search(r"```python\n(.*?)```", SECTION, flags=re.S).group(1)
    shown: dict = {}
    exec(recipe, shown)  # the page's own example
    as_in_the_header = shown["as_in_the_header"]
    warned = [
        "bm25: no query term occurs in any candidate (language 'en'); every score is 0",
        "a provider said:\nHTTP 503\r\n\tretry later",
        "Rücksendung 返品 😀; done",
        "a;b; c",
    ]
    assert warnings_header(warned) == "; ".join(as_in_the_header(w) for w in warned)


def test_the_example_meta_is_a_live_answer_s(wait_ready):
    block = SECTION.split("<!-- not run: answers (tests/server/test_meta_docs.py", 1)[1]
    shown = [
        json.loads(line)
        for line in re.search(r"```json\n(.*?)```", block, re.S)[1].split("\n")
        if line
    ]
    got = []
    for cap in (20000, 40):  # the second cut
        settings = ServerSettings(
            pipelines={"bm25": "bm25"}, default="bm25", max_document_chars=cap
        )
        with TestClient(create_app(settings)) as client:
            wait_ready(client)
            answer = client.post("/v2/rerank", json={"query": "solar power", "documents": DOCS})
            got.append(answer.json()["meta"]["rerankit"])
    assert got == shown
