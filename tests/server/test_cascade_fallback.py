"""A served cascade (BM25 keep 2, then an LLM judge at a local OpenAI-compatible stand-in)
whose provider stalls answers, at the service's deadline, with the order of the stage that
had ended (a degraded 200, as when the provider refuses), not a 504; and degraded answers
are counted in /metrics and shown in /info while the pipeline stays ready."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient
from judges import after_bm25, judge_at

from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.server import ServerSettings, create_app
from rerankit.server.state import FAILING_AFTER

#: what the provider does with a request that is not the warm-up's: "ok", "stall", "500"
MODE = {"now": "ok"}
DOCS = ["solar panels on roofs", "wind farms at sea", "solar power for homes", "hydro dams"]
ASK = {"model": "cascade", "query": "solar power", "documents": DOCS, "top_n": 2}


def _reply(request) -> Reply:
    mode = "ok" if "warm-up document" in request.prompt else MODE["now"]
    if mode == "stall":
        return Reply(text='{"score": 9}', delay=20.0)
    if mode == "500":
        return Reply(status=500, text="provider down")
    return Reply(text='{"score": 9}')


def _judge_and_cascade(provider: FakeLLMServer, timeout: float) -> tuple[dict, dict]:
    """The LLM judge at ``provider`` (one attempt of ``timeout`` s, no cache), and the
    cascade of BM25 keeping 2, then that judge."""
    judge = judge_at(provider, timeout)
    return judge, after_bm25(judge)


@pytest.fixture(scope="module")
def client():
    with FakeLLMServer(responder=_reply) as provider:
        _, cascade = _judge_and_cascade(provider, timeout=15)
        settings = ServerSettings(
            pipelines={"cascade": cascade}, default="cascade", timeout=1.0, stuck_grace=0.5
        )
        with TestClient(create_app(settings)) as c:
            deadline = time.time() + 60
            while c.get("/ready").json()["status"] == "loading" and time.time() < deadline:
                time.sleep(0.02)
            yield c


def _metric(client, name: str) -> float:
    line = next(
        line
        for line in client.get("/metrics").text.splitlines()
        if line.startswith(f'{name}{{model="cascade"}}')
    )
    return float(line.split()[-1])


def test_a_stalled_judge_answers_the_first_stage_s_order_at_the_deadline(client):
    MODE["now"] = "ok"
    healthy = client.post("/v2/rerank", json=ASK)
    assert healthy.status_code == 200, healthy.text
    assert "x-rerankit-degraded" not in healthy.headers
    assert healthy.headers["x-rerankit-scores"] == "unit"  # the judge's grade / 10
    assert client.get("/info").json()["pipelines"]["cascade"].get("degraded_since") is None
    MODE["now"] = "stall"
    try:
        for _ in range(FAILING_AFTER):  # as many as turn failing: a degraded answer is an answer
            start = time.monotonic()
            r = client.post("/v2/rerank", json=ASK)
            assert r.status_code == 200, r.text
            assert time.monotonic() - start < 5
            assert r.headers["x-rerankit-degraded"] == "true"
            # BM25's order of the two it kept, on its own scale
            assert [x["index"] for x in r.json()["results"]] == [2, 0]
            assert r.headers["x-rerankit-scores"] != "unit"
            meta = r.json()["meta"]
            assert meta["rerankit"]["degraded"] is True
            assert "did not finish within the 1 s deadline" in meta["warnings"][0]
            # as scorers.md says: the unfinished stage's documents carry no llm_failed flag
            assert not meta["rerankit"].get("flags")
        info = client.get("/info").json()["pipelines"]["cascade"]
        assert info["state"] == "ready"
        assert info["degraded_answers"] == FAILING_AFTER
        assert "deadline" in info["degraded_cause"]
        assert info["degraded_since"].endswith("Z")
        assert client.get("/ready").status_code == 200
        assert _metric(client, "rerankit_pipeline_healthy") == 1.0
    finally:
        MODE["now"] = "ok"
    again = client.post("/v2/rerank", json=ASK)
    assert again.status_code == 200 and "x-rerankit-degraded" not in again.headers
    assert "degraded_since" not in client.get("/info").json()["pipelines"]["cascade"]


def test_explain_names_the_stage_that_decided_each_place_after_a_fallback_too(client):
    MODE["now"] = "ok"
    judged = client.post("/v1/explain", json={**ASK, "top_n": None}).json()["results"]
    assert [r["ranked_by"] for r in judged] == ["llm_pointwise"] * 2 + ["bm25"] * 2
    MODE["now"] = "500"
    try:
        fell_back = client.post("/v1/explain", json={**ASK, "top_n": None}).json()
    finally:
        MODE["now"] = "ok"
    assert fell_back["degraded"] is True
    assert [r["ranked_by"] for r in fell_back["results"]] == ["bm25"] * 4


def test_degraded_answers_are_counted_by_pipeline(client):
    before = _metric(client, "rerankit_degraded_answers_total")
    MODE["now"] = "500"
    try:
        r = client.post("/v2/rerank", json=ASK)
    finally:
        MODE["now"] = "ok"
    assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
    assert _metric(client, "rerankit_degraded_answers_total") == before + 1
    client.post("/v2/rerank", json=ASK)  # not degraded: not counted
    assert _metric(client, "rerankit_degraded_answers_total") == before + 1


def test_a_cascade_whose_provider_is_down_at_start_is_ready_and_says_it_falls_back(caplog):
    """The warm-up answer of a cascade whose judge's provider is down falls back to the
    first stage's order, as its requests would be answered: the pipeline is ready (a
    provider down at a deploy does not take the replica out of the balancer), /info shows
    the degraded run with its cause, and requests get the degraded 200. The judge served
    alone has no earlier order to fall back on: it fails to load, as before."""

    def down(request) -> Reply:
        return Reply(status=500, text="provider down")

    with FakeLLMServer(responder=down) as provider:
        judge, cascade = _judge_and_cascade(provider, timeout=5)
        settings = ServerSettings(
            pipelines={"cascade": cascade, "judge": {"scorer": judge}},
            default="cascade",
            timeout=10,
            ready_when="any",
        )
        with TestClient(create_app(settings)) as c:
            deadline = time.time() + 60
            for name in ("cascade", "judge"):  # each one's first attempt ended
                while time.time() < deadline and (
                    c.get("/ready", params={"model": name}).json()["status"] == "loading"
                ):
                    time.sleep(0.02)
            ready = c.get("/ready", params={"model": "cascade"})
            assert ready.status_code == 200, ready.text
            alone = c.get("/ready", params={"model": "judge"})
            assert alone.status_code == 503 and alone.json()["status"] == "failed", alone.text
            entry = c.get("/info").json()["pipelines"]["cascade"]
            assert entry["state"] == "ready" and entry["degraded_since"]
            assert "fell back" in entry["degraded_cause"]
            r = c.post("/v2/rerank", json=ASK)
            assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
    said = [m.getMessage() for m in caplog.records if m.levelname == "WARNING"]
    assert any("ready, but its warm-up answer fell back to an earlier stage" in m for m in said)


def test_a_cascade_is_described_on_the_scale_its_answers_say(client):
    """/v1/models and /info give the last stage's scale (the judge's grade: unit, raw
    grade10), what an answer within its documents says; a fallback answers the first
    stage's (bm25: relative), which only the answer says."""
    MODE["now"] = "ok"
    entry = client.get("/info").json()["pipelines"]["cascade"]
    model = next(m for m in client.get("/v1/models").json()["models"] if m["name"] == "cascade")
    answer = client.post("/v2/rerank", json=ASK)
    assert answer.headers["x-rerankit-scores"] == "unit"
    assert entry["scores"] == model["scores"] == "unit"
    assert entry["raw_scores"] == "grade10"


def test_degraded_cause_names_the_failure_not_a_note_before_it(client):
    """A query none of whose terms occurs in the documents: BM25 warns first (a note);
    /info's degraded_cause names the judge's failure that degraded the answer."""
    MODE["now"] = "500"
    try:
        r = client.post("/v2/rerank", json={**ASK, "query": "fail casc"})
    finally:
        MODE["now"] = "ok"
    assert r.status_code == 200 and r.headers["x-rerankit-degraded"] == "true"
    assert "no query term occurs" in r.json()["meta"]["warnings"][0]
    cause = client.get("/info").json()["pipelines"]["cascade"]["degraded_cause"]
    assert cause.startswith("stage 'llm_pointwise': document 0"), cause
    assert "no score" in cause
