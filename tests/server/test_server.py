"""The HTTP service through the official cohere SDK and httpx, against a live server."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
cohere = pytest.importorskip("cohere", reason="needs the cohere SDK (dev extra)")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from rerankit import load, register_reranker, rerank  # noqa: E402
from rerankit.errors import ConfigError  # noqa: E402
from rerankit.normalize import normalize_scores  # noqa: E402
from rerankit.rerankers import FusionReranker, HybridReranker, ScorerReranker  # noqa: E402
from rerankit.scorers import FunctionScorer, JaccardScorer  # noqa: E402
from rerankit.server import ServerSettings, create_app  # noqa: E402
from rerankit.server.batching import EncodeBatcher  # noqa: E402
from rerankit.server.logs import log_formatter  # noqa: E402

DOCS = [
    "Solar panels turn sunlight into power.",
    "Wind farms at sea.",
    "Solar power stations and solar cells.",
    "Cooking pasta at home.",
]
QUERY = "solar power"


def _slow(seconds):
    def make():
        def score(query, doc):
            time.sleep(seconds)
            return float(len(doc.text))

        return ScorerReranker(FunctionScorer(score, name="slow"))

    return make


register_reranker("test-slow", _slow(0.4))
#: a warm-up of 2 x 1.5 s: a window wide enough to ask while it loads on a busy machine
register_reranker("test-slower", _slow(1.5))

#: documents the async slow scorer finished, by query (it yields between documents, so a
#: cancelled rerank stops where it is)
SCORED: dict[str, list[int]] = {}


class _AsyncSlow:
    name = "async_slow"

    async def score(self, query, docs, **context):
        out = []
        for i, _ in enumerate(docs):
            await asyncio.sleep(0.25)
            SCORED.setdefault(query, []).append(i)
            out.append(float(i))
        return np.array(out)


register_reranker("test-async-slow", lambda: ScorerReranker(_AsyncSlow()))


class _Broken(ScorerReranker):
    """A bug that the warm-up batch does not reach: requests get 500."""

    async def arerank(self, query, *args, **kwargs):
        if query == "warm up":
            return await super().arerank(query, *args, **kwargs)
        raise RuntimeError("a bug")


register_reranker("test-broken", lambda: _Broken(FunctionScorer(lambda q, d: 0.0)))
# the hybrid with a cheap second signal in place of the bi-encoder
register_reranker("test-hybrid", lambda: HybridReranker(JaccardScorer(name="embedding")))


@pytest.fixture(scope="module")
def live(live_server):
    settings = ServerSettings(
        pipelines={
            "bm25": "bm25",
            "text": "text",
            "slow": "test-slow",
            "broken": "test-broken",
            "hybrid": "test-hybrid",
        },
        default="bm25",
        api_keys=["sekret"],
        max_documents=10,
        max_document_chars=200,
        truncate=False,
        max_body_bytes=20_000,
        timeout=5.0,
        max_concurrency=1,
        max_queue=1,
    )
    server = live_server(settings)
    yield server
    server.stop()


AUTH = {"Authorization": "Bearer sekret"}


def expected_order(reranker="bm25"):
    return [r.index for r in rerank(QUERY, DOCS, reranker=reranker)]


def test_cohere_sdk_v1_and_v2(live):
    v1 = cohere.Client(api_key="sekret", base_url=live.url)
    out = v1.rerank(query=QUERY, documents=DOCS, model="bm25", top_n=3, return_documents=True)
    assert [r.index for r in out.results] == expected_order()[:3]
    assert out.results[0].document.text == DOCS[out.results[0].index]
    scores = [r.relevance_score for r in out.results]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    v2 = cohere.ClientV2(api_key="sekret", base_url=live.url)
    out2 = v2.rerank(model="text", query=QUERY, documents=DOCS, top_n=2, max_tokens_per_doc=50)
    assert [r.index for r in out2.results] == expected_order("text")[:2]


def test_v1_object_documents_and_rank_fields(live):
    docs = [{"title": "Wind", "body": "turbines at sea"}, {"title": "Solar", "body": "power"}]
    r = httpx.post(
        f"{live.url}/v1/rerank",
        headers=AUTH,
        json={
            "query": QUERY,
            "documents": docs,
            "rank_fields": ["title", "body"],
            "max_chunks_per_doc": 10,
        },
    )
    assert r.status_code == 200
    first = r.json()["results"][0]
    assert first["index"] == 1 and first["document"] == docs[1]
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, json={"query": QUERY, "documents": docs})
    assert r.status_code == 422 and r.json()["message"].startswith(
        "invalid request: documents.0.text: missing text field 'text'"
    )
    assert "text_field=" not in r.json()["message"]  # the fix in the request's own words


@pytest.mark.parametrize("query", ["\u0085\u0085", "\u001d\u001d", " \t\n", "\u3000"])
def test_a_whitespace_query_is_422_on_every_endpoint(live, query):
    bodies = {
        "/v1/rerank": {"query": query, "documents": DOCS},
        "/v2/rerank": {"query": query, "documents": DOCS},
        "/v1/explain": {"query": query, "documents": DOCS},
        "/rerank": {"query": query, "texts": DOCS},
    }
    for path, body in bodies.items():
        r = httpx.post(f"{live.url}{path}", headers=AUTH, json=body)
        assert r.status_code == 422 and "query" in r.json()["message"], path
    patterns = []

    def find(node):  # every request schema's "query" property, wherever it is inlined
        if isinstance(node, dict):
            query = node.get("properties", {}).get("query")
            if isinstance(query, dict):
                patterns.append(query.get("pattern"))
            for value in node.values():
                find(value)
        elif isinstance(node, list):
            for value in node:
                find(value)

    find(httpx.get(f"{live.url}/openapi.json").json())
    assert len(patterns) >= 4 and len(set(patterns)) == 1 and None not in patterns


def _error_count(url: str, status: int, model: str = "") -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(f'rerankit_errors_total{{model="{model}",status="{status}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_metrics_count_one_invalid_request_once(live):
    before = _error_count(live.url, 422)
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, json={"query": QUERY})
    assert r.status_code == 422 and "documents" in r.json()["message"]
    assert _error_count(live.url, 422) == before + 1


def test_object_documents_first_stage_score_reaches_the_hybrid(live):
    retriever = [0.2, 0.9, 0.4, 0.1]
    docs = [{"text": t, "sim": s} for t, s in zip(DOCS, retriever, strict=True)]
    body = {"model": "hybrid", "query": QUERY, "documents": docs, "first_stage_field": "sim"}
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, json=body)
    assert r.status_code == 200
    direct = HybridReranker(JaccardScorer(name="embedding")).rerank(
        QUERY, docs, first_stage_field="sim"
    )
    assert {x.index: x.scores["first_stage"] for x in direct} == dict(enumerate(retriever))
    assert [x["index"] for x in r.json()["results"]] == [x.index for x in direct]
    assert direct.score_scale == "relative"  # so the service min-max normalises them
    assert [x["relevance_score"] for x in r.json()["results"]] == pytest.approx(
        normalize_scores([x.score for x in direct], "min_max").tolist()
    )
    plain = {"model": "hybrid", "query": QUERY, "documents": docs}  # the field is not fused
    order = [
        x["index"]
        for x in httpx.post(f"{live.url}/v1/rerank", headers=AUTH, json=plain).json()["results"]
    ]
    texts_only = HybridReranker(JaccardScorer(name="embedding")).rerank(QUERY, DOCS)
    assert order == [x.index for x in texts_only]


def test_tei_shape(live):
    r = httpx.post(
        f"{live.url}/rerank",
        headers=AUTH,
        json={"query": QUERY, "texts": DOCS, "return_text": True, "raw_scores": True},
    )
    body = r.json()
    assert r.status_code == 200 and isinstance(body, list)
    assert [x["index"] for x in body] == expected_order()
    raw = [x.score for x in rerank(QUERY, DOCS, reranker="bm25")]
    np.testing.assert_allclose([x["score"] for x in body], raw)
    assert body[0]["text"] == DOCS[body[0]["index"]]
    long = httpx.post(
        f"{live.url}/rerank",
        headers=AUTH,
        json={"query": QUERY, "texts": ["x" * 300], "truncate": False},
    )
    assert long.status_code == 413
    cut = httpx.post(
        f"{live.url}/rerank",
        headers=AUTH,
        json={"query": QUERY, "texts": ["solar " * 60, "wind"], "truncate": True},
    )
    assert cut.status_code == 200


def test_auth(live):
    r = httpx.post(f"{live.url}/v2/rerank", json={"query": QUERY, "documents": DOCS})
    assert r.status_code == 401 and "API key" in r.json()["message"]
    r = httpx.post(
        f"{live.url}/v2/rerank",
        headers={"Authorization": "Bearer wrong"},
        json={"query": QUERY, "documents": DOCS},
    )
    assert r.status_code == 401
    assert httpx.get(f"{live.url}/health").status_code == 200
    assert httpx.get(f"{live.url}/metrics").status_code == 200
    assert httpx.get(f"{live.url}/v1/models").status_code == 401
    models = httpx.get(f"{live.url}/v1/models", headers=AUTH).json()["models"]
    assert {m["name"] for m in models if "alias_of" not in m} == {
        "bm25",
        "text",
        "slow",
        "broken",
        "hybrid",
    }
    # Cohere's public model names answer with the default pipeline
    aliases = {m["name"]: m["alias_of"] for m in models if "alias_of" in m}
    assert aliases["rerank-v3.5"] == aliases["rerank-english-v3.0"] == "bm25"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"query": QUERY, "documents": DOCS, "model": "nope"}, 404, "model 'nope' not found"),
        ({"query": " ", "documents": DOCS}, 422, "query: must not be empty"),
        ({"query": QUERY, "documents": []}, 422, "documents: must not be empty"),
        ({"query": QUERY, "documents": ["d"] * 11}, 400, "batches of at most 10 (max_documents"),
        ({"query": QUERY, "documents": ["d" * 201]}, 400, "document 0: 201 characters"),
        ({"query": "q" * 201, "documents": DOCS}, 400, "is 200 (max_document_chars"),
        ({"query": QUERY}, 422, "documents"),
        ({"query": QUERY, "documents": DOCS, "top_n": 0}, 422, "top_n: must be a positive"),
        ({"query": QUERY, "documents": DOCS, "model": "broken"}, 500, "internal error"),
    ],
)
def test_errors_are_json_with_cohere_statuses(live, body, status, message):
    r = httpx.post(f"{live.url}/v2/rerank", headers=AUTH, json=body)
    assert r.status_code == status and message in r.json()["message"]


def test_body_size_limit(live):
    r = httpx.post(
        f"{live.url}/v2/rerank",
        headers=AUTH,
        json={"query": QUERY, "documents": ["word " * 30] * 200},
    )
    assert r.status_code == 413 and "20000 bytes" in r.json()["message"]


def test_full_queue_answers_429_and_every_accepted_request_is_answered(live):
    def call(_):
        return httpx.post(
            f"{live.url}/v2/rerank",
            headers=AUTH,
            timeout=30,
            json={"query": QUERY, "documents": DOCS[:2], "model": "slow"},
        )

    with ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(call, range(6)))
    codes = sorted(r.status_code for r in replies)
    assert codes.count(200) >= 2 and set(codes) <= {200, 429} and 429 in codes
    refused = next(r for r in replies if r.status_code == 429)
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["message"] == (  # which limit, and the pipeline
        "pipeline 'slow': the service is at capacity: 1 request running (max_concurrency 1) "
        "and 1 queued (max_queue 1); retry shortly"
    )
    metrics = httpx.get(f"{live.url}/metrics").text
    assert 'rerankit_errors_total{model="slow",status="429"}' in metrics
    assert "rerankit_request_seconds_bucket" in metrics
    assert 'rerankit_documents_scored_total{model="slow"}' in metrics


def test_timeout_is_504_and_the_work_past_it_is_cancelled(live_server):
    settings = ServerSettings(
        pipelines={"slow": "test-async-slow"}, default="slow", timeout=1.2, max_concurrency=1
    )
    server = live_server(settings)
    try:
        query = "timeout"
        r = httpx.post(f"{server.url}/v2/rerank", json={"query": query, "documents": DOCS * 3})
        assert r.status_code == 504 and r.headers["retry-after"] == "1"
        assert r.json()["message"] == "pipeline 'slow': no answer within the 1.2 s deadline"
        time.sleep(1.5)  # long enough for six more documents, had it kept going
        # of 12 at 0.25 s each: it started (a deadline of 1.2 s leaves room for a slow start
        # on a loaded machine) and stopped at the deadline (at most 4.8 in 1.2 s)
        assert 1 <= len(SCORED.get(query, [])) <= 5
        assert 'rerankit_in_flight{model="slow"} 0.0' in httpx.get(f"{server.url}/metrics").text
    finally:
        server.stop()


def test_a_disconnected_client_s_work_is_dropped_queued_or_running(live_server):
    """Each dropped request says so in one INFO line naming it (it has no access line: no
    answer is sent), with how long it ran."""
    settings = ServerSettings(
        pipelines={"slow": "test-async-slow"}, default="slow", timeout=30, max_concurrency=1
    )
    server = live_server(settings)
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(log_formatter())
    http_log = logging.getLogger("rerankit.server.http")
    http_log.addHandler(handler)
    level = http_log.level
    http_log.setLevel(logging.INFO)

    def post(query, n, timeout):
        try:
            return httpx.post(
                f"{server.url}/v2/rerank",
                json={"query": query, "documents": DOCS[:1] * n},
                headers={"X-Request-Id": f"abort-{query}"},
                timeout=timeout,
            ).status_code
        except httpx.TimeoutException:
            return "gone"

    try:
        with ThreadPoolExecutor(3) as pool:
            running = pool.submit(post, "running", 8, 1.0)  # 8 x 0.25 s; client leaves at 1.0
            time.sleep(0.2)
            # waits for the slot and leaves at 0.5 s, well before the slot frees (a loaded
            # machine may be slow to see either departure)
            queued = pool.submit(post, "queued", 2, 0.3)
            assert running.result() == "gone" and queued.result() == "gone"
        time.sleep(1.0)
        assert "queued" not in SCORED  # never started
        assert 1 <= len(SCORED["running"]) <= 5  # stopped when its client left (not all 8)
        assert _metric(server.url, "rerankit_abandoned_total") == 2
        assert post("after", 1, 10) == 200  # the slot is free again
        lines = log.getvalue().splitlines()
        for query in ("running", "queued"):
            said = [line for line in lines if line.endswith(f"[request abort-{query}]")]
            assert len(said) == 1, lines
            assert " INFO rerankit.server.http: POST /v2/rerank: the client closed the " in said[0]
            ran = float(re.search(r"connection after ([\d.]+) s, before its answer", said[0])[1])
            assert ran >= {"running": 1.0, "queued": 0.3}[query]
    finally:
        http_log.removeHandler(handler)
        http_log.setLevel(level)
        server.stop()


def test_settings_from_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_API_KEYS", "a, b")
    path = tmp_path / "service.toml"
    path.write_text('[server]\nmax_queue = 3\n\n[pipelines.lexical]\nscorer = { type = "bm25" }\n')
    settings = ServerSettings.from_file(path)
    assert settings.default == "lexical" and settings.api_keys == ["a", "b"]
    assert settings.max_queue == 3
    path.write_text("[server]\nmax_qeue = 3\n")
    with pytest.raises(ValueError, match="max_qeue"):
        ServerSettings.from_file(path)


def test_a_pipeline_file_written_beside_the_settings_serves_as_a_pipeline(
    tmp_path, monkeypatch, wait_ready
):
    """``[pipelines.NAME] reranker = "learned.toml"`` (what tune writes): read from the
    settings file's folder, wherever the service starts; the same inside a pipeline file."""

    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "learned.toml").write_text(
        'name = "learned"\n[[stages]]\nscorer = { type = "bm25", k1 = 0.9 }\n'
    )
    settings_file = folder / "service.toml"
    settings_file.write_text(
        '[pipelines.current]\nreranker = "bm25"\n\n'
        '[pipelines.candidate]\nreranker = "learned.toml"\n'
    )
    monkeypatch.chdir(tmp_path)  # not the settings file's folder
    settings = ServerSettings.from_file(settings_file)
    assert settings.pipelines["candidate"]["reranker"] == str(folder / "learned.toml")
    docs = ["solar power on roofs", "wind power", "solar power"]
    with TestClient(create_app(settings)) as client:
        wait_ready(client)  # (a request before the warm-up ends is answered 503)
        answer = client.post(
            "/v2/rerank", json={"model": "candidate", "query": "solar power", "documents": docs}
        )
    assert answer.status_code == 200, answer.text
    direct = load(folder / "learned.toml").rerank("solar power", docs)
    assert [r["index"] for r in answer.json()["results"]] == [d.index for d in direct]
    # a stage of another pipeline file may name it too; a mistake in it is located
    (folder / "outer.toml").write_text('[[stages]]\nreranker = "learned.toml"\n')
    outer = load(folder / "outer.toml")
    assert [d.index for d in outer.rerank("solar power", docs)] == [d.index for d in direct]
    (folder / "broken.toml").write_text('scorer = { type = "bm25", k = 1 }\n')
    (folder / "outer.toml").write_text('[[stages]]\nreranker = "broken.toml"\n')
    with pytest.raises(ConfigError, match=r"stages\[0\]\.reranker: .*broken\.toml: .*'k1'"):
        load(folder / "outer.toml")


def test_encode_batcher_groups_concurrent_calls():
    calls = []

    def encode(texts):
        calls.append(len(texts))
        time.sleep(0.05)
        return np.array([[float(len(t))] for t in texts])

    batcher = EncodeBatcher(encode, max_items=100, max_wait_ms=30)

    def one(i):
        texts = [f"t{i}-{j}" * (j + 1) for j in range(3)]
        out = batcher.encode(texts)
        return out[:, 0].tolist() == [float(len(t)) for t in texts]

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(one, range(8)))
    assert sum(calls) == 24 and len(calls) < 8  # 8 callers, fewer encode calls

    def failing(texts):
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError, match="model crashed"):
        EncodeBatcher(failing).encode(["x"])
    assert asyncio.run(asyncio.sleep(0, result=True))


def test_encode_batches_keep_to_the_token_budget():
    seen = []

    def encode(texts):
        seen.append(list(texts))
        time.sleep(0.02)
        return np.array([[float(len(t))] for t in texts])

    def count_tokens(texts):
        return sum(len(t) for t in texts)

    batcher = EncodeBatcher(
        encode, max_items=100, max_wait_ms=50, max_batch_tokens=30, count_tokens=count_tokens
    )

    def one(i):
        texts = ["x" * (5 + i), "y" * 5]  # 10 + i tokens
        return batcher.encode(texts)[:, 0].tolist() == [float(len(t)) for t in texts]

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(one, range(6)))
    assert sum(len(b) for b in seen) == 12
    assert all(count_tokens(b) <= 30 for b in seen)  # no job over the budget alone
    assert any(len(b) > 2 for b in seen)  # and still several callers per batch
    big = batcher.encode(["z" * 100])  # one caller over the budget goes alone, unsplit
    assert big.shape == (1, 1) and seen[-1] == ["z" * 100]


def test_abandoned_encode_work_is_dropped_before_it_runs():
    from concurrent.futures import CancelledError

    started, release, seen = threading.Event(), threading.Event(), []

    def encode(texts):
        seen.extend(texts)
        started.set()
        release.wait(5)
        return np.ones((len(texts), 1))

    batcher = EncodeBatcher(encode, max_items=1, max_wait_ms=1)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(batcher.encode, ["first"])
        assert started.wait(5)  # the worker is busy with the first batch
        gone = threading.Event()
        second = pool.submit(batcher.encode, ["second"], gone)
        time.sleep(0.05)
        gone.set()  # its request was abandoned while it waited
        release.set()
        assert first.result().shape == (1, 1)
        with pytest.raises(CancelledError):
            second.result()
    assert seen == ["first"] and batcher.dropped == 1


def _metric(url: str, prefix: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(prefix):
            return float(line.split()[-1])
    return 0.0


def test_no_plain_text_500_and_every_answer_counted_and_timed(live):
    timed = 'rerankit_request_seconds_count{endpoint="/v1/rerank",model=""}'
    before_400, before_timed = _error_count(live.url, 400), _metric(live.url, timed)
    deep = "[" * 5000 + "]" * 5000
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, content=deep)
    assert r.status_code == 400 and "nested too deeply" in r.json()["message"]
    assert _error_count(live.url, 400) == before_400 + 1
    assert _metric(live.url, timed) == before_timed + 1  # failed requests are timed too
    body = {"query": QUERY, "documents": ["a\ud800b solar power", "wind"], "return_documents": True}
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, content=json.dumps(body))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json()["results"][0]["document"]["text"] == "a\ud800b solar power"
    assert "meta" in r.json() and "warnings" not in r.json()["meta"]  # scored, not degraded
    before_500 = _error_count(live.url, 500, "broken")
    broken = json.dumps({"model": "broken", **body})
    r = httpx.post(f"{live.url}/v1/rerank", headers=AUTH, content=broken)
    assert r.status_code == 500 and "message" in r.json()
    assert _error_count(live.url, 500, "broken") == before_500 + 1


def test_404_405_and_401_answer_like_the_api(live):
    r = httpx.get(f"{live.url}/nope", headers=AUTH)
    assert r.status_code == 404
    assert r.json() == {"message": "Not Found", "code": "not_found"}
    r = httpx.get(f"{live.url}/v1/rerank", headers=AUTH)
    assert r.status_code == 405
    assert r.json() == {"message": "Method Not Allowed", "code": "method_not_allowed"}
    r = httpx.post(f"{live.url}/v1/rerank", json={"query": "q", "documents": ["a"]})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")


def test_ready_only_after_the_warm_up(live_server):
    settings = ServerSettings(pipelines={"slow": "test-slower"}, default="slow")
    server = live_server(settings, warm=False)
    try:
        first = httpx.get(f"{server.url}/ready")
        assert first.status_code == 503 and first.json()["status"] == "loading"
        assert first.json()["pipelines"]["slow"]["state"] == "loading"
        assert first.json()["pipelines"]["slow"]["attempts"] <= 1
        assert httpx.get(f"{server.url}/health").status_code == 200  # alive meanwhile
        # a request meanwhile is answered at once, not held until the pipeline has loaded
        r = httpx.post(f"{server.url}/v2/rerank", json={"query": QUERY, "documents": DOCS})
        assert r.status_code == 503 and "is loading" in r.json()["message"]
        assert int(r.headers["retry-after"]) >= 1
        deadline = time.time() + 20
        while httpx.get(f"{server.url}/ready").status_code != 200 and time.time() < deadline:
            time.sleep(0.05)
        ready = httpx.get(f"{server.url}/ready").json()
        assert ready["status"] == "ready" and ready["warm_up_seconds"] >= 3.0  # 2 x 1.5 s
    finally:
        server.stop()


def _failing(q, d):
    if q != "warm up":  # a failure the warm-up batch does not reach
        raise RuntimeError("model crashed")
    return 0.0


register_reranker("test-all-fail", lambda: ScorerReranker(FunctionScorer(_failing, name="crash")))
register_reranker(
    "test-half-fail",
    lambda: FusionReranker(
        [FunctionScorer(_failing, name="crash"), FunctionScorer(lambda q, d: len(d.text))]
    ),
)


def test_failures_are_errors_and_partial_ones_are_said_in_meta_and_a_header(live_server):
    pytest.importorskip("openai", reason="the provider case needs the 'openai' extra")
    from rerankit.llm import OpenAIClient, RetryPolicy
    from rerankit.llm.testing import FakeLLMServer, Reply
    from rerankit.scorers import LLMPointwiseScorer

    def responder(request):  # the provider goes down after the warm-up
        return Reply(text='{"score": 7}') if "warm up" in request.prompt else Reply(status=503)

    with FakeLLMServer(responder=responder) as provider:
        fast = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=5.0)
        client = OpenAIClient(base_url=provider.openai_url, model="m")
        register_reranker(
            "test-llm-down",
            lambda: ScorerReranker(LLMPointwiseScorer(client, retry=fast, cache=False)),
        )
        pipelines = {n: f"test-{n}" for n in ("all-fail", "half-fail", "llm-down")}
        server = live_server(ServerSettings(pipelines=pipelines, default="all-fail"))
        try:
            ask = {"query": QUERY, "documents": DOCS}
            r = httpx.post(f"{server.url}/v2/rerank", json={**ask, "model": "all-fail"})
            assert r.status_code == 500 and "every strategy failed" in r.json()["message"]
            assert "model crashed" in r.json()["message"]
            r = httpx.post(f"{server.url}/v2/rerank", json={**ask, "model": "llm-down"})
            assert r.status_code == 502 and "provider failed" in r.json()["message"]
            r = httpx.post(f"{server.url}/v1/rerank", json={**ask, "model": "half-fail"})
            assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
            assert r.json()["meta"]["rerankit"]["degraded"] is True
            ok = httpx.post(f"{server.url}/v1/rerank", json={**ask, "model": "half-fail"})
            longest = max(range(len(DOCS)), key=lambda i: len(DOCS[i]))
            assert ok.json()["results"][0]["index"] == longest  # the working strategy decides
        finally:
            server.stop()


_slow_calls: list[str] = []


def _slow_counted(query, doc):
    _slow_calls.append(doc.text)
    if doc.text.startswith(("first", "second")):  # the warm-up batch is answered at once
        time.sleep(0.5)
    return float(len(doc.text))


register_reranker(
    "test-slow-counted", lambda: ScorerReranker(FunctionScorer(_slow_counted, name="slow"))
)


def test_one_deadline_covers_the_queue_and_queued_requests_past_it_never_run(live_server):
    settings = ServerSettings(
        pipelines={"slow": "test-slow-counted"},
        default="slow",
        timeout=1.0,
        max_concurrency=1,
        max_queue=4,
    )
    server = live_server(settings)
    try:
        assert httpx.get(f"{server.url}/ready").status_code == 200  # warmed up, not failed
        _slow_calls.clear()

        def ask(text: str) -> tuple[int, float]:
            start = time.perf_counter()
            r = httpx.post(
                f"{server.url}/v2/rerank",
                json={"query": "q", "documents": [f"{text} {i}" for i in range(4)]},
                timeout=30,
            )
            return r.status_code, time.perf_counter() - start

        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(ask, "first")
            time.sleep(0.2)
            second = pool.submit(ask, "second")
            (status_a, took_a), (status_b, took_b) = first.result(), second.result()
        # answered at the 1 s deadline, before the 2 s of work end (margin for a busy machine):
        # 504 for the one that ran, 503 (not run: try another replica) for the queued one
        assert status_a == 504 and took_a < 1.9
        assert status_b == 503 and took_b < 1.9  # answered at its own deadline, still queued
        time.sleep(1.5)  # the first request's work ends; the second's never started
        assert any(t.startswith("first") for t in _slow_calls)
        assert not any(t.startswith("second") for t in _slow_calls)
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/v2/rerank", {"query": QUERY, "documents": DOCS, "top_n": "2"}, "top_n"),
        ("/v2/rerank", {"query": QUERY, "documents": DOCS, "top_n": True}, "top_n"),
        ("/v2/rerank", {"query": QUERY, "documents": DOCS, "top_n": 2.5}, "top_n"),
        ("/v1/rerank", {"query": QUERY, "documents": DOCS, "rank_fields": []}, "rank_fields"),
        ("/v1/rerank", {"query": QUERY, "documents": DOCS, "first_stage_field": ""}, "first"),
        ("/v1/rerank", {"query": QUERY, "documents": DOCS, "return_documents": "yes"}, "return"),
        ("/rerank", {"query": QUERY, "texts": DOCS, "truncate": 0}, "truncate"),
        ("/rerank", {"query": QUERY, "texts": DOCS, "truncation_direction": "sideways"}, "trunc"),
    ],
)
def test_types_are_checked_not_coerced(live, path, body, message):
    r = httpx.post(f"{live.url}{path}", headers=AUTH, json=body)
    assert r.status_code == 422 and message in r.json()["message"]


def test_a_json_integer_written_with_a_zero_fraction_is_an_integer(live):
    body = {"query": QUERY, "documents": DOCS, "top_n": 2.0}  # JSON Schema's integer allows it
    r = httpx.post(f"{live.url}/v2/rerank", headers=AUTH, json=body)
    assert r.status_code == 200 and len(r.json()["results"]) == 2


def test_long_queries_are_said(live):
    r = httpx.post(
        f"{live.url}/v2/rerank", headers=AUTH, json={"query": "q" * 201, "documents": DOCS}
    )
    assert r.status_code == 400 and "query: 201 characters" in r.json()["message"]


def wait_until_ready(url: str, seconds: float = 30) -> None:
    """Poll /ready of a service starting in another process."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/ready").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"the service at {url} was not ready within {seconds:g} s")


def test_a_graceful_stop_exits_0_and_finishes_the_request_in_flight(tmp_path):
    import signal
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "service.toml"
    config.write_text('[server]\ndefault = "bm25"\n[pipelines.bm25]\nreranker = "bm25"\n')
    command = [sys.executable, "-m", "rerankit.cli", "serve", "-c", str(config)]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--graceful-timeout", "5", "--shutdown-delay", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url)
        r = httpx.post(f"{url}/v2/rerank", json={"query": QUERY, "documents": DOCS})
        assert r.status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


SLOW_SERVICE = """
import asyncio, sys
import numpy as np
from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker
from rerankit.server import ServerSettings, serve


class Slow:
    name = "slow"

    async def score(self, query, docs, **context):
        await asyncio.sleep(2.0)
        return np.zeros(len(docs))


register_reranker("slow", lambda: ScorerReranker(Slow()))
settings = ServerSettings(
    pipelines={"slow": "slow"}, default="slow", max_concurrency=1, shutdown_delay=0
)  # (no drain period: test_shutdown.py tests it)
serve(settings, port=int(sys.argv[1]), graceful_seconds=10)
"""


def test_at_shutdown_queued_requests_get_503_and_the_running_one_finishes(tmp_path):
    import signal
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "slow_service.py"
    script.write_text(SLOW_SERVICE)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"

    def ask(i):
        try:
            r = httpx.post(
                f"{url}/v2/rerank", json={"query": "q", "documents": [f"d{i}"]}, timeout=30
            )
            return r.status_code, r.json().get("message", "")
        except httpx.HTTPError as exc:
            return "no answer", repr(exc)

    try:
        wait_until_ready(url)
        with ThreadPoolExecutor(3) as pool:
            running = pool.submit(ask, 0)
            time.sleep(0.5)  # (room for it to reach the service first on a loaded machine)
            queued = [pool.submit(ask, i) for i in (1, 2)]
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            assert running.result()[0] == 200  # finished within the grace period
            for q in queued:
                status, message = q.result()
                assert status == 503 and "shutting down" in message
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_timing_headers_histograms_and_info(live):
    r = httpx.post(f"{live.url}/v2/rerank", headers=AUTH, json={"query": QUERY, "documents": DOCS})
    total, queue, inference = (
        float(r.headers[h]) for h in ("x-total-time", "x-queue-time", "x-inference-time")
    )
    assert r.status_code == 200 and 0 <= queue <= total and 0 <= inference <= total
    metrics = httpx.get(f"{live.url}/metrics").text
    for name in ("rerankit_queue_seconds_count", "rerankit_inference_seconds_count"):
        assert name in metrics
    info = httpx.get(f"{live.url}/info", headers=AUTH).json()
    assert info["default"] == "bm25" and info["pipelines"]["bm25"]["loaded"] is True
    assert info["limits"]["max_documents"] == 10 and "version" in info
    assert httpx.get(f"{live.url}/info").status_code == 401  # behind the key like the API


def test_openapi_declares_responses_errors_and_the_key(live):
    schema = httpx.get(f"{live.url}/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path in ("/v1/rerank", "/v2/rerank", "/rerank"):
        post = schema["paths"][path]["post"]
        ok = post["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok  # a real schema, not an empty one
        assert {"400", "401", "422", "429", "500", "503"} <= set(post["responses"])
        assert post["security"] == [{"bearer": []}]
    assert "text/plain" in schema["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert "security" not in schema["paths"]["/health"]["get"]


CALIBRATED = {
    "normalization": "calibrated",
    "scorers": [
        {"type": "coverage", "weight": 0.6, "calibration": {"slope": 4.0, "intercept": -2.0}},
        {"type": "jaccard", "weight": 0.4, "calibration": {"slope": 6.0, "intercept": -1.0}},
    ],
}


@pytest.fixture(scope="module")
def scales(live_server):
    pytest.importorskip("sentence_transformers", reason="the real hybrid needs the 'torch' extra")
    settings = ServerSettings(
        pipelines={"hybrid": "hybrid", "bm25": "bm25", "calibrated": CALIBRATED},
        default="hybrid",
    )
    server = live_server(settings)  # (once every pipeline's first load attempt has ended)
    ready = httpx.get(f"{server.url}/ready")
    assert ready.status_code == 200, ready.text  # loaded, not failed
    yield server
    server.stop()


def test_a_pair_gets_the_same_score_in_every_request(scales):
    client = cohere.ClientV2(api_key="unused", base_url=scales.url)
    pair = "Paris is the capital of France."
    requests = [
        [pair],
        ["Cars are fast.", pair],
        ["The capital of France is Paris.", "Berlin is in Germany.", "Lyon", pair],
    ]
    for model in ("hybrid", "calibrated"):
        seen = []
        for docs in requests:
            out = client.rerank(model=model, query="capital of France", documents=docs)
            seen.append(next(r.relevance_score for r in out.results if docs[r.index] == pair))
        assert seen[0] == pytest.approx(seen[1], abs=1e-9)
        assert seen[0] == pytest.approx(seen[2], abs=1e-9)
    # the hybrid's answer is a probability, and an irrelevant document alone scores low
    alone = client.rerank(model="hybrid", query="capital of France", documents=["Cars are fast."])
    assert alone.results[0].relevance_score < 0.1
    r = httpx.post(
        f"{scales.url}/v2/rerank",
        json={"model": "hybrid", "query": "capital of France", "documents": [pair]},
    )
    assert r.json()["meta"]["rerankit"]["scores"] == "probability"
    assert r.headers["x-rerankit-scores"] == "probability"


def test_relative_pipelines_say_so(scales):
    r = httpx.post(
        f"{scales.url}/v2/rerank",
        json={"model": "bm25", "query": "solar power", "documents": DOCS[:1]},
    )
    assert r.status_code == 200 and r.json()["meta"]["rerankit"]["scores"] == "relative"
    assert r.headers["x-rerankit-scores"] == "relative"
    tei = httpx.post(f"{scales.url}/rerank", json={"query": "solar power", "texts": DOCS[:1]})
    assert tei.headers["x-rerankit-scores"] == "probability"  # the default: the hybrid
    models = {m["name"]: m for m in httpx.get(f"{scales.url}/v1/models").json()["models"]}
    assert models["hybrid"]["scores"] == "probability" and models["hybrid"]["pairwise"]
    # its first-stage weight is 0 by default: a retriever's score leaves it pair-wise
    assert "scores_with_first_stage_field" not in models["hybrid"]
    backends = models["hybrid"]["backends"]  # which backend runs each model-backed signal
    where = load("hybrid").embedding.backend  # auto: ONNX Runtime where it is installed
    assert backends == {"embedding": where, "passage": where}
    assert models["bm25"]["scores"] == "relative" and not models["bm25"]["pairwise"]
    assert models["calibrated"]["scores"] == "probability"
    info = httpx.get(f"{scales.url}/info").json()
    assert info["pipelines"]["bm25"]["scores"] == "relative"
    # the default hybrid reads a named retriever score with weight 0: still probabilities
    docs = [{"text": "Paris is the capital of France.", "s": 2.0}, {"text": "Cars", "s": 1.0}]
    r = httpx.post(
        f"{scales.url}/v1/rerank",
        json={"query": "capital of France", "documents": docs, "first_stage_field": "s"},
    )
    assert r.json()["meta"]["rerankit"]["scores"] == "probability"


def test_the_docs_page_loads_nothing_from_elsewhere(live):
    import re

    page = httpx.get(f"{live.url}/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    sources += re.findall(r"""url: ?["']([^"']+)["']""", page.text)
    assert sources and all(s.startswith("/") for s in sources), sources  # nothing off-site
    for src in sources:
        r = httpx.get(f"{live.url}{src}")  # no key needed, as for the page itself
        assert r.status_code == 200 and len(r.content) > 100, src
    js = httpx.get(f"{live.url}/docs/assets/swagger-ui-bundle.js")
    assert js.headers["content-type"].startswith("application/javascript")
    assert httpx.get(f"{live.url}/docs/assets/secrets.txt").status_code == 404
    assert httpx.get(f"{live.url}/redoc").status_code in (401, 404)  # no CDN page anywhere


def test_embedding_micro_batches_are_counted_in_texts_and_tokens(scales):
    before = _metric(scales.url, "rerankit_encode_batch_texts_count")
    r = httpx.post(
        f"{scales.url}/v2/rerank",
        json={"model": "hybrid", "query": "a new query", "documents": ["fresh text one", "two"]},
    )
    assert r.status_code == 200
    assert _metric(scales.url, "rerankit_encode_batch_texts_count") > before
    assert _metric(scales.url, "rerankit_encode_batch_tokens_sum") > 0  # counted by the tokenizer


def test_work_that_cannot_finish_by_its_deadline_is_not_started(live_server):
    settings = ServerSettings(
        pipelines={"slow": "test-async-slow"}, default="slow", timeout=1.2, max_concurrency=1
    )
    server = live_server(settings)

    def post(query, n):
        r = httpx.post(
            f"{server.url}/v2/rerank",
            json={"query": query, "documents": DOCS[:1] * n},
            timeout=30,
        )
        return r.status_code, r.json().get("message", "")

    try:
        assert post("learn", 2)[0] == 200  # 0.25 s per document, measured
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(post, "first", 3)  # 0.75 s of work
            time.sleep(0.1)
            late = pool.submit(post, "late", 3)  # gets the slot with ~0.35 s left
            assert first.result()[0] == 200
            status, message = late.result()
        # refused on arrival: one request ahead (0.75 s) + its own 0.75 s > 1.2 s deadline
        assert status == 503 and "not queued" in message and "more than the" in message
        assert "late" not in SCORED  # never started, rather than cancelled half-way
        metrics = httpx.get(f"{server.url}/metrics").text
        assert 'rerankit_shed_total{model="slow"} 1.0' in metrics
        # the two answered requests' 2 + 3 documents were scored; the shed one's were not
        assert 'rerankit_documents_scored_total{model="slow"} 5.0' in metrics
        assert 'rerankit_request_documents_count{model="slow"} 3.0' in metrics
    finally:
        server.stop()


def test_cohere_model_names_and_v2_return_documents(live):
    plain = httpx.post(
        f"{live.url}/v2/rerank", headers=AUTH, json={"query": QUERY, "documents": DOCS}
    ).json()
    for name in ("rerank-v4.0-pro", "rerank-v4.0-fast", "rerank-v3.5", "rerank-english-v3.0"):
        r = httpx.post(
            f"{live.url}/v2/rerank",
            headers=AUTH,
            json={"model": name, "query": QUERY, "documents": DOCS, "return_documents": True},
        )
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [x["index"] for x in results] == [x["index"] for x in plain["results"]]
        assert all(x["document"] == {"text": DOCS[x["index"]]} for x in results)
    assert all("document" not in x for x in plain["results"])  # only when asked


def test_aliases_are_checked_and_can_be_turned_off():
    with pytest.raises(ValueError, match="names pipeline 'nope'"):
        ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases={"x": "nope"})
    with pytest.raises(ValueError, match="already a pipeline"):
        ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases={"bm25": "bm25"})
    assert ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", aliases={}).aliases == {}
    own = ServerSettings.from_mapping(
        {"server": {"aliases": {"my-reranker": "bm25"}}, "pipelines": {"bm25": "bm25"}}
    )
    assert own.resolve("my-reranker") == "bm25" and own.resolve(None) == "bm25"
    assert own.resolve("rerank-v3.5") == "bm25"  # added to Cohere's names, not in their place


def test_every_cut_is_reported_on_its_document(live_server):
    server = live_server(
        ServerSettings(pipelines={"bm25": "bm25"}, default="bm25", max_document_chars=50)
    )
    try:
        long = "solar power " * 25  # 300 characters
        docs = ["solar panels", long, "wind at sea"]
        r = httpx.post(f"{server.url}/v1/rerank", json={"query": QUERY, "documents": docs})
        meta = r.json()["meta"]
        assert r.status_code == 200
        assert meta["warnings"] == ["document 1: scored on its first 50 of 300 characters"]
        assert meta["rerankit"]["flags"] == {"1": ["truncated"]}
        assert not meta["rerankit"]["degraded"]
        returned = {x["index"]: x["document"]["text"] for x in r.json()["results"]}
        assert returned[1] == long  # the answer echoes what was sent
        body = {"query": QUERY, "documents": ["solar power plant here", "wind"]}
        r = httpx.post(f"{server.url}/v2/rerank", json={**body, "max_tokens_per_doc": 2})
        meta = r.json()["meta"]
        assert meta["warnings"] == [
            "document 0: scored on its first 2 of 4 words (max_tokens_per_doc; no model "
            "tokenizer here)"
        ]
        assert meta["rerankit"]["flags"] == {"0": ["truncated"]}
        plain = httpx.post(f"{server.url}/v2/rerank", json=body).json()["meta"]
        assert "warnings" not in plain and "flags" not in plain["rerankit"]
    finally:
        server.stop()
