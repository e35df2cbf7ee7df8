"""Error answers a migrating client can act on: TEI's ``POST /rerank`` answers errors as
Text Embeddings Inference does, ``{"error": text, "error_type":
Validation|Overloaded|Unhealthy|Backend}``, besides rerankit's ``message`` and ``code``
(other endpoints send ``{"message": ..., "code": ...}`` alone); v2's object documents are
sent to v1."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app
from rerankit.server.http import tei_error_type

KEY = {"Authorization": "Bearer k"}


@pytest.fixture(scope="module")
def client():
    settings = ServerSettings(
        pipelines={"bm25": "bm25"},
        default="bm25",
        api_keys=["k"],
        max_document_chars=50,
        max_body_bytes=5000,
    )
    with TestClient(create_app(settings)) as c:
        yield c


def _tei(answer, status: int, error_type: str) -> str:
    assert answer.status_code == status
    body = answer.json()
    assert body["error_type"] == error_type and body["error"] == body["message"]
    return body["error"]


def test_tei_errors_carry_error_and_error_type(client):
    said = _tei(
        client.post("/rerank", json={"query": "q", "texts": []}, headers=KEY), 422, "Validation"
    )
    assert "texts" in said
    long = {"query": "q", "texts": ["short", "x" * 60, "y" * 70], "truncate": False}
    said = _tei(client.post("/rerank", json=long, headers=KEY), 413, "Validation")
    assert said.startswith("texts.1 (and 1 more) is over 50 characters")  # which text
    one = {"query": "q", "texts": ["short", "x" * 60], "truncate": False}
    assert _tei(client.post("/rerank", json=one, headers=KEY), 413, "Validation").startswith(
        "texts.1 is over 50 characters"
    )
    _tei(client.post("/rerank", content=b"{", headers=KEY), 400, "Validation")
    _tei(client.post("/rerank", json={"query": "q", "texts": ["a"]}), 401, "Validation")
    big = {"query": "q", "texts": ["a" * 40] * 200}
    _tei(client.post("/rerank", json=big, headers=KEY), 413, "Validation")
    assert client.post("/rerank", json={"query": "q", "texts": ["a b", "q"]}, headers=KEY).json()


def test_other_endpoints_have_no_tei_fields(client):
    answer = client.post("/v2/rerank", json={"query": "q", "documents": []}, headers=KEY)
    assert answer.status_code == 422 and set(answer.json()) == {"message", "code"}


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "Validation"),
        (413, "Validation"),
        (422, "Validation"),
        (429, "Overloaded"),
        (503, "Unhealthy"),
        (500, "Backend"),
        (504, "Backend"),
    ],
)
def test_statuses_map_to_tei_error_types(status, error_type):
    assert tei_error_type(status) == error_type


def test_object_documents_on_v2_are_sent_to_v1(client):
    """A v2 request with object documents said only `documents.0: Input should be a valid
    string`."""
    body = {"query": "q", "documents": [{"text": "a"}]}
    answer = client.post("/v2/rerank", json=body, headers=KEY)
    assert answer.status_code == 422
    said = answer.json()["message"]
    assert said.startswith("invalid request: documents.0: Input should be a valid string")
    assert "send object documents to /v1/rerank" in said
    assert client.post("/v1/rerank", json=body, headers=KEY).status_code == 200
    number = client.post("/v2/rerank", json={"query": "q", "documents": [3]}, headers=KEY)
    assert number.status_code == 422 and "/v1/rerank" not in number.json()["message"]


def test_nan_infinity_and_huge_numbers_are_not_json_and_say_so(client):
    """Python's parser reads NaN and Infinity: a v1 document's field came back as a bare
    NaN token, which strict JSON parsers (a browser's, Go's) refuse."""
    for token in ("NaN", "Infinity", "-Infinity"):
        body = '{"query": "q", "documents": [{"text": "a", "s": TOKEN}]}'.replace("TOKEN", token)
        answer = client.post("/v1/rerank", content=body, headers=KEY)
        assert answer.status_code == 400, answer.text
        assert f"{token} is not a JSON value" in answer.json()["message"]
    huge = '{"query": "q", "documents": ["a"], "top_n": N}'.replace("N", "9" * 4400)
    answer = client.post("/v2/rerank", content=huge, headers=KEY)
    assert answer.status_code == 400
    assert answer.json()["message"] == "the body is not JSON: a number has too many digits"


def test_a_body_that_is_not_utf8_says_to_send_utf8(client):
    """A Latin-1 body got `the body is not JSON: 'utf-8' codec can't decode byte 0xfc ...`."""
    body = '{"query": "Rücksendung", "documents": ["a"]}'.encode("latin-1")
    answer = client.post("/v2/rerank", content=body, headers=KEY)
    assert answer.status_code == 400
    said = answer.json()["message"]
    assert said == "the body is not UTF-8 (byte 12 is 0xfc): send JSON encoded as UTF-8"


def test_bodies_a_page_of_another_origin_may_send_unasked_are_refused(client):
    # text/plain, forms: a browser sends them across origins without a preflight, so any
    # web page could make a visitor's browser rerank (and write the click log) on a
    # service without keys; JSON, or no Content-Type (the cohere SDK's), is taken
    body = '{"query": "q", "documents": ["a"]}'
    for kind in ("text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"):
        answer = client.post("/v2/rerank", content=body, headers={**KEY, "Content-Type": kind})
        assert answer.status_code == 415, kind
        assert "send application/json" in answer.json()["message"]
    for headers in ({**KEY, "Content-Type": "application/json"}, KEY):
        assert client.post("/v2/rerank", content=body, headers=headers).status_code == 200


def test_an_unknown_model_is_named_but_not_echoed_whole(client):
    ask = {"model": "x" * 3000, "query": "q", "documents": ["a"]}
    answer = client.post("/v2/rerank", json=ask, headers=KEY)
    assert answer.status_code == 404
    assert f"model {'x' * 100!r}... not found" in answer.json()["message"]
    assert len(answer.text) < 1000


def test_an_empty_body_is_not_json_and_json_that_is_not_an_object_is_not_a_request(client):
    """An empty body got a 422 in pydantic's words (`Input should be a valid dictionary or
    instance of Request`) where broken JSON got a 400."""
    for empty in (b"", b"  \n"):
        answer = client.post("/v2/rerank", content=empty, headers=KEY)
        assert answer.status_code == 400 and answer.json() == {
            "message": "the body is empty: send a JSON object",
            "code": "invalid_json",
        }
    for sent, kind in (
        ("[]", "an array"),
        ('"q"', "a string"),
        ("3", "a number"),
        ("null", "null"),
    ):
        answer = client.post("/v1/rerank", content=sent, headers=KEY)
        assert answer.status_code == 422, sent
        said = answer.json()["message"]
        assert said == f"invalid request: the body must be a JSON object, not {kind}"
    answer = client.post("/rerank", content=b"", headers=KEY)  # TEI's, with its fields
    assert answer.status_code == 400 and answer.json()["error_type"] == "Validation"
