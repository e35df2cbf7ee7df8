"""What a client moved from Cohere, Text Embeddings Inference, Infinity or Jina onto the
service meets (docs/compatible.md's "Coming from" table): every answer's
``x-rerankit-warnings`` header carries all its warnings, a cut document's line too; a TEI
request with no ``truncate`` follows the server's setting (its explicit value wins); the
Jina-shaped answer on ``/v1/rerank`` has ``model`` and ``usage``; Infinity's ``model``
echoes the name sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit.server import ServerSettings  # noqa: E402
from rerankit.server.model_names import COHERE_MODELS, unserved_defaults  # noqa: E402
from rerankit.server.routes import warnings_header  # noqa: E402

CAP = 60  # max_document_chars, small so that a long document is cheap
LONG = "solar power " * 10  # 120 characters
DOCS = ["solar panels on roofs", LONG, "bread"]
QUERY = "solar power"
CUT = f"document 1: scored on its first {CAP} of {len(LONG)} characters"
HUB_ID = "BAAI/bge-reranker-v2-m3"
REPO = Path(__file__).resolve().parents[2]


def _settings(**extra):
    return ServerSettings(
        pipelines={"bm25": "bm25"},
        default="bm25",
        max_document_chars=CAP,
        aliases={HUB_ID: "bm25", "rerank-v3.5": "bm25"},
        **extra,
    )


@pytest.fixture(scope="module")
def live(live_server):
    server = live_server(_settings())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def strict(live_server):
    """A service whose operator set ``truncate = false``."""
    server = live_server(_settings(truncate=False))
    yield server
    server.stop()


def _post(server, path, body):
    return httpx.post(f"{server.url}{path}", json=body)


SHAPES = {
    "tei": ("/rerank", {"query": QUERY, "texts": DOCS, "truncate": True}),
    "infinity": ("/rerank", {"query": QUERY, "documents": DOCS, "model": HUB_ID}),
    "cohere_v1": ("/v1/rerank", {"query": QUERY, "documents": DOCS, "model": "rerank-v3.5"}),
    "cohere_v2": ("/v2/rerank", {"query": QUERY, "documents": DOCS, "model": "rerank-v3.5"}),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shapes_header_carries_the_cut_documents_line(live, shape):
    path, body = SHAPES[shape]
    r = _post(live, path, body)
    assert r.status_code == 200, r.text
    said = r.headers["x-rerankit-warnings"].split("; ")
    assert CUT in said
    assert r.headers["x-rerankit-truncated"] == "1"
    if shape.startswith("cohere"):  # the header says what meta.warnings says
        assert said == r.json()["meta"]["warnings"]


def test_a_long_list_of_warnings_is_counted_past_the_headers_limit():
    lines = [f"document {i}: scored on its first 20000 of 44000 characters" for i in range(1000)]
    said = warnings_header(lines)
    assert 1000 < len(said) <= 2100
    kept = said.split("; ")
    assert kept[:-1] == lines[: len(kept) - 1]
    assert kept[-1] == f"and {1000 - (len(kept) - 1)} more warnings"
    assert warnings_header(["Größe"]) == "Gr\\xf6\\xdfe"  # headers are Latin-1: escaped


def test_splitting_the_header_on_its_separator_gives_each_warning_whole():
    warned = ["document 2: cut twice; once by characters, once by tokens", "query: English"]
    said = warnings_header(warned)
    assert said.split("; ") == [
        "document 2: cut twice, once by characters, once by tokens",
        "query: English",
    ]


def test_a_tei_request_without_truncate_follows_the_servers_setting(live, strict):
    body = {"query": QUERY, "texts": DOCS}
    cut = _post(live, "/rerank", body)  # truncate = true (the default): cut, and said
    assert cut.status_code == 200, cut.text
    assert CUT in cut.headers["x-rerankit-warnings"].split("; ")
    # as the other shapes cut it: the same scores as Infinity's raw ones for those texts
    infinity = _post(live, "/rerank", {"query": QUERY, "documents": DOCS, "raw_scores": True})
    raw = _post(live, "/rerank", {**body, "raw_scores": True}).json()
    assert raw == [
        {"index": x["index"], "score": x["relevance_score"]} for x in infinity.json()["results"]
    ]
    refused = _post(strict, "/rerank", body)  # truncate = false: TEI's 413, as before
    assert refused.status_code == 413, refused.text
    assert refused.json()["message"].startswith(f"texts.1 is over {CAP} characters")


@pytest.mark.parametrize("sent", [True, False])
def test_a_tei_requests_own_truncate_wins_over_the_servers(live, strict, sent):
    body = {"query": QUERY, "texts": DOCS, "truncate": sent}
    for server in (live, strict):
        r = _post(server, "/rerank", body)
        assert r.status_code == (200 if sent else 413), r.text


def test_the_v1_answer_has_jinas_model_and_usage(live):
    jina = {"model": HUB_ID, "query": QUERY, "documents": DOCS[::2], "top_n": 1}
    got = _post(live, "/v1/rerank", jina).json()
    assert got["model"] == HUB_ID  # the name sent, as Jina echoes it
    tokens = got["meta"]["billed_units"]["input_tokens"]
    assert tokens > 0 and got["usage"] == {"total_tokens": tokens}
    named_none = _post(live, "/v1/rerank", {"query": QUERY, "documents": DOCS}).json()
    assert named_none["model"] == "bm25"  # the default pipeline's
    v2 = _post(live, "/v2/rerank", {"query": QUERY, "documents": DOCS}).json()
    assert "model" not in v2 and "usage" not in v2  # Cohere's v2 answer has neither


SDK_V1 = """
import json, sys, cohere
client = cohere.Client(base_url=sys.argv[1], api_key="k")
r = client.rerank(model=sys.argv[2], query="solar power", documents=["bread", "solar cells"])
print(json.dumps({"order": [x.index for x in r.results], "text": r.results[0].document.text,
                  "model": r.model, "usage": r.usage}))
"""


def test_cohere_sdks_v1_client_parses_the_answer_with_model_and_usage(live):
    """cohere.Client (v1) reads the answer, Jina's ``model`` and ``usage`` kept as extra
    fields: in the clients' venv's cohere 5.x and the dev venv's 7.x."""
    pytest.importorskip("cohere", reason="needs the cohere SDK (dev extra)")
    pythons = [sys.executable]
    clients = os.environ.get("RERANKIT_CLIENTS_PYTHON")
    if clients and Path(clients).exists():
        pythons.append(clients)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for python in pythons:
        run = subprocess.run(
            [python, "-c", SDK_V1, live.url, HUB_ID],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        got = json.loads(run.stdout)
        assert got["order"] == [1, 0] and got["text"] == "solar cells"
        assert got["model"] == HUB_ID and got["usage"]["total_tokens"] > 0


def test_infinitys_answer_echoes_the_model_name_sent(live):
    for sent, echoed in ((HUB_ID, HUB_ID), ("bm25", "bm25"), (None, "bm25")):
        body = {"query": QUERY, "documents": DOCS, **({"model": sent} if sent else {})}
        r = _post(live, "/rerank", body)
        assert r.status_code == 200, r.text
        assert r.json()["model"] == echoed
    unspecified = {"query": QUERY, "documents": DOCS, "model": "default/not-specified"}
    assert _post(live, "/rerank", unspecified).json()["model"] == "bm25"


def test_the_curl_example_sends_the_key_from_its_variable(live_server):
    """examples/service/rerank.sh on a service with keys: RERANKIT_API_KEY's key gets the
    ranking; without it, the 401 (no key sent)."""
    script = Path(__file__).resolve().parents[2] / "examples" / "service" / "rerank.sh"
    keyed = ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", api_keys=["k1"])
    server = live_server(keyed)
    env = {k: v for k, v in os.environ.items() if k != "RERANKIT_API_KEY"}

    def run(**extra):
        done = subprocess.run(
            ["sh", str(script), server.url],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, **extra},
            check=True,
        )
        return json.loads(done.stdout)

    try:
        with_key, without = run(RERANKIT_API_KEY="k1"), run()
    finally:
        server.stop()
    assert with_key["results"][0]["index"] == 1
    assert "invalid or missing API key" in without["message"]


# the docs/compatible.md table's error column, shape by shape: the path, the documents' field
ERRORS = {
    "tei": ("/rerank", "texts"),
    "infinity": ("/rerank", "documents"),
    "cohere_v2": ("/v2/rerank", "documents"),
    "jina": ("/v1/rerank", "documents"),
}


def test_the_common_errors_have_the_status_the_table_gives(live_server):
    settings = ServerSettings(
        pipelines={"bm25": "bm25"}, default="bm25", api_keys=["k1"], max_documents=3
    )
    server = live_server(settings)
    key = {"Authorization": "Bearer k1"}
    try:
        for shape, (path, field) in ERRORS.items():
            url = f"{server.url}{path}"
            said = [
                httpx.post(
                    url, json={"query": QUERY, field: docs, "model": model}, headers=headers
                ).status_code
                for docs, model, headers in (
                    ([], "bm25", key),  # an empty list
                    (["a"] * 4, "bm25", key),  # over max_documents
                    (["a"], "bm25", {"Authorization": "Bearer wrong"}),
                    (["solar", "wind"], "nope", key),  # an unknown model: TEI ignores it
                )
            ]
            assert said == [422, 400, 401, 200 if shape == "tei" else 404], shape
    finally:
        server.stop()


@pytest.mark.parametrize("page", ["compatible.md", "service.md"])
def test_the_pages_alias_snippets_for_other_clients_keep_cohere_names(page):
    """The snippets that map Jina's or Infinity's names serve them beside Cohere's seven
    ([server.aliases] adds to those), so that copying one breaks no Cohere client; they
    no longer list Cohere's names themselves."""
    import re

    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    snippets = [b for b in blocks if "jina-reranker" in b]
    assert snippets
    for snippet in snippets:
        aliases = tomllib.loads(snippet)["server"]["aliases"]
        assert set(aliases).isdisjoint(COHERE_MODELS), snippet
        served = ServerSettings(pipelines={"hybrid": "bm25"}, default="hybrid", aliases=aliases)
        assert unserved_defaults(served.aliases, ["hybrid"]) == [], snippet
        assert set(aliases) | set(COHERE_MODELS) == set(served.aliases)


def test_a_voyage_request_without_truncation_follows_the_servers_truncate(live, strict):
    """Voyage's truncation defaults to true for the model's input, but a document over
    max_document_chars is refused where the operator said truncate = false, unless the
    request itself sends truncation: true."""
    body = {"query": QUERY, "documents": DOCS, "model": "bm25", "top_k": 3}
    cut = _post(live, "/v1/rerank", body)
    assert cut.status_code == 200, cut.text
    assert CUT in cut.headers["x-rerankit-warnings"].split("; ")
    refused = _post(strict, "/v1/rerank", body)
    assert refused.status_code == 400, refused.text
    assert _post(strict, "/v1/rerank", {**body, "truncation": True}).status_code == 200
