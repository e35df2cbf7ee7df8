"""A Gemini judge pointed at another server as learning.md ("A Gemini judge on another
server") says: ``base_url`` the host root, calls to ``/v1/models/MODEL:generateContent``
with the key in ``x-goog-api-key``, the request body the page shows, the answer it shows
read back; and a key required even with ``base_url``."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("google.genai", reason="needs the 'gemini' extra")

from rerankit.errors import ConfigError
from rerankit.llm import GeminiClient
from rerankit.rerankers.base import run_sync
from rerankit.scorers import LLMPointwiseScorer
from rerankit.types import Document

PAGE = Path(__file__).parents[2] / "docs" / "learning.md"


def _shown() -> tuple[dict, dict]:
    """The request and the answer the page shows for a Gemini judge."""
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("**A Gemini judge on another server.**", 1)[1].split("**Prices.**")[0]
    request, answer = (json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S))
    return request, answer


def test_a_gemini_judge_at_another_server_sends_and_reads_what_the_page_shows(monkeypatch):
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    request, answer = _shown()
    seen: list[tuple[str, str | None, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("x-goog-api-key"), body))
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        root = f"http://127.0.0.1:{server.server_address[1]}"
        for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(ConfigError, match="no Gemini API key"):  # even with base_url
            GeminiClient(base_url=root, model="gemini-2.5-flash")
        monkeypatch.setenv("GEMINI_API_KEY", "unused")
        scorer = LLMPointwiseScorer(
            GeminiClient(base_url=root, model="gemini-2.5-flash"), cache=False
        )
        user = request["contents"][0]["parts"][0]["text"]
        query = json.loads(re.search(r'Query \(a JSON string\): ("(?:[^"\\]|\\.)*")', user)[1])
        found = re.search(
            r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\): ("(?:[^"\\]|\\.)*")', user
        )
        doc_id, text = (json.loads(g) for g in found.groups())
        batch = run_sync(scorer.score(query, [Document(text, id=doc_id)]))
    finally:
        server.shutdown()
        server.server_close()
    path, key, body = seen[0]
    assert path == "/v1/models/gemini-2.5-flash:generateContent"
    assert key == "unused"
    assert body == request
    assert list(batch.values) == [7.0] and not batch.flags
    assert batch.usage["input_tokens"] == 310 and batch.usage["output_tokens"] == 12
