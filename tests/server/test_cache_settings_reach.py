"""The service's ``[cache]`` table reaches the caches of the pipelines it builds: a
judgment cache and an embedding cache opened without a place of their own use its Redis
server and its ttl; without it, the library's defaults stay."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")
pytest.importorskip("prometheus_client", reason="needs the 'server' extra")
pytest.importorskip("openai", reason="the LLM pipeline needs the 'openai' extra")

from rerankit.cache.redis_store import RedisStore
from rerankit.cache.sqlite import SQLiteStore
from rerankit.scorers import EmbeddingScorer, LLMPointwiseScorer
from rerankit.server import ServerSettings
from rerankit.server.service import Service

JUDGE = {
    "scorer": {
        "type": "llm_pointwise",
        "provider": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "RERANKIT_TEST_KEY",
    }
}
PIPELINES = {
    "llm": JUDGE,
    "hybrid": "hybrid",
    "own": {"scorer": {**JUDGE["scorer"], "cache": False}},
}


def _scorer(service: Service, name: str, cls: type):
    return next(s for s in service.pipelines[name].built.scorers() if isinstance(s, cls))


def test_the_cache_table_reaches_the_caches_of_the_served_pipelines(
    redis_url, monkeypatch, tmp_path
):
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    table = {"url": redis_url, "judgment_ttl": 60, "embedding_ttl": 120, "namespace": "svc"}
    service = Service(ServerSettings(pipelines=PIPELINES, default="llm", cache=table))
    judgments = _scorer(service, "llm", LLMPointwiseScorer).cache.store
    assert isinstance(judgments, RedisStore)
    assert (judgments.url, judgments.ttl, judgments.prefix) == (redis_url, 60.0, "svc:judgment:")
    embeddings = _scorer(service, "hybrid", EmbeddingScorer).cache.store
    assert isinstance(embeddings, RedisStore)
    assert (embeddings.url, embeddings.ttl, embeddings.prefix) == (
        redis_url,
        120.0,
        "svc:embedding:",
    )
    assert _scorer(service, "own", LLMPointwiseScorer).cache is None  # said so: none

    # the library outside the service, and a service without a url: as before
    from rerankit import load

    def shared_embedding():
        return next(s for s in load("hybrid").scorers() if isinstance(s, EmbeddingScorer))

    assert shared_embedding().cache.store is None  # memory only
    # the shared pipeline follows the cache variables in force when it is asked for
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "embeddings.sqlite"))
    assert isinstance(shared_embedding().cache.store, SQLiteStore)
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE")
    assert shared_embedding().cache.store is None
    plain = Service(ServerSettings(pipelines=PIPELINES, default="llm"))
    assert isinstance(_scorer(plain, "llm", LLMPointwiseScorer).cache.store, SQLiteStore)
    assert _scorer(plain, "hybrid", EmbeddingScorer).cache.store is None
    # the environment variable still works when [cache] names no server
    monkeypatch.setenv("RERANKIT_CACHE_URL", redis_url)
    from_env = Service(ServerSettings(pipelines=PIPELINES, default="llm"))
    assert _scorer(from_env, "llm", LLMPointwiseScorer).cache.store.prefix == "rerankit:judgment:"
