"""A model name the service does not serve is a 404 that lists what is served and says
the ``[server.aliases]`` line that would serve it; its "did you mean" never crosses the
line between multilingual and English names, nor from Voyage's names to Cohere's, and
offers the names of the endpoint's own vendor first. ``[server.aliases]`` adds names to
Cohere's default ones (an entry may point one elsewhere); only an empty table turns them
off, which the startup log, ``rerankit check`` and the 404 for one of them say."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cli import main
from rerankit.server import ServerSettings, create_app
from rerankit.server.model_names import COHERE_MODELS

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


def test_an_alias_of_ones_own_keeps_cohere_s_names(client):
    """One alias for a Jina client set: every Cohere client (and LlamaIndex's default
    rerank-english-v3.0) is still answered, and /v1/models lists them all."""
    for name in COHERE_MODELS:
        r = client.post("/v2/rerank", json={"model": name, "query": "q", "documents": ["a"]})
        assert r.status_code == 200, (name, r.text)
    models = client.get("/v1/models").json()["models"]
    listed = {m["name"]: m.get("alias_of") for m in models}
    assert listed == {"bm25": None, **dict.fromkeys(COHERE_MODELS, "bm25"), **ALIASES}


def test_an_entry_for_one_of_cohere_s_names_points_it_elsewhere():
    pipelines = {"bm25": "bm25", "other": "bm25"}
    settings = ServerSettings(pipelines=pipelines, default="bm25", aliases={"rerank-v3.5": "other"})
    assert settings.resolve("rerank-v3.5") == "other"
    assert settings.resolve("rerank-english-v3.0") == "bm25"  # the others still the default's
    with pytest.raises(ValueError, match="'mine' names pipeline 'nope'"):
        ServerSettings(pipelines=pipelines, default="bm25", aliases={"mine": "nope"})
    with pytest.raises(ValueError, match="'other' is already a pipeline's name"):
        ServerSettings(pipelines=pipelines, default="bm25", aliases={"other": "bm25"})


OLD_STYLE = """[server.aliases]
"jina-reranker-v2-base-multilingual" = "hybrid"
"rerank-v4.0-pro" = "hybrid"
"rerank-v4.0-fast" = "hybrid"
"rerank-v3.5" = "hybrid"
"rerank-english-v3.0" = "hybrid"
"rerank-multilingual-v3.0" = "fast"
"rerank-english-v2.0" = "hybrid"
"rerank-multilingual-v2.0" = "fast"

[pipelines]
hybrid = "bm25"
fast = "bm25"
"""


def test_a_file_that_lists_cohere_s_names_beside_its_own_serves_what_it_did(tmp_path):
    """Written when setting the table replaced Cohere's names: the same names, each onto
    the same pipeline, and no more (a worker process reads the same)."""
    path = tmp_path / "service.toml"
    path.write_text(OLD_STYLE)
    settings = ServerSettings.from_file(path)
    expected = {
        "jina-reranker-v2-base-multilingual": "hybrid",
        **dict.fromkeys(COHERE_MODELS, "hybrid"),
        "rerank-multilingual-v3.0": "fast",
        "rerank-multilingual-v2.0": "fast",
    }
    assert settings.aliases == expected
    assert ServerSettings.from_mapping(settings.to_mapping()).aliases == expected


@pytest.mark.parametrize("table", ["[server]\naliases = {}\n", "[server.aliases]\n"])
def test_an_empty_table_serves_no_alias_and_says_so(tmp_path, capsys, caplog, table):
    path = tmp_path / "service.toml"
    path.write_text(f'{table}[pipelines]\nbm25 = "bm25"\n')
    settings = ServerSettings.from_file(path)
    assert settings.aliases == {} and settings.resolve("rerank-v3.5") == "rerank-v3.5"
    assert ServerSettings.from_mapping(settings.to_mapping()).aliases == {}  # in each worker
    with (
        caplog.at_level(logging.INFO, logger="rerankit.server.app"),
        TestClient(create_app(settings)) as empty,
    ):
        assert [m["name"] for m in empty.get("/v1/models").json()["models"]] == ["bm25"]
        said = _missing(empty, "rerank-v4.0-pro")
    assert "one of Cohere's default names, not served because the settings file's" in said
    assert '[server.aliases] is empty: add "rerank-v4.0-pro" = "bm25" to it, or remove' in said
    logged = [r for r in caplog.records if "default model names" in r.getMessage()]
    assert [r.levelname for r in logged] == ["INFO"]
    assert ", ".join(COHERE_MODELS) in logged[0].getMessage()
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"service.toml: note: Cohere's default model names not served ([server.aliases] is "
        f"empty): {', '.join(COHERE_MODELS)}" in out
    )


def test_any_unknown_name_gets_the_aliases_line(client):
    said = _missing(client, "BAAI/bge-reranker-base", "/rerank")  # Infinity's shape
    assert 'add "BAAI/bge-reranker-base" = "bm25" to [server.aliases]' in said
    # a service started without a settings file: the message says where that table goes
    assert "[server.aliases] of the settings file (rerankit serve --settings FILE)" in said


def test_did_you_mean_stays_on_its_side_of_the_language_line(client):
    assert "did you mean 'rerank-english" not in _missing(client, "rerank-multilingual-v3.1")
    said = _missing(client, "jina-y-multilingual", "/rerank")  # (no vendor's: the closest)
    assert "did you mean 'jina-x-multilingual'" in said
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


def test_with_aliases_of_ones_own_the_log_and_check_name_no_cohere_name(caplog, tmp_path, capsys):
    settings = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases=ALIASES)
    with caplog.at_level(logging.INFO, logger="rerankit.server.app"):
        create_app(settings)
    assert not [r for r in caplog.records if "default model names" in r.getMessage()]
    path = tmp_path / "service.toml"
    path.write_text(
        '[server]\ndefault = "bm25"\n[server.aliases]\n"jina-reranker-v2" = "bm25"\n'
        '[pipelines.bm25]\nreranker = "bm25"\n'
    )
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "default model names" not in out and "warning" not in out, out
