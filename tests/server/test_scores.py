"""What the service's scores mean: ``relevance_score`` and every label of it agree."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx", reason="needs httpx")

from rerankit.server import ServerSettings  # noqa: E402

DOCS = [
    "Solar panels turn sunlight into power.",
    "Wind farms at sea.",
    "Solar power stations and solar cells.",
]
RRF = {
    "method": "rrf",
    "scorers": [{"type": "bm25"}, {"type": "jaccard"}],
}


@pytest.fixture(scope="module")
def served(live_server, bert_dir):
    settings = ServerSettings(
        pipelines={
            "bm25": "bm25",
            "rrf": RRF,
            "ce": {"scorer": {"type": "cross_encoder", "model": str(bert_dir)}},
        },
        default="ce",
    )
    server = live_server(settings)
    yield server
    server.stop()


def rerank(server, model, docs, query="solar power"):
    r = httpx.post(
        f"{server.url}/v2/rerank", json={"model": model, "query": query, "documents": docs}
    )
    assert r.status_code == 200, r.text
    return r


def test_a_cross_encoder_served_says_its_scores_are_its_logits_sigmoid(served):
    r = rerank(served, "ce", DOCS)
    raw = httpx.post(
        f"{served.url}/rerank", json={"query": "solar power", "texts": DOCS, "raw_scores": True}
    )
    logits = {x["index"]: x["score"] for x in raw.json()}
    for x in r.json()["results"]:  # the sigmoid of the model's logit: unit, not a logit
        assert x["relevance_score"] == pytest.approx(1 / (1 + math.exp(-logits[x["index"]])))
    own = r.json()["meta"]["rerankit"]
    assert own["scores"] == "unit" and own["raw_scores"] == "logit"
    assert r.headers["x-rerankit-scores"] == "unit"
    assert raw.headers["x-rerankit-scores"] == "logit"  # raw_scores: the model's own numbers
    tei = httpx.post(f"{served.url}/rerank", json={"query": "solar power", "texts": DOCS})
    assert tei.headers["x-rerankit-scores"] == "unit"
    models = {m["name"]: m for m in httpx.get(f"{served.url}/v1/models").json()["models"]}
    info = httpx.get(f"{served.url}/info").json()["pipelines"]
    for listed in (models["ce"], models["rerank-v3.5"], info["ce"]):
        said = (listed["scores"], listed["raw_scores"], listed["pairwise"])
        assert said == ("unit", "logit", True)


@pytest.mark.parametrize("model", ["bm25", "rrf"])
def test_relative_scores_are_min_max_normalised_per_request(served, model):
    for docs in (DOCS[:2], DOCS):
        r = rerank(served, model, docs)
        scores = [x["relevance_score"] for x in r.json()["results"]]
        assert scores[0] == 1.0 and scores[-1] == 0.0, scores  # best 1, worst 0
        assert r.json()["meta"]["rerankit"]["scores"] == "relative"
        assert r.headers["x-rerankit-scores"] == "relative"
    # one document, or documents all alike: nothing to tell apart, 0.5 each
    assert [x["relevance_score"] for x in rerank(served, model, DOCS[:1]).json()["results"]] == [
        0.5
    ]
    same = rerank(served, model, [DOCS[0], DOCS[0]]).json()["results"]
    assert [x["relevance_score"] for x in same] == [0.5, 0.5]
    listed = {m["name"]: m for m in httpx.get(f"{served.url}/v1/models").json()["models"]}
    assert listed[model]["scores"] == listed[model]["raw_scores"] == "relative"


def test_an_unknown_model_is_answered_with_every_name_that_works(served):
    r = httpx.post(
        f"{served.url}/v2/rerank", json={"model": "hybrid", "query": "q", "documents": ["d"]}
    )
    assert r.status_code == 404
    message = r.json()["message"]
    assert "'hybrid' not found" in message
    for name in ("bm25", "ce", "rrf", "rerank-v3.5", "rerank-english-v3.0"):
        assert name in message, message


@pytest.mark.parametrize("model", ["bm25", "rrf", "ce"])
def test_top_n_only_cuts_the_answer_its_scores_stay_the_same(served, model):
    whole = {
        x["index"]: x["relevance_score"] for x in rerank(served, model, DOCS).json()["results"]
    }
    for top_n in (1, 2):
        body = {"model": model, "query": "solar power", "documents": DOCS, "top_n": top_n}
        cut = httpx.post(f"{served.url}/v2/rerank", json=body).json()["results"]
        assert len(cut) == top_n
        assert {x["index"]: x["relevance_score"] for x in cut} == {
            i: whole[i] for i in [x["index"] for x in cut]
        }
    v1 = httpx.post(
        f"{served.url}/v1/rerank",
        json={"model": model, "query": "solar power", "documents": DOCS, "top_n": 1},
    ).json()["results"]
    assert v1[0]["relevance_score"] == max(whole.values())
