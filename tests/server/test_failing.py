"""A pipeline that loaded fine and whose requests then keep failing (a provider down or
stalled mid-day) says so: ``failing`` in /info and /ready's body, rerankit_pipeline_healthy
at 0, one WARNING when it turns and one INFO when a request is answered again; a request
that ran out of time is a 504 naming the pipeline; and every message a failing pipeline
shows is one line."""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import numpy as np
import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit import register_reranker, registry
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import ScoreBatch
from rerankit.server import ServerSettings, create_app
from rerankit.server.readiness import HIDDEN
from rerankit.server.state import FAILING_AFTER, MESSAGE_CHARS, one_line

#: what the "live" pipeline's provider does now: answer, refuse, or stall; and how many
#: requests reached it (the warm-up's not counted)
PROVIDER = {"mode": "ok", "calls": 0}


class _Provider:
    """An LLM-like scorer: every document flagged ``llm_failed`` with a warning of its own
    while the provider refuses (as an LLM judge reports it), asleep while it stalls."""

    name = "judge"

    async def score(self, query, docs, **context):
        mode = PROVIDER["mode"] if query != "warm up" else "ok"
        PROVIDER["calls"] += query != "warm up"
        if mode == "stall":
            await asyncio.sleep(30)
        if mode == "refuse":
            return ScoreBatch(
                values=np.zeros(len(docs)),
                flags={i: ["llm_failed"] for i in range(len(docs))},
                warnings=[
                    f"document {i}: no score (openai: APIConnectionError: Connection error.)"
                    for i in range(len(docs))
                ]
                + ["every LLM call failed; input order kept"],
            )
        return np.arange(len(docs), dtype=float)


class _Broken:
    """A scorer whose every call fails with a long, many-line error."""

    name = "broken"

    async def score(self, query, docs, **context):
        raise RuntimeError("connection refused\n" + "  a traceback line\n" * 40)


register_reranker("test-provider", lambda: ScorerReranker(_Provider()))
register_reranker("test-broken-provider", lambda: ScorerReranker(_Broken()))

ASK = {"model": "live", "query": "solar power", "documents": ["solar panels", "wind"]}


def _gauge(client, name: str, model: str) -> str:
    line = next(
        line
        for line in client.get("/metrics").text.splitlines()
        if line.startswith(f'{name}{{model="{model}"}}')
    )
    return line.split()[-1]


def test_a_pipeline_whose_requests_keep_failing_says_so_until_one_is_answered(caplog):
    settings = ServerSettings(
        pipelines={"live": "test-provider", "broken": "test-broken-provider", "bm25": "bm25"},
        default="bm25",
        timeout=0.5,
        ready_when="any",
        failing_probe_seconds=0,  # every request runs (the probing is tested below)
    )
    PROVIDER["mode"] = "ok"
    caplog.set_level(logging.DEBUG, logger="rerankit.server")
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json().get("loading") and time.time() < deadline:
            time.sleep(0.02)
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "1.0"

        # a pipeline that failed to load says why in one line, not the paragraph
        broken = client.get("/ready").json()["failed"]["broken"]
        assert "connection refused" in broken and "\n" not in broken
        assert len(broken) <= MESSAGE_CHARS

        # failures short of FAILING_AFTER in a row, then an answer: nothing turns
        PROVIDER["mode"] = "refuse"
        for _ in range(FAILING_AFTER - 1):
            assert client.post("/v2/rerank", json=ASK).status_code == 502
        PROVIDER["mode"] = "ok"
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        PROVIDER["mode"] = "refuse"
        for _ in range(FAILING_AFTER - 1):
            assert client.post("/v2/rerank", json=ASK).status_code == 502
        assert client.get("/info").json()["pipelines"]["live"]["state"] == "ready"

        # the next failure in a row turns it: the 502 is one line, the kind and first cause
        r = client.post("/v2/rerank", json=ASK)
        assert r.status_code == 502
        assert r.json()["message"] == (
            "pipeline 'live': the LLM provider failed for every document: document 0: no "
            "score (openai: APIConnectionError: Connection error.) (and 2 more warnings)"
        )
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["state"] == "failing" and entry["loaded"] is True
        assert entry["error"].startswith("the LLM provider failed for every document: ")
        assert entry["failed_requests"] == FAILING_AFTER
        assert entry["failing_since"].endswith("Z")
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "0.0"
        assert _gauge(client, "rerankit_pipeline_ready", "live") == "1.0"  # it still serves
        assert _gauge(client, "rerankit_pipeline_failures_total", "live") == "1.0"
        ready = client.get("/ready")  # the replica stays in the balancer, and says why
        assert ready.status_code == 200 and ready.json()["failing"] == {"live": entry["error"]}
        one = client.get("/ready", params={"model": "live"})
        assert one.status_code == 200 and one.json()["status"] == "failing"
        assert one.json()["failed_requests"] == FAILING_AFTER

        # a stalled provider: the request's deadline answer names the pipeline, is a 504
        # (it ran: a balancer does not send it to another replica to wait as long) and
        # counts as one more failure
        PROVIDER["mode"] = "stall"
        r = client.post("/v2/rerank", json=ASK)
        assert r.status_code == 504 and r.headers["retry-after"] == "1"
        assert r.json()["message"] == "pipeline 'live': no answer within the 0.5 s deadline"
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["error"] == "no answer within the 0.5 s deadline"
        assert entry["failed_requests"] == FAILING_AFTER + 1

        # the first answer ends it
        PROVIDER["mode"] = "ok"
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        assert client.get("/info").json()["pipelines"]["live"]["state"] == "ready"
        assert "failing" not in client.get("/ready").json()
        assert _gauge(client, "rerankit_pipeline_healthy", "live") == "1.0"

    said = [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "rerankit.server.pipeline" and "'live'" in r.getMessage()
    ]
    warnings = [m for level, m in said if level == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"pipeline 'live' is failing: its last {FAILING_AFTER} requests got no answer"
    )
    assert "it still runs every request" in warnings[0]
    infos = [m for level, m in said if level == "INFO" and "answers again" in m]
    assert len(infos) == 1 and f"after {FAILING_AFTER + 1} failed requests" in infos[0]
    # every warning of the failures is in the log, at debug level
    assert any(
        level == "DEBUG" and "every LLM call failed; input order kept" in m for level, m in said
    )
    PROVIDER["mode"] = "ok"


def _ready_client(settings):
    client = TestClient(create_app(settings))
    client.__enter__()
    deadline = time.time() + 30
    while client.get("/ready").json().get("loading") and time.time() < deadline:
        time.sleep(0.02)
    return client


def test_a_failing_pipeline_refuses_at_once_but_lets_one_request_through_to_try_it(caplog):
    probe = 1.0
    settings = ServerSettings(
        pipelines={"live": "test-provider", "bm25": "bm25"},
        default="bm25",
        timeout=0.5,
        failing_probe_seconds=probe,
    )
    PROVIDER["mode"] = "refuse"
    caplog.set_level(logging.WARNING, logger="rerankit.server")
    client = _ready_client(settings)
    try:
        for _ in range(FAILING_AFTER):
            assert client.post("/v2/rerank", json=ASK).status_code == 502
        calls = PROVIDER["calls"]

        # failing: the next request is answered 503 at once, without reaching the provider,
        # saying why and when the next one is let through; it does not count as a failure
        start = time.monotonic()
        r = client.post("/v2/rerank", json=ASK)
        assert r.status_code == 503 and time.monotonic() - start < probe
        assert r.headers["retry-after"] == "1"
        assert r.json()["message"].startswith(
            "pipeline 'live' is failing: the LLM provider failed for every document: "
        )
        assert r.json()["message"].endswith("the next request is let through to try it in 1 s")
        assert PROVIDER["calls"] == calls
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["state"] == "failing" and entry["failed_requests"] == FAILING_AFTER
        assert 0 < entry["next_try_in_seconds"] <= probe
        # another pipeline is not touched
        assert client.post("/v2/rerank", json={**ASK, "model": "bm25"}).status_code == 200

        # once the interval has passed, one request runs (still refused by the provider:
        # 502), and the one after it is refused again
        time.sleep(probe + 0.05)
        assert client.post("/v2/rerank", json=ASK).status_code == 502
        assert PROVIDER["calls"] == calls + 1
        assert client.post("/v2/rerank", json=ASK).status_code == 503
        assert client.get("/info").json()["pipelines"]["live"]["failed_requests"] == (
            FAILING_AFTER + 1
        )

        # the provider is back: the next try is answered and ends the failing state
        PROVIDER["mode"] = "ok"
        time.sleep(probe + 0.05)
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        assert client.post("/v2/rerank", json=ASK).status_code == 200
        entry = client.get("/info").json()["pipelines"]["live"]
        assert entry["state"] == "ready" and "next_try_in_seconds" not in entry
    finally:
        client.__exit__(None, None, None)
        PROVIDER["mode"] = "ok"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(
        "its requests get 503 at once but for one every 1 s let through to try it" in m
        for m in warnings
    )


@pytest.mark.parametrize("value", [-1, "5", True])
def test_failing_probe_seconds_must_be_a_number_of_seconds(value):
    with pytest.raises(ValueError, match="failing_probe_seconds must be >= 0"):
        ServerSettings(failing_probe_seconds=value)


def test_a_torch_model_on_a_torch_free_service_says_the_whole_way_out(tmp_path, monkeypatch):
    """A torch-free service given a cross-encoder folder torch would load: /ready and the
    503 say the whole instruction, export and load FOLDER (they ended `... and load
    FOLDER, which runs...`, the text cut at MESSAGE_CHARS mid-sentence)."""
    folder = tmp_path / "models" / "our-cross-encoder-fine-tuned-on-last-quarters-clicks"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # no export of it
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as without torch
    model = {"scorer": {"type": "cross_encoder", "model": str(folder)}}
    settings = ServerSettings(pipelines={"ce": model, "bm25": "bm25"}, default="bm25")
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json()["pipelines"]["ce"]["state"] == "loading":
            assert time.time() < deadline
            time.sleep(0.02)
        why = client.get("/ready").json()["failed"]["ce"]
        answer = client.post("/v2/rerank", json={**ASK, "model": "ce"})
    way_out = f"load FOLDER on ONNX Runtime after `rerankit export {folder} --out FOLDER`"
    assert "pip install 'rerankit[torch]'" in why and why.endswith(f"{way_out} where torch is")
    assert answer.status_code == 503 and way_out in answer.text
    assert len(why) <= MESSAGE_CHARS


def test_a_long_message_is_cut_after_a_whole_clause_not_mid_word():
    long = "first clause is said; " + "the second one explains at length " * 20
    cut = one_line(long)  # a clause boundary would keep less than half: cut at the limit
    assert len(cut) <= MESSAGE_CHARS and cut.startswith(long[:200]) and cut.endswith(" ...")
    clauses = "; ".join(f"clause number {i} says one thing" for i in range(30))
    cut = one_line(clauses)
    assert len(cut) <= MESSAGE_CHARS and cut.endswith("says one thing; ...")


def test_a_torch_free_service_without_an_export_says_the_fix_first_and_whole(tmp_path, monkeypatch):
    """A torch-free service with no export of its embedding model: /ready and the 503 name
    the fix (`rerankit serve --model DIR`) whole, however long the model's name (the text
    was cut at MESSAGE_CHARS in `pip install 'rerankit[tor ...`, and before that in
    `rerankit serve --mo...`), and the tail does not tell a torch-free image to install
    the package (it said "install what it needs and restart the service")."""
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # no export in it
    monkeypatch.setitem(sys.modules, "torch", None)  # as without torch
    model = "our-organisation/all-MiniLM-L6-v2-fine-tuned-on-last-quarters-clicks"
    settings = ServerSettings(
        pipelines={"hybrid": "hybrid", "bm25": "bm25"}, default="bm25", backend="onnx", model=model
    )
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json()["pipelines"]["hybrid"]["state"] == "loading":
            assert time.time() < deadline
            time.sleep(0.02)
        why = client.get("/ready").json()["failed"]["hybrid"]
        answer = client.post("/v2/rerank", json={**ASK, "model": "hybrid"})
    fix = f"run `rerankit export {model} --out DIR` where torch is installed, then name DIR"
    assert fix in why and "`rerankit serve --model DIR` for the built-in hybrid" in why
    assert len(why) <= MESSAGE_CHARS
    assert answer.status_code == 503 and fix in answer.json()["message"]
    assert "install what it needs" not in answer.text
    assert answer.json()["message"].endswith("(restart the service once it has what it needs)")


class _Echoes:
    """A provider whose error quotes the request it refused (as many do): the query."""

    name = "echoes"

    async def score(self, query, docs, **context):
        if query == "warm up":
            return np.zeros(len(docs))
        return ScoreBatch(
            values=np.zeros(len(docs)),
            flags={i: ["llm_failed"] for i in range(len(docs))},
            warnings=[f"document 0: no score (openai: 500: bad request {query!r})"],
        )


def test_with_api_keys_ready_names_states_but_not_errors_that_may_quote_a_request(monkeypatch):
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))  # this test's only
    register_reranker("test-echoes", lambda: ScorerReranker(_Echoes()))
    settings = ServerSettings(
        pipelines={"live": "test-echoes", "broken": "test-broken-provider", "bm25": "bm25"},
        default="bm25",
        api_keys=["k"],
        ready_when="any",
        failing_probe_seconds=0,
    )
    secret = {**ASK, "query": "patient John Doe HIV status"}
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json().get("loading") and time.time() < deadline:
            time.sleep(0.02)
        key = {"Authorization": "Bearer k"}
        for _ in range(FAILING_AFTER):
            assert client.post("/v2/rerank", json=secret, headers=key).status_code == 502
        ready = client.get("/ready")  # no key: states, not the causes
        assert ready.status_code == 200, ready.text
        assert ready.json()["failing"] == {"live": HIDDEN}
        assert ready.json()["failed"] == {"broken": HIDDEN}
        one = client.get("/ready", params={"model": "live"})
        assert one.json()["status"] == "failing" and one.json()["error"] == HIDDEN
        down = client.get("/ready", params={"model": "broken"})
        assert down.status_code == 503 and "connection refused" not in down.text
        assert all("John Doe" not in r.text for r in (ready, one, down))
        info = client.get("/info", headers=key).json()["pipelines"]  # with a key: the cause
        assert "John Doe" in info["live"]["error"]
        assert "connection refused" in info["broken"]["error"]


class _FailsAfterItsDeadline:
    """Every LLM-like call failed, and the answer comes after the request's deadline (the
    calls queued behind a stalled provider were refused once the deadline passed)."""

    name = "late"

    async def score(self, query, docs, **context):
        if query == "warm up":
            return np.zeros(len(docs))
        time.sleep(0.5)  # noqa: ASYNC251 (holds the loop: the answer is ready at the deadline)
        return ScoreBatch(
            values=np.zeros(len(docs)),
            flags={i: ["llm_failed"] for i in range(len(docs))},
            warnings=[f"document {i}: no score (not called: deadline)" for i in range(len(docs))],
        )


def test_an_answer_that_failed_because_its_deadline_passed_is_a_504(monkeypatch):
    # not a 502 blaming the provider: the request ran out of its time
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))  # this test's only
    register_reranker("test-late", lambda: ScorerReranker(_FailsAfterItsDeadline()))
    settings = ServerSettings(pipelines={"late": "test-late"}, default="late", timeout=0.3)
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 30
        while client.get("/ready").json().get("status") != "ready" and time.time() < deadline:
            time.sleep(0.02)
        answer = client.post("/v2/rerank", json={**ASK, "model": "late"})
    assert answer.status_code == 504, answer.text
    assert answer.json()["message"] == "pipeline 'late': no answer within the 0.3 s deadline"
