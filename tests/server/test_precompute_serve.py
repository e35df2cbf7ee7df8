"""``rerankit serve`` started on the cache ``rerankit precompute`` filled answers those
documents from it: it encodes the query only."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cache import embedding_lookups
from rerankit.cli import main
from rerankit.cli.serve import serve_settings, settings_args
from rerankit.scorers.recipe import HYBRID_CALIBRATION
from rerankit.server import ServerSettings, create_app

TEXTS = [" ".join(["solar panels convert light"] * (i % 15 + 1)) + f" {i}" for i in range(12)]


def _files(folder, model):
    """A pipeline file (the calibrated hybrid on ``model``) and the corpus, in ``folder``."""
    pipeline = folder / "pipeline.json"
    hybrid = {"type": "hybrid", "model": str(model), "calibration": HYBRID_CALIBRATION}
    pipeline.write_text(json.dumps({"reranker": hybrid}), encoding="utf-8")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS), encoding="utf-8")
    return pipeline, corpus


def _misses_of_a_request(settings, wait_ready) -> dict[str, int]:
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        with embedding_lookups() as counts:
            r = client.post("/v1/rerank", json={"query": "solar panels", "documents": TEXTS})
        assert r.status_code == 200, r.text
    return counts


def test_serve_on_the_precomputed_file_encodes_only_the_query(
    tiny_st, tmp_path, monkeypatch, capsys, wait_ready
):
    pipeline, corpus = _files(tmp_path, tiny_st)
    store = tmp_path / "embeddings.sqlite"
    argv = ["precompute", "-i", str(corpus), "-r", str(pipeline), "--embedding-cache", str(store)]
    assert main(argv) == 0
    assert "12 documents read" in capsys.readouterr().out
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(store))  # as serve is started
    settings = ServerSettings(pipelines={"corpus": str(pipeline)}, default="corpus")
    counts = _misses_of_a_request(settings, wait_ready)
    assert counts["misses"] == 0 and counts["store_hits"] >= len(TEXTS)


def test_precompute_with_the_settings_file_fills_the_services_redis_cache(
    tiny_st, tmp_path, redis_url, capsys, wait_ready
):
    pipeline, corpus = _files(tmp_path, tiny_st)
    service = tmp_path / "service.toml"
    service.write_text(
        f'[pipelines]\ncorpus = "{pipeline.name}"\n\n[cache]\nurl = "{redis_url}"\n'
        'namespace = "svc"\n',
        encoding="utf-8",
    )
    assert main(["precompute", "-i", str(corpus), "--settings", str(service)]) == 0
    said = capsys.readouterr().out
    assert "corpus: 12 documents read" in said and "(svc:embedding:*)" in said
    counts = _misses_of_a_request(serve_settings(settings_args(str(service))), wait_ready)
    assert counts["misses"] == 0 and counts["store_hits"] >= len(TEXTS)
