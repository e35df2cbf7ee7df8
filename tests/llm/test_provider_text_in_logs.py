"""A provider's error text may quote the prompt (the query and the documents) and holds
raw newlines: the security reader saw both in one WARNING line of the service's log. The
log line says the status and how long the text was, on one line; the caller's warnings
keep the text."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.errors import for_the_log
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer
from rerankit.server.logs import log_formatter

NO_RETRY = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=10.0)
ECHO = 'Invalid prompt: Query (a JSON string): "patient john smith"\nDocument: SSN 123-45-6789'


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.setFormatter(log_formatter())
        self.written: list[str] = []

    def emit(self, record):
        self.written.append(self.format(record))


@pytest.mark.parametrize("scorer_class", [LLMPointwiseScorer, LLMListwiseScorer])
def test_a_providers_error_text_stays_out_of_the_log(scorer_class):
    handler = _Lines()
    root = logging.getLogger("rerankit")
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        with FakeLLMServer(responder=lambda request: Reply(status=400, text=ECHO)) as server:
            client = OpenAIClient(base_url=server.openai_url, model="m", api_key="test-key")
            scorer = scorer_class(client, cache=False, retry=NO_RETRY)
            result = ScorerReranker(scorer).rerank("patient john smith", ["SSN 123-45-6789", "b"])
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert any("john smith" in w for w in result.warnings)  # the caller still reads it
    said = "\n".join(handler.written)
    assert "answered HTTP 400" in said, said
    assert "john smith" not in said and "123-45-6789" not in said, said
    assert "left out of the log" in said


def test_a_log_line_with_a_newline_stays_one_line():
    record = logging.LogRecord("rerankit.x", logging.WARNING, "f", 1, "a\nb\r\nc", (), None)
    line = log_formatter().format(record)
    assert "\n" not in line and "\r" not in line and line.endswith("a\\nb\\r\\nc")


def test_the_failing_pipelines_line_drops_the_providers_text_too():
    why = 'every LLM call failed: openai (model "m") answered HTTP 400: Invalid "john smith"'
    said = for_the_log(why)
    assert "john smith" not in said and said.startswith("every LLM call failed: openai")
    assert "answered HTTP 400 (" in said and "left out of the log" in said
