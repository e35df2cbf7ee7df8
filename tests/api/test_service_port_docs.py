"""The service's default port, said where a reader first starts it: it was stated only in
``serve --help``, README.md and docs/service.md used ``--port 8080`` in some commands and
none in others, and a measuring recipe called rerankit's ``/v2/rerank`` on port 8000 (an
LLM server's port elsewhere on the page), where nothing listens by default."""

from __future__ import annotations

import re
from pathlib import Path

from rerankit.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "service.md"]


def _default_port() -> int:
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    return serve.get_default("port")


def test_the_default_port_is_said_near_the_first_serve_command():
    port = _default_port()
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        first = next(i for i, line in enumerate(lines) if line.startswith("rerankit serve"))
        near = " ".join(lines[first : first + 5])
        assert f"{port} by default" in near, page.name


def test_rerankit_endpoints_are_called_on_the_default_port():
    port = _default_port()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        called = re.findall(r"https?://(?:localhost|127\.0\.0\.1):(\d+)/(?:v[12]/)?rerank", text)
        assert called and set(called) == {str(port)}, page.name
