"""Cohere's and TEI's token options, honoured with the pipeline model's own tokenizer:
v2 ``max_tokens_per_doc``, TEI ``truncate``/``truncation_direction``, v1
``max_chunks_per_doc`` (a document scored by its best chunk) and ``billed_units``."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason="needs the 'server' extra")
pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")

from fastapi.testclient import TestClient

import rerankit
from rerankit.backends.bundled import bundled_model_path
from rerankit.server import ServerSettings, create_app

if bundled_model_path() is None:
    pytest.skip("needs the bundled all-MiniLM-L6-v2", allow_module_level=True)

QUERY = "how do vaccines train the immune system"
RELEVANT = (
    "Vaccines expose the immune system to a harmless piece of a pathogen, so that B cells "
    "learn to make antibodies and memory cells recognise it later."
)
FILLER = " ".join(
    f"The harbour committee met on day {i} to discuss the price of fishing nets and ropes."
    for i in range(60)
)


@pytest.fixture(scope="module")
def client(wait_ready):
    # a deadline far above what the requests need, so that a busy machine (the rate the
    # service measures) never sheds them: these tests are about counting, not deadlines
    settings = ServerSettings(
        pipelines={"hybrid": "hybrid", "bm25": "bm25"}, aliases={}, timeout=600
    )
    with TestClient(create_app(settings)) as c:
        wait_ready(c)  # requests get 503 until the pipelines have loaded
        yield c


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(bundled_model_path()))


def _tokens(tokenizer, text: str) -> list[tuple[int, int]]:
    out = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return out["offset_mapping"]


def _library_score(text: str) -> float:
    """The hybrid's score of ``text`` (a probability: the same in any request)."""
    return rerankit.rerank(QUERY, [text], reranker="hybrid")[0].score


def test_max_tokens_per_doc_cuts_by_the_models_tokens_and_says_so(client, tokenizer):
    long = f"{RELEVANT} {FILLER}"
    docs = ["a short note on ropes", long]
    r = client.post(
        "/v2/rerank", json={"query": QUERY, "documents": docs, "max_tokens_per_doc": 20}
    )
    assert r.status_code == 200, r.text
    spans = _tokens(tokenizer, long)
    meta = r.json()["meta"]
    assert meta["warnings"] == [
        f"document 1: scored on its first 20 of {len(spans)} tokens (max_tokens_per_doc)"
    ]
    assert meta["rerankit"]["flags"] == {"1": ["truncated"]}
    assert r.headers["x-rerankit-truncated"] == "1"
    got = {x["index"]: x["relevance_score"] for x in r.json()["results"]}
    # scored on exactly the first 20 of the tokenizer's tokens
    assert got[1] == pytest.approx(_library_score(long[: spans[19][1]]), abs=1e-6)
    assert got[1] != pytest.approx(_library_score(long), abs=1e-4)
    answer = client.post("/v2/rerank", json={"query": QUERY, "documents": docs})
    plain = answer.json()["meta"]
    # without the option nothing is cut by the service; the hybrid's own passage cap is
    # said by the library, with its own flag and warning, and in the header like any cut
    assert not any(w.startswith("document ") for w in plain.get("warnings", []))
    assert any("(max_passages)" in w for w in plain["warnings"])
    assert plain["rerankit"]["flags"] == {"1": ["truncated:passage"]}
    assert answer.headers["x-rerankit-truncated"] == "1"


def test_a_pipeline_without_a_model_counts_words_and_says_so(client):
    r = client.post(
        "/v2/rerank",
        json={
            "model": "bm25",
            "query": QUERY,
            "documents": ["vaccines immune system train well", "x"],
            "max_tokens_per_doc": 2,
        },
    )
    assert r.json()["meta"]["warnings"] == [
        "document 0: scored on its first 2 of 5 words (max_tokens_per_doc; no model tokenizer here)"
    ]


def test_tei_truncate_cuts_to_the_models_input_limit_from_the_side_asked(client, tokenizer):
    long = f"{FILLER} {RELEVANT}"  # the relevant sentence is at the end
    spans = _tokens(tokenizer, long)
    limit = 256  # all-MiniLM-L6-v2's max_seq_length
    assert len(spans) > limit
    texts = ["a short note on ropes", long]
    right = client.post("/rerank", json={"query": QUERY, "texts": texts, "truncate": True})
    left = client.post(
        "/rerank",
        json={"query": QUERY, "texts": texts, "truncate": True, "truncation_direction": "Left"},
    )
    off = client.post("/rerank", json={"query": QUERY, "texts": texts, "raw_scores": True})
    for r in (right, left):
        assert r.status_code == 200 and r.headers["x-rerankit-truncated"] == "1"
    # without truncate the service cuts nothing, but the hybrid reads the long text's
    # first 16 passages only (max_passages): a cut too, said the same way
    assert off.headers["x-rerankit-truncated"] == "1"
    short = client.post("/rerank", json={"query": QUERY, "texts": texts[:1], "truncate": True})
    assert "x-rerankit-truncated" not in short.headers
    raw = {
        side: {
            x["index"]: x["score"]
            for x in client.post(
                "/rerank",
                json={
                    "query": QUERY,
                    "texts": texts,
                    "truncate": True,
                    "truncation_direction": side,
                    "raw_scores": True,
                },
            ).json()
        }
        for side in ("Right", "Left")
    }
    assert raw["Right"][1] == pytest.approx(_library_score(long[: spans[limit - 1][1]]), abs=1e-6)
    assert raw["Left"][1] == pytest.approx(_library_score(long[spans[-limit][0] :]), abs=1e-6)
    assert raw["Left"][1] > raw["Right"][1]  # the end holds the relevant sentence


def test_max_chunks_per_doc_scores_a_document_by_its_best_chunk(client, tokenizer):
    long = f"{FILLER} {RELEVANT}"  # the relevant sentence lies in a late chunk
    docs = ["a short note on ropes", long, "Antibodies are made by B cells."]
    n_chunks = None
    answers = {}
    for n in (1, 20):
        r = client.post(
            "/v1/rerank", json={"query": QUERY, "documents": docs, "max_chunks_per_doc": n}
        )
        assert r.status_code == 200, r.text
        body = r.json()
        answers[n] = {x["index"]: x["relevance_score"] for x in body["results"]}
        assert sorted(answers[n]) == [0, 1, 2]  # documents, not chunks
        assert body["results"][0]["document"]["text"] in docs
        (warning,) = [w for w in body["meta"]["warnings"] if w.startswith("document 1:")]
        n_chunks = int(warning.split("split into ")[1].split()[0])
        assert f"best of the first {min(n, n_chunks)}" in warning
        assert body["meta"]["rerankit"]["flags"] == {"1": ["chunked"]}
    assert n_chunks > 1
    assert answers[20][1] > answers[1][1]  # the chunk holding the answer is read
    # documents that fit in one chunk score as without chunking
    plain = client.post("/v1/rerank", json={"query": QUERY, "documents": docs}).json()
    assert {x["index"]: x["relevance_score"] for x in plain["results"]}[2] == pytest.approx(
        answers[20][2], abs=1e-9
    )
    # the long document's score is its best chunk's, as the library scores that chunk
    size = 256 - len(_tokens(tokenizer, QUERY)) - 3
    spans = _tokens(tokenizer, long)
    chunks = [spans[i : i + size] for i in range(0, len(spans), size)]
    best = max(_library_score(long[c[0][0] : c[-1][1]]) for c in chunks)
    assert answers[20][1] == pytest.approx(best, abs=1e-6)


def test_billed_units_count_search_units_and_tokens_as_cohere_does(client, tokenizer):
    docs = [f"document number {i} about vaccines" for i in range(150)]
    r = client.post("/v2/rerank", json={"query": QUERY, "documents": docs, "top_n": 3})
    assert r.status_code == 200, r.text
    billed = r.json()["meta"]["billed_units"]
    q = len(_tokens(tokenizer, QUERY))
    assert billed["input_tokens"] == q * len(docs) + sum(len(_tokens(tokenizer, d)) for d in docs)
    assert billed["search_units"] == 2  # 150 documents: two units of up to 100
    long = f"{RELEVANT} {FILLER}"
    r = client.post("/v1/rerank", json={"query": QUERY, "documents": [long] * 60})
    per_doc = math.ceil(len(_tokens(tokenizer, long)) / (500 - q))  # 500-token chunks
    assert r.json()["meta"]["billed_units"]["search_units"] == math.ceil(60 * per_doc / 100)


def test_billed_units_counted_beside_the_scoring_arrive_either_way(client, monkeypatch):
    """A bill-only request counts its tokens while it is scored: the answer waits for a
    count slower than the scoring, and a count faster than it changes nothing."""

    from rerankit.server import service

    docs = [f"document number {i} about vaccines and the immune system" for i in range(40)]
    body = {"query": QUERY, "documents": docs, "model": "bm25"}
    expected = client.post("/v2/rerank", json=body).json()
    real = service.by_tokens

    def slow(call, tokens):  # the count finishes well after bm25 has scored
        time.sleep(0.5)
        return real(call, tokens)

    monkeypatch.setattr(service, "by_tokens", slow)
    began = time.perf_counter()
    r = client.post("/v2/rerank", json=body)
    assert r.status_code == 200, r.text
    assert time.perf_counter() - began >= 0.5
    assert r.json()["meta"]["billed_units"] == expected["meta"]["billed_units"]
    assert r.json()["results"] == expected["results"]
    assert expected["meta"]["billed_units"]["input_tokens"] > 0


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=6))
def test_a_bill_counts_the_same_tokens_as_the_offsets_it_skips(texts):
    """A bill-only request counts tokens without building their offsets; the counts, and so
    the billed units, are the offsets' own."""
    from rerankit.server.tokens import fit, tokens_of, usage
    from rerankit.types import Document

    tokens = tokens_of(_hybrid())
    assert tokens.lengths is not None
    counted = tokens.count(texts)
    assert counted == [len(found) for found in tokens.spans(texts)]
    docs = [Document(text=t) for t in texts[1:]]
    fitted = fit(texts[0], docs, tokens, max_tokens=None, cuts={})
    assert usage(counted[0], counted[1:]) == fitted.usage


_PIPELINE: list = []


def _hybrid():
    if not _PIPELINE:
        _PIPELINE.append(rerankit.load("hybrid"))
    return _PIPELINE[0]
