"""How the service reads a request's documents and says what happened to them: v1's
``rank_fields`` (one field read as ``text_field`` reads it, several joined as ``field: value``
lines, strings only), a document without its text answered with a located 422 on every
endpoint, the documents a rule dropped named in a header TEI's clients see, and what the
Cohere v2 SDK sends and gets back."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from rerankit import Pipeline, load, register_reranker  # noqa: E402
from rerankit.documents import InputFields  # noqa: E402
from rerankit.rerankers import ScorerReranker  # noqa: E402
from rerankit.scorers import FunctionScorer, JaccardScorer  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402

#: the texts the "seen" pipeline was given, by query
SEEN: dict[str, list[str]] = {}


def _seen(query, doc):
    SEEN.setdefault(query, []).append(doc.text)
    return float(len(doc.text))


register_reranker("test-seen", lambda: ScorerReranker(FunctionScorer(_seen, name="seen")))


class RelativeWhenScored(ScorerReranker):
    """Token overlap (unit) whose scores turn relative when the documents carry a retriever
    score, as a hybrid fusing the retriever's score does: known only once it has run."""

    async def _score(self, query, docs, **context):
        scored = await super()._score(query, docs, **context)
        if all("score" in d.metadata for d in docs):
            scored.final = scored.final + np.array([d.metadata["score"] for d in docs])
            scored.scale = "relative"
        return scored


register_reranker("test-fusing", lambda: RelativeWhenScored(JaccardScorer()))


class LengthLogit:
    """A stand-in cross-encoder: a logit from the text's length."""

    name = "logit"
    score_scale = "logit"

    async def score(self, query, docs, **context):
        return np.array([len(d.text) / 10 - 2 for d in docs])


# token overlap keeps 2 for the "cross-encoder": the others keep their overlap (unit)
register_reranker("test-cascade", lambda: Pipeline([(JaccardScorer(), 2), LengthLogit()]))

DOCS = [
    {
        "id": "a",
        "title": "Solar panels",
        "body": "Rooftop panels power homes.",
        "date": "2025-05-01",
    },
    {"id": "b", "title": "Wind farms", "body": "Turbines at sea.", "date": "2021-01-10"},
]
RECENCY = {"type": "recency", "field": "date", "half_life_days": 365, "now": "2025-07-01"}
#: token overlap (a unit scale: each score depends on its pair alone), then a threshold
OVERLAP = {
    "stages": [{"scorer": {"type": "jaccard"}}, {"rule": {"type": "min_score", "threshold": 0.1}}]
}


@pytest.fixture(scope="module")
def url(live_server):
    settings = ServerSettings(
        pipelines={
            "dedup": {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "deduplicate"}}]},
            "seen": "test-seen",
            "recent": {"stages": [{"scorer": RECENCY}]},
            "overlap": OVERLAP,
            "fusing": "test-fusing",
            "cascade": "test-cascade",
        },
        default="dedup",  # TEI's requests name no model: the default answers them
        aliases={},
    )
    server = live_server(settings)
    yield server.url
    server.stop()


def _texts(url, query, **body):
    SEEN.pop(query, None)
    body = {"model": "seen", "query": query, "documents": DOCS, **body}
    answer = httpx.post(f"{url}/v1/rerank", json=body)
    assert answer.status_code == 200, answer.text
    return SEEN[query]


def test_one_rank_field_is_read_as_text_field_reads_it(url):
    as_text_field = [d.text for d in InputFields(text_field="body").read(DOCS)]
    assert as_text_field[0] == "Solar panels\nRooftop panels power homes."  # the title first
    assert _texts(url, "q1", rank_fields=["body"]) == as_text_field
    with_text = [{**d, "text": d["body"]} for d in DOCS]
    default = {"documents": with_text}
    naming_it = {"documents": with_text, "rank_fields": ["text"]}  # the default field, named
    assert _texts(url, "q2", **default) == _texts(url, "q2", **naming_it) == as_text_field


def test_several_rank_fields_are_joined_as_field_value_lines_in_their_order(url):
    assert _texts(url, "q3", rank_fields=["body", "title"]) == [
        "body: Rooftop panels power homes.\ntitle: Solar panels",
        "body: Turbines at sea.\ntitle: Wind farms",
    ]


@pytest.mark.parametrize("rank_fields", [["title", "body"], ["body"]])
def test_a_rank_field_that_is_not_a_string_is_a_422_naming_document_and_field(url, rank_fields):
    documents = [DOCS[0], {**DOCS[1], "body": 42}]
    body = {"model": "seen", "query": "q", "documents": documents, "rank_fields": rank_fields}
    answer = httpx.post(f"{url}/v1/rerank", json=body)
    assert answer.status_code == 422
    message = answer.json()["message"]
    assert message.startswith("invalid request: documents.1.body: ") and "got int" in message
    other = [DOCS[0], {**DOCS[1], "date": 20210110}]  # a field not ranked may be anything
    answer = httpx.post(f"{url}/v1/rerank", json={**body, "documents": other})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/v1/rerank", {"documents": [{"body": "x"}]}, "documents.0.text: missing"),
        ("/v1/rerank", {"documents": ["x", {"text": 4}]}, "documents.1.text: field 'text'"),
        ("/v1/rerank", {"documents": [{"body": "x"}], "rank_fields": ["no"]}, "documents.0.no: "),
        ("/v1/rerank", {"documents": [{"a": "x"}], "rank_fields": ["b", "c"]}, "documents.0: "),
        (
            "/v1/rerank",
            {"documents": [{"text": "x", "s": "high"}], "first_stage_field": "s"},
            "documents.0.s: first-stage field 's' must be a number",
        ),
        ("/v1/explain", {"documents": [{"body": "x"}]}, "documents.0.text: missing"),
    ],
)
def test_a_document_without_its_text_is_a_located_422_on_every_endpoint(url, path, body, where):
    answer = httpx.post(f"{url}{path}", json={"query": "q", **body})
    assert answer.status_code == 422, answer.text
    assert answer.json()["message"].startswith(f"invalid request: {where}"), answer.json()


@pytest.mark.parametrize("body", [b"null", b"[1]", b'"x"'])
def test_a_body_that_is_json_but_no_object_is_a_422_without_an_empty_location(url, body):
    answer = httpx.post(f"{url}/v2/rerank", content=body)
    message = answer.json()["message"]
    assert answer.status_code == 422
    assert message.startswith("invalid request: the body must be a JSON object, not ")


def test_the_v1_hint_names_rank_fields_only_when_none_were_given(url):
    body = {"query": "q", "documents": [{"body": "x"}]}
    answer = httpx.post(f"{url}/v1/rerank", json=body)
    assert "or rank_fields naming others" in answer.json()["message"]
    answer = httpx.post(f"{url}/v1/rerank", json={**body, "rank_fields": ["text"]})
    assert "rank_fields" not in answer.json()["message"]


def test_every_answer_names_the_documents_a_rule_dropped(url):
    texts = ["solar panels on roofs", "wind at sea", "solar panels on roofs!", "solar cells"]
    tei = httpx.post(f"{url}/rerank", json={"query": "solar", "texts": texts})
    assert tei.status_code == 200
    assert sorted(r["index"] for r in tei.json()) == [0, 1, 3]  # 4 in, 3 out
    assert tei.headers["x-rerankit-dropped"] == "2"
    for path in ("/v1/rerank", "/v2/rerank"):
        answer = httpx.post(f"{url}{path}", json={"query": "solar", "documents": texts})
        assert answer.headers["x-rerankit-dropped"] == "2", path
        assert any("dropped" in w for w in answer.json()["meta"]["warnings"])
    kept = httpx.post(f"{url}/rerank", json={"query": "solar", "texts": texts[:2]})
    assert len(kept.json()) == 2 and "x-rerankit-dropped" not in kept.headers


def test_a_rule_after_a_pairwise_scorer_leaves_its_scores_as_the_library_gives_them(url):
    """The rule keeps the scorer's unit scale: the service answers the scores themselves,
    not a min-max over the request (which made a lone survivor 0.5 or 1.0)."""
    texts = ["solar panels on roofs", "wind at sea", "solar cells and panels for homes"]
    local = load(OVERLAP).rerank("solar panels", texts)
    assert local.score_scale == "unit" and len(local) == 2  # "wind at sea" is dropped
    for top_n in (None, 1):
        body = {"model": "overlap", "query": "solar panels", "documents": texts, "top_n": top_n}
        answer = httpx.post(f"{url}/v2/rerank", json=body)
        assert answer.status_code == 200 and answer.headers["x-rerankit-scores"] == "unit"
        got = [(r["index"], r["relevance_score"]) for r in answer.json()["results"]]
        assert got == [(r.index, pytest.approx(r.score)) for r in local][:top_n]
    info = httpx.get(f"{url}/info").json()
    assert info["pipelines"]["overlap"]["scores"] == "unit"


def test_top_n_only_cuts_an_answer_whose_scores_turn_out_relative(url):
    """A pipeline whose scores turn relative in a call (a hybrid fusing the retriever's
    score) is normalised over every document sent, whatever top_n cuts (it used to be
    normalised over the top_n alone, so the second of two was always 0)."""
    docs = [
        {"text": "solar panels on roofs", "score": 12.0},
        {"text": "solar cells", "score": 9.0},
        {"text": "wind at sea", "score": 3.0},
        {"text": "solar heating for homes", "score": 1.0},
    ]
    body = {"model": "fusing", "query": "solar panels", "documents": docs}
    whole = httpx.post(f"{url}/v1/rerank", json=body).json()
    cut = httpx.post(f"{url}/v1/rerank", json={**body, "top_n": 2}).json()
    assert whole["meta"]["rerankit"]["scores"] == "relative"
    assert cut["results"] == whole["results"][:2]
    assert 0 < cut["results"][1]["relevance_score"] < 1


def test_a_cascades_answer_within_its_last_stage_answers_that_stages_scores(url):
    texts = ["solar panels on roofs", "solar cells", "wind at sea", "panels of solar glass"]
    local = load("test-cascade").rerank("solar panels", texts)
    assert local.score_scale == "relative"  # the two left behind keep their overlap
    body = {"model": "cascade", "query": "solar panels", "documents": texts}
    top = httpx.post(f"{url}/v2/rerank", json={**body, "top_n": 2})
    assert top.headers["x-rerankit-scores"] == "unit"  # the logit's sigmoid, as a CE's
    got = [(r["index"], r["relevance_score"]) for r in top.json()["results"]]
    assert got == [(r.index, pytest.approx(1 / (1 + math.exp(-r.score)))) for r in local][:2]
    whole = httpx.post(f"{url}/v2/rerank", json=body)
    assert whole.headers["x-rerankit-scores"] == "relative"
    assert [r["index"] for r in whole.json()["results"]] == [r.index for r in local]


def test_v2_carries_texts_only_and_v1_objects_carry_the_fields(url):
    texts = [d["body"] for d in DOCS]
    v2 = httpx.post(f"{url}/v2/rerank", json={"model": "recent", "query": "q", "documents": texts})
    flags = v2.json()["meta"]["rerankit"]["flags"]
    assert flags == {"0": ["missing:date"], "1": ["missing:date"]}
    body = {"model": "recent", "query": "q", "documents": DOCS, "rank_fields": ["body"]}
    v1 = httpx.post(f"{url}/v1/rerank", json=body).json()
    assert "flags" not in v1["meta"]["rerankit"] and v1["results"][0]["index"] == 0  # newer


def test_the_cohere_sdk_sends_objects_with_v1_and_asks_for_v2_documents_in_the_body(url):
    cohere = pytest.importorskip("cohere", reason="needs the cohere SDK (dev extra)")
    SEEN.pop("solar power for homes", None)  # the example of docs/service.md, on "seen"
    co1 = cohere.Client(api_key="any-non-empty-key", base_url=url)
    co1.rerank(model="seen", query="solar power for homes", documents=DOCS, rank_fields=["body"])
    assert SEEN["solar power for homes"] == [
        d.text for d in InputFields(text_field="body").read(DOCS)
    ]
    co = cohere.ClientV2(api_key="any-non-empty-key", base_url=url)
    texts = ["solar panels on roofs", "wind at sea"]
    with pytest.raises(TypeError, match="return_documents"):  # not a keyword of rerank()
        co.rerank(model="dedup", query="solar", documents=texts, return_documents=True)
    extra = {"additional_body_parameters": {"return_documents": True}}
    out = co.rerank(model="dedup", query="solar", documents=texts, request_options=extra)
    assert [r.document["text"] for r in out.results] == [texts[r.index] for r in out.results]
