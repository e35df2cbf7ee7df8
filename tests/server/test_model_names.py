"""A model name the service does not serve is a 404 that lists what is served and says
the ``[server.aliases]`` line that would serve it; its "did you mean" never crosses the
line between multilingual and English names, nor from Voyage's names to Cohere's, and
offers the names of the endpoint's own vendor first. Cohere's
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


@pytest.fixture(scope="module")
def both_vendors():
    """A service that answers Cohere's and Voyage's names alike (aliases of one pipeline)."""
    aliases = {"rerank-v3.5": "bm25", "rerank-2.5": "bm25", "rerank-2-lite": "bm25"}
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases=aliases)
    with TestClient(create_app(settings)) as c:
        yield c


def _suggested(client, path, **body):
    r = client.post(path, json={"query": "q", "documents": ["a"], **body})
    assert r.status_code == 404, r.text
    said = r.json()["message"]
    return said.split("did you mean ", 1)[1].split("?")[0] if "did you mean" in said else None


def test_did_you_mean_offers_the_endpoint_s_own_vendor_first(both_vendors):
    """A typo'd Cohere name (Cohere's are rerank-v3.5, Voyage's rerank-2.5) sent to a
    Cohere-shaped endpoint is offered Cohere's name, though Voyage's is closer in letters;
    the same name in Voyage's request (top_k) is offered Voyage's; and where no name of the
    endpoint's vendor is close, the closest of all is still offered."""
    assert _suggested(both_vendors, "/v2/rerank", model="rerank-v2.5") == "'rerank-v3.5'"
    assert _suggested(both_vendors, "/v1/rerank", model="rerank-v2.5") == "'rerank-v3.5'"
    voyage = _suggested(both_vendors, "/v1/rerank", model="rerank-v2.5", top_k=1)
    assert voyage == "'rerank-2.5'"
    assert _suggested(both_vendors, "/v2/rerank", model="bm26") == "'bm25'"
    assert _suggested(both_vendors, "/v1/rerank", model="rerank-2.6") == "'rerank-2.5'"  # Voyage's
    # Infinity's shape (on /rerank) is no vendor's: the closest of all
    assert _suggested(both_vendors, "/rerank", model="rerank-v2.5") == "'rerank-2.5'"


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
