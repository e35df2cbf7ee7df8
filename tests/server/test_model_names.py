"""A model name the service does not serve is a 404 that lists what is served and says
the ``[server.aliases]`` line that would serve it; its "did you mean" never crosses the
line between multilingual and English names, nor from Voyage's names to Cohere's. Cohere's
default names left out by a ``[server.aliases]`` table are named by the startup log, by
``rerankit check`` and by the 404 for one of them."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cli import main
from rerankit.server import ServerSettings, create_app

ALIASES = {"rerank-v3.5": "bm25", "rerank-english-v3.0": "bm25", "jina-x-multilingual": "bm25"}


@pytest.fixture(scope="module")
def client():
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases=ALIASES)
    with TestClient(create_app(settings)) as c:
        yield c


def _missing(client, model, path="/v2/rerank"):
    r = client.post(path, json={"model": model, "query": "q", "documents": ["a"]})
    assert r.status_code == 404, r.text
    return r.json()["message"]


def test_a_dropped_cohere_name_says_why_and_the_line_that_serves_it(client):
    said = _missing(client, "rerank-v4.0-pro")
    assert "available: bm25; aliases: " in said
    assert "one of Cohere's default names, which the settings file's [server.aliases]" in said
    assert 'add "rerank-v4.0-pro" = "bm25" to it' in said


def test_any_unknown_name_gets_the_aliases_line(client):
    said = _missing(client, "BAAI/bge-reranker-base", "/rerank")  # Infinity's shape
    assert 'add "BAAI/bge-reranker-base" = "bm25" to [server.aliases]' in said


def test_did_you_mean_stays_on_its_side_of_the_language_line(client):
    assert "did you mean 'rerank-english" not in _missing(client, "rerank-multilingual-v3.0")
    assert "did you mean 'jina-x-multilingual'" in _missing(client, "jina-y-multilingual")
    assert "did you mean" not in _missing(client, "rerank-2", "/v1/rerank")  # Voyage's
    assert "did you mean 'rerank-v3.5'" in _missing(client, "rerank-v3.6")


def test_the_startup_log_and_check_name_the_dropped_cohere_names(caplog, tmp_path, capsys):
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases=ALIASES)
    with caplog.at_level(logging.INFO, logger="rerankit.server.app"):
        create_app(settings)
    said = [r.getMessage() for r in caplog.records if "default model names" in r.getMessage()]
    assert said and "rerank-v4.0-pro, rerank-v4.0-fast, rerank-multilingual-v3.0" in said[0]
    assert "rerank-v3.5" not in said[0]
    path = tmp_path / "service.toml"
    path.write_text(
        '[server]\ndefault = "bm25"\n[server.aliases]\n"rerank-v3.5" = "bm25"\n'
        '[pipelines.bm25]\nreranker = "bm25"\n'
    )
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: Cohere's default model names not served" in out
    assert "rerank-english-v3.0" in out
    # none left out by default
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rerankit.server.app"):
        create_app(ServerSettings(pipelines={"bm25": "bm25"}, default="bm25"))
    assert not [r for r in caplog.records if "default model names" in r.getMessage()]
