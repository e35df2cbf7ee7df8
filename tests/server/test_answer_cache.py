"""The answer cache in the service (``[server] answer_cache = true``), against a live server:
identical requests answered from it byte for byte (but for the per-request id and the
cache mark), every option that changes the answer in its key and the tenant too, degraded
answers and explanations never kept, identical concurrent requests computed once, and a
cache that cannot be reached costing nothing but the cache."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from replicas import metric_in, normal  # noqa: E402

from rerankit import register_reranker  # noqa: E402
from rerankit.rerankers import FusionReranker, ScorerReranker  # noqa: E402
from rerankit.server import ServerSettings  # noqa: E402

DOCS = [
    "Solar panels turn sunlight into power.",
    "Wind farms at sea.",
    "Solar power stations and solar cells, in a document long enough to be cut.",
    "Cooking pasta at home.",
]
QUERY = "solar power"
#: computations by query (the warm-up batch's included), counted at the scorer
COMPUTED: Counter[str] = Counter()


class _Counted:
    """Scores by length, counting each call; ``delay`` seconds per call (awaited)."""

    name = "counted"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def score(self, query, docs, **context):
        COMPUTED[query] += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        return np.array([float(len(d.text)) for d in docs])


class _FailsOn:
    """Fails for queries that ask it to (never for the warm-up batch)."""

    name = "fragile"

    async def score(self, query, docs, **context):
        if "fail" in query:
            raise RuntimeError("the model fell over")
        return np.zeros(len(docs))


register_reranker("test-counted", lambda: ScorerReranker(_Counted()))
register_reranker("test-counted-slow", lambda: ScorerReranker(_Counted(delay=0.5)))
register_reranker("test-counted-fragile", lambda: FusionReranker([_Counted(), _FailsOn()]))

PIPELINES = {
    "counted": "test-counted",
    "slow": "test-counted-slow",
    "fragile": "test-counted-fragile",
}


def _settings(**server):
    cache = server.pop("cache", {})
    return ServerSettings.from_mapping(
        {
            "server": {"default": "counted", "answer_cache": True, **server},
            "pipelines": PIPELINES,
            "cache": cache,
        }
    )


@pytest.fixture
def own_cache_dir(tmp_path, monkeypatch):
    """The answers' SQLite file of this test alone."""
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))


ASKS = [
    ("/v1/rerank", {"query": QUERY, "documents": DOCS, "top_n": 3}),
    ("/v2/rerank", {"query": QUERY, "documents": DOCS, "return_documents": True}),
    ("/rerank", {"query": QUERY, "texts": DOCS, "return_text": True}),
]


def test_an_identical_request_is_answered_from_the_cache_byte_for_byte(live_server, own_cache_dir):
    plain = live_server(ServerSettings(pipelines=PIPELINES, default="counted"))
    server = live_server(_settings())
    try:
        for path, ask in ASKS:
            uncached = httpx.post(plain.url + path, json=ask)
            before = COMPUTED[QUERY]
            first = httpx.post(server.url + path, json=ask)
            again = httpx.post(server.url + path, json=ask)
            assert first.status_code == again.status_code == 200
            assert (first.headers["x-rerankit-cache"], again.headers["x-rerankit-cache"]) == (
                "miss",
                "hit",
            )
            assert COMPUTED[QUERY] == before + 1  # the second one was not computed
            assert "x-rerankit-cache" not in uncached.headers  # off by default
            assert again.headers["x-rerankit-scores"] == first.headers["x-rerankit-scores"]
            assert again.headers["content-type"] == first.headers["content-type"]
            if path == "/rerank":  # TEI's body has no id and no meta: identical bytes
                assert again.content == first.content == uncached.content
                continue
            # everything but the id and the mark is the same bytes, and the same as a
            # service without the cache sends
            assert normal(again.content) == normal(first.content)
            assert first.json()["id"] != again.json()["id"]
            marks = [r.json()["meta"]["rerankit"].pop("cache") for r in (first, again)]
            assert marks == ["miss", "hit"]
            expected = uncached.json()
            expected["id"] = first.json()["id"]
            mine = first.json()
            del mine["meta"]["rerankit"]["cache"]
            assert mine == expected
    finally:
        server.stop()
        plain.stop()


def test_everything_that_changes_the_answer_is_in_the_key(live_server, own_cache_dir):
    server = live_server(_settings(api_keys=["key-a", "key-b"]))
    a = {"Authorization": "Bearer key-a"}
    b = {"Authorization": "Bearer key-b"}
    try:

        def source(path, ask, headers=a):
            r = httpx.post(server.url + path, json=ask, headers=headers)
            assert r.status_code == 200, r.text
            return r.headers["x-rerankit-cache"]

        v1 = {"query": QUERY, "documents": DOCS}
        assert source("/v1/rerank", v1) == "miss"
        assert source("/v1/rerank", v1) == "hit"
        assert source("/v1/rerank", {**v1, "model": "rerank-v3.5"}) == "hit"  # same pipeline
        assert source("/v1/rerank", {**v1, "max_chunks_per_doc": None}) == "hit"  # as absent
        changed = [
            ("/v1/rerank", {**v1, "query": "solar"}),
            ("/v1/rerank", {**v1, "documents": DOCS[::-1]}),
            ("/v1/rerank", {**v1, "top_n": 2}),
            ("/v1/rerank", {**v1, "return_documents": False}),
            ("/v1/rerank", {**v1, "max_chunks_per_doc": 2}),
            ("/v1/rerank", {**v1, "documents": [{"text": d} for d in DOCS]}),
            ("/v1/rerank", {**v1, "documents": [{"t": d} for d in DOCS], "rank_fields": ["t"]}),
            ("/v1/rerank", {**v1, "model": "slow"}),  # another pipeline
            ("/v2/rerank", v1),  # another format
            ("/v2/rerank", {**v1, "max_tokens_per_doc": 3}),
            ("/rerank", {"query": QUERY, "texts": DOCS}),
            ("/rerank", {"query": QUERY, "texts": DOCS, "raw_scores": True}),
            ("/rerank", {"query": QUERY, "texts": DOCS, "truncate": True}),
        ]
        for path, ask in changed:
            assert source(path, ask) == "miss", (path, ask)
            assert source(path, ask) == "hit", (path, ask)
        assert source("/v2/rerank", {**v1, "priority": 3}) == "hit"  # (no effect on it)
        # tenants never read each other's answers
        assert source("/v1/rerank", v1, b) == "miss"
        assert source("/v1/rerank", v1, b) == "hit"
        assert source("/v1/rerank", v1, a) == "hit"
    finally:
        server.stop()


def test_degraded_answers_and_explanations_are_not_kept(live_server, own_cache_dir):
    server = live_server(_settings())
    try:
        ask = {"query": "please fail", "documents": DOCS, "model": "fragile"}
        for _ in range(2):
            r = httpx.post(server.url + "/v2/rerank", json=ask)
            assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
            assert r.headers["x-rerankit-cache"] == "miss"  # computed again: not kept
        assert COMPUTED["please fail"] >= 2
        explain = {"query": "explained", "documents": DOCS}
        for _ in range(2):
            r = httpx.post(server.url + "/v1/explain", json=explain)
            assert r.status_code == 200 and "x-rerankit-cache" not in r.headers
            assert "cache" not in r.json()["meta"]["rerankit"]
        assert COMPUTED["explained"] == 2
    finally:
        server.stop()


def test_identical_concurrent_requests_are_computed_once(live_server, own_cache_dir):
    server = live_server(_settings(max_concurrency=8, max_queue=64))
    ask = {"query": "a burst", "documents": DOCS, "model": "slow"}
    try:
        with ThreadPoolExecutor(20) as pool:
            answers = list(
                pool.map(
                    lambda _: httpx.post(server.url + "/v2/rerank", json=ask, timeout=60), range(20)
                )
            )
        assert [r.status_code for r in answers] == [200] * 20
        sources = Counter(r.headers["x-rerankit-cache"] for r in answers)
        assert COMPUTED["a burst"] == 1 and sources["miss"] == 1
        assert sources["shared"] + sources["hit"] == 19
        bodies = {normal(r.content) for r in answers}
        assert len(bodies) == 1 and len({r.json()["id"] for r in answers}) == 20
        text = httpx.get(server.url + "/metrics").text
        assert metric_in(text, "rerankit_answer_cache_total", model="slow", result="miss") == 1
        shared = metric_in(text, "rerankit_answer_cache_total", model="slow", result="shared")
        assert shared == sources["shared"]
        # the body kept is the computed one ("miss"; a shared or hit answer's mark differs
        # in length)
        computed = next(r for r in answers if r.headers["x-rerankit-cache"] == "miss")
        written = metric_in(text, "rerankit_answer_cache_bytes_total", direction="written")
        assert written == len(computed.content)
    finally:
        server.stop()


def test_a_client_that_leaves_does_not_take_the_answer_from_the_others(live_server, own_cache_dir):
    server = live_server(_settings())
    ask = {"query": "one leaves", "documents": DOCS, "model": "slow"}

    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            first = asyncio.ensure_future(http.post("/v2/rerank", json=ask))
            await asyncio.sleep(0.15)  # it computes
            others = [asyncio.ensure_future(http.post("/v2/rerank", json=ask)) for _ in range(3)]
            await asyncio.sleep(0.1)
            first.cancel()  # its client goes away
            return await asyncio.gather(*others)

    try:
        others = asyncio.run(scenario())
        assert [r.status_code for r in others] == [200, 200, 200]
        assert COMPUTED["one leaves"] == 1  # the computing went on for the others
        again = httpx.post(server.url + "/v2/rerank", json=ask)
        assert again.headers["x-rerankit-cache"] == "hit"  # and was kept
    finally:
        server.stop()


def test_a_cache_that_cannot_be_reached_costs_only_the_cache(live_server, nothing_listening_url):
    server = live_server(_settings(cache={"url": nothing_listening_url, "timeout": 0.2}))
    try:
        # the same series before and after: the counters are the process's, which other
        # tests' caches may have counted in already
        metrics = httpx.get(server.url + "/metrics").text
        before = metric_in(metrics, "rerankit_cache_errors_total", cache="answer")
        ask = {"query": "no cache", "documents": DOCS}
        for _ in range(3):
            r = httpx.post(server.url + "/v2/rerank", json=ask)
            assert r.status_code == 200 and r.headers["x-rerankit-cache"] == "unavailable"
            assert json.loads(r.content)["results"]
        assert COMPUTED["no cache"] == 3
        text = httpx.get(server.url + "/metrics").text
        assert metric_in(text, "rerankit_cache_errors_total", cache="answer") > before
        assert httpx.get(server.url + "/ready").status_code == 200  # not required: ready
        info = httpx.get(server.url + "/info").json()["cache"]
        assert info["answer_cache"] is True and info["required"] is False
    finally:
        server.stop()
    cache = {"url": nothing_listening_url, "timeout": 0.2, "required": True}
    required = live_server(_settings(cache=cache), warm=False)
    try:
        r = httpx.get(required.url + "/ready")
        for _ in range(100):  # (until the pipelines are up: then the cache decides)
            if r.json().get("status") != "loading":
                break
            r = httpx.get(required.url + "/ready")
        assert r.status_code == 503 and "cache" in r.json()["failed"], r.text
        # requests are still answered: the operator takes it out of rotation, not the cache
        ask = {"query": "still served", "documents": DOCS}
        assert httpx.post(required.url + "/v2/rerank", json=ask).status_code == 200
    finally:
        required.stop()


def test_a_stamped_answer_differs_from_the_computed_one_only_in_its_id_and_mark():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rerankit.server.answers import mark, stamp
    from rerankit.server.http import render

    text = st.text(
        alphabet=st.sampled_from(['"', "{", "}", ":", "c", "a", "h", "e", "\\", "é", " "])
    )
    tricky = st.sampled_from(['"cache":"miss"}}}', '{"id":"', '"}}}', "\ud800"])
    documents = st.lists(st.one_of(text, tricky), min_size=1, max_size=4)

    @settings(max_examples=200, deadline=None)
    @given(documents, st.sampled_from(["hit", "shared"]))
    def check(docs, source):
        content = {
            "id": "8f14e45f-ceea-467f-a0e6-3f1b7c1d2a4b",
            "results": [{"index": i, "document": {"text": d}} for i, d in enumerate(docs)],
            "meta": {"api_version": {"version": "2"}, "rerankit": {"scores": "probability"}},
        }
        computed = render(mark(content))
        sent = stamp(computed, source)
        assert stamp(computed, "miss") == computed
        back, again = json.loads(computed), json.loads(sent)
        assert again["id"] != back["id"] and len(again["id"]) == 36
        assert again["meta"]["rerankit"].pop("cache") == source
        assert back["meta"]["rerankit"].pop("cache") == "miss"
        del back["id"], again["id"]
        assert again == back  # the documents, whatever they hold, untouched
        assert len(sent) == len(computed) + len(source) - len("miss")

    check()
    tei = render([{"index": 0, "score": 0.5, "text": '"cache":"miss"}}}'}])
    assert stamp(tei, "hit") == tei  # no id, no meta: the bytes as computed
