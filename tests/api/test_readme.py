"""Every Python example in the README runs as written, each in a fresh interpreter. The LLM
example's provider addresses are pointed at a local server that speaks their protocols
(no network here); its ``articles`` are given. Examples that need an extra skip when it is
missing."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rerankit.testing import FakeLLMServer, Reply

REPO = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
ARTICLES = [
    {"text": "The central bank cut rates; bank margins narrowed as a result."},
    {"text": "A new stadium opened downtown."},
    {"text": "Lower rates squeeze lending margins at regional banks."},
]


def _needs(block: str) -> list[str]:
    """The optional packages a block needs to run."""
    needs = []
    if re.search(r"EmbeddingScorer|CrossEncoderScorer|CausalLMScorer|rerankit\.rerank\(", block):
        needs.append("sentence_transformers")
    if "GeminiClient" in block:
        needs.append("google.genai")
    if "OpenAIClient" in block:
        needs.append("openai")
    return needs


def _answer(request):
    ids = re.findall(r'"id": "(\d+)"', request.prompt) or ["0"]
    if "window" in request.prompt.lower() or "order" in request.prompt.lower():
        return Reply(text=json.dumps({"order": list(range(len(ids)))}))
    return Reply(text=json.dumps({"scores": [{"id": i, "score": 5} for i in ids]}))


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_a_readme_example_runs(index, tmp_path):
    block = BLOCKS[index]
    for module in _needs(block):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the example needs {module}")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with FakeLLMServer(responder=_answer) as server:
        code = block.replace("GeminiClient()", f"GeminiClient(base_url={server.url!r})")
        code = code.replace('"http://localhost:8000/v1"', repr(server.openai_url))
        prelude = f"articles = {ARTICLES!r}\n" if "articles" in block else ""
        env |= {"GEMINI_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
        done = subprocess.run(
            [sys.executable, "-c", prelude + code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, f"README example {index}:\n{block}\n{done.stderr[-2000:]}"
