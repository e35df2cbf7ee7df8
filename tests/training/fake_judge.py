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
