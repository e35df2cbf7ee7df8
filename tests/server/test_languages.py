"""A request naming one of Cohere's multilingual models, answered by a pipeline whose model
reads English only (the bundled all-MiniLM-L6-v2), says so in meta.warnings, and the log
says it once; other names, and pipelines without that model, get no such warning, and the
answer cache keeps the two answers apart."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

import rerankit
from rerankit import register_reranker
from rerankit.rerankers import HybridReranker, ScorerReranker
from rerankit.scorers import JaccardScorer
from rerankit.server import ServerSettings, create_app
from rerankit.server.languages import english_only_models

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _english() -> ScorerReranker:
    """A pipeline that names the bundled MiniLM as its model (a cheap scorer stands in for
    the model, which this test need not load)."""
    scorer = JaccardScorer(name="embedding")
    scorer.model_id = MINILM
    return ScorerReranker(scorer)


register_reranker("test-english-model", _english)
# a hybrid reading German, a cheap scorer in its embedding model's place
register_reranker(
    "test-german-hybrid",
    lambda: HybridReranker(embedding=JaccardScorer(name="embedding"), language="de"),
)

ASK = {
    "query": "Wie trainiert ein Impfstoff die Immunabwehr?",
    "documents": ["Impfstoffe brauchen Kühlschränke.", "Ein Impfstoff trainiert B- und T-Zellen."],
}


def test_the_bundled_minilm_is_known_to_read_english_only_without_loading_it():
    assert english_only_models(rerankit.load("hybrid")) == [MINILM]
    assert english_only_models(rerankit.load("embedding")) == [MINILM]
    assert english_only_models(rerankit.load("bm25")) == []


def test_a_multilingual_model_name_answered_in_english_only_says_so(caplog, wait_ready):
    settings = ServerSettings(
        pipelines={"english": "test-english-model", "bm25": "bm25"},
        default="english",
        aliases={
            "rerank-multilingual-v3.0": "english",
            "rerank-v3.5": "english",
            "rerank-multilingual-v2.0": "bm25",
        },
        answer_cache=True,
    )
    caplog.set_level(logging.WARNING, logger="rerankit.server.languages")
    with TestClient(create_app(settings)) as client:
        wait_ready(client)

        def ask(model: str):
            r = client.post("/v2/rerank", json={**ASK, "model": model})
            assert r.status_code == 200, r.text
            return r.json()["meta"].get("warnings", []), r.headers["x-rerankit-cache"]

        warned, source = ask("rerank-multilingual-v3.0")
        assert source == "miss"
        assert warned == [
            "model 'rerank-multilingual-v3.0' is an alias of pipeline 'english', whose model "
            f"{MINILM} reads English only: text in other languages is ranked poorly (serve a "
            "multilingual pipeline under this name with [server.aliases])"
        ]
        assert ask("rerank-multilingual-v3.0") == (warned, "hit")  # kept with its warning
        assert ask("rerank-v3.5") == ([], "miss")  # the same pipeline and body: no warning
        assert ask("english") == ([], "hit")
        assert ask("rerank-multilingual-v2.0")[0] == []  # bm25 names no English-only model
        explained = client.post("/v1/explain", json={**ASK, "model": "rerank-multilingual-v3.0"})
        assert explained.json()["warnings"] == warned
    logged = [r.getMessage() for r in caplog.records if r.name == "rerankit.server.languages"]
    assert len(logged) == 1 and "'rerank-multilingual-v3.0'" in logged[0]


def test_infinitys_shape_and_any_multilingual_alias_get_the_warning(caplog, wait_ready):
    """Infinity's request names the model through an alias (its answer echoes it): the
    name sent is the one read; a Jina multilingual alias is warned too; the log reads as
    a sentence. Formats without meta (Infinity's, TEI's) say it in x-rerankit-warnings."""
    settings = ServerSettings(
        pipelines={"english": "test-english-model"},
        default="english",
        aliases={
            "rerank-multilingual-v3.0": "english",
            "jina-reranker-v2-base-multilingual": "english",
        },
    )
    caplog.set_level(logging.WARNING, logger="rerankit.server.languages")
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        infinity = client.post("/rerank", json={**ASK, "model": "rerank-multilingual-v3.0"})
        assert infinity.status_code == 200, infinity.text
        assert infinity.json()["model"] == "rerank-multilingual-v3.0"  # echoed, as sent
        said = infinity.headers["x-rerankit-warnings"]
        assert said.startswith("model 'rerank-multilingual-v3.0' is an alias of pipeline 'english'")
        jina = client.post(
            "/v2/rerank", json={**ASK, "model": "jina-reranker-v2-base-multilingual"}
        )
        assert "reads English only" in jina.json()["meta"]["warnings"][0]
        plain = client.post("/rerank", json={**ASK, "model": "english"})
        assert "x-rerankit-warnings" not in plain.headers
    logged = [r.getMessage() for r in caplog.records if r.name == "rerankit.server.languages"]
    assert logged[0].startswith(
        "requests naming model 'rerank-multilingual-v3.0' get a warning in meta.warnings: "
    )


@pytest.mark.slow
def test_the_hybrids_language_warning_names_a_settings_file_pipeline(wait_ready):
    """Served, the default hybrid's warning for a German query gives the service's fix."""
    with TestClient(create_app(ServerSettings())) as client:
        wait_ready(client)
        query = "Wie lange dauert die Rücksendung einer Bestellung?"
        body = {"model": "rerank-v3.5", "query": query, "documents": ["Rücksendungen", "Montag"]}
        warned = client.post("/v2/rerank", json=body).json()["meta"]["warnings"]
    said = [w for w in warned if "this query looks German (de)" in w]
    assert len(said) == 1 and "[pipelines.NAME] reranker = {" in said[0]
    assert "HybridReranker" not in said[0] and "-r pipeline.toml" not in said[0]


def test_every_answer_shape_carries_the_query_language_warning(wait_ready):
    """A Cohere multilingual name routed to a German pipeline, and a Japanese query: the
    pipeline's warning is in meta.warnings (Cohere) and in x-rerankit-warnings for every
    shape, TEI's and Infinity's too (with the alias's own warning, where it has one)."""
    settings = ServerSettings(
        pipelines={"de": "test-german-hybrid"},
        default="de",
        aliases={"rerank-multilingual-v3.0": "de"},
    )
    query, docs = "返品の方法を教えてください", ["Rücksendungen sind möglich.", "返品は30日以内"]
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        cohere = client.post(
            "/v2/rerank",
            json={"model": "rerank-multilingual-v3.0", "query": query, "documents": docs},
        )
        tei = client.post("/rerank", json={"query": query, "texts": docs})
        infinity = client.post("/rerank", json={"query": query, "documents": docs, "model": "de"})
        german = client.post(
            "/rerank", json={"query": "Wie sind Rücksendungen möglich?", "texts": docs}
        )
    for answer in (cohere, tei, infinity, german):
        assert answer.status_code == 200, answer.text
    warned = [w for w in cohere.json()["meta"]["warnings"] if "(Japanese: ja)" in w]
    assert len(warned) == 1 and "read it as language 'de'" in warned[0]
    for answer in (cohere, tei, infinity):
        assert (
            "this query is mostly in another script (Japanese: ja)"
            in answer.headers["x-rerankit-warnings"]
        )
    assert "x-rerankit-warnings" not in german.headers


def test_a_multilingual_hub_id_is_known_by_its_name_and_english_ones_are_not():
    """Names that say many languages without the word: BAAI's m3, mMARCO-trained models;
    English models' names, Cohere's English one and a word merely containing m3 are not."""
    from rerankit.server.model_names import says_multilingual

    for name in (
        "BAAI/bge-reranker-v2-m3",
        "BAAI/bge-m3",
        "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1",
        "jina-reranker-v2-base-multilingual",
        "rerank-multilingual-v3.0",
    ):
        assert says_multilingual(name), name
    for name in (
        "BAAI/bge-reranker-base",
        "cross-encoder/ms-marco-MiniLM-L6-v2",
        "rerank-english-v3.0",
        "rerank-v3.5",
        "team/mm3-reranker",
    ):
        assert not says_multilingual(name), name
