"""A judge for ``label`` tests: a responder that grades every document it is asked about
alike, and the judge file that points an OpenAI-protocol pointwise scorer at a
:class:`~rerankit.llm.testing.FakeLLMServer`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rerankit.llm.testing import Reply

#: the document's id in a pointwise prompt
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')


def grading(score: int):
    """A responder that gives every document it is asked about ``score``."""

    def respond(request) -> Reply:
        doc = json.loads(DOC.search(request.prompt).group(1))
        return Reply(text=json.dumps({"id": doc, "score": score}))

    return respond


def judge_file(path: Path, server) -> Path:
    """``path``: a pointwise judge on ``server`` (OpenAI's protocol), without a judgment
    cache."""
    path.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodel = "m"\n'
        f'base_url = "{server.openai_url}"\ncache = false\n'
    )
    return path


def cached_judge_file(tmp_path: Path, server, monkeypatch, kind: str, extra: str = "") -> Path:
    """``tmp_path/KIND.toml``: an ``llm_KIND`` judge on ``server`` (OpenAI's protocol, its
    key in an environment variable), with a judgment cache in ``tmp_path`` and one attempt
    a call; ``extra``: more lines (a listwise window, ...)."""
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    path = tmp_path / f"{kind}.toml"
    path.write_text(
        f'[scorer]\ntype = "llm_{kind}"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        f'base_url = "{server.openai_url}"\napi_key_env = "RERANKIT_TEST_KEY"\n'
        f'cache = "{tmp_path / "judgments.sqlite"}"\nretry = {{ attempts = 1 }}\n' + extra
    )
    return path
