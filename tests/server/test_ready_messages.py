"""``/ready?model=NAME`` with API keys: the 503's ``message`` leaves out a load error's
text (it may name paths and addresses), and nothing else. An operator probing a pipeline
still on its first load read ``pipeline 'slow' is loading: see /info (with an API key) for
the cause``: a cause when nothing had failed, and no attempt or retry time, which the same
probe without keys says."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("httpx", reason="needs the 'server' extra")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit import register_reranker, registry
from rerankit.errors import ModelLoadError
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import FunctionScorer
from rerankit.server import ServerSettings, create_app
from rerankit.server.readiness import HIDDEN

LOADED = threading.Event()


def _slow(q, d):
    if q == "warm up":
        LOADED.wait(20)  # its first load attempt runs until the test lets it end
    return 1.0


def _broken(q, d):
    raise ModelLoadError("could not load model '/secret/path/model': no such folder")


def _settings(**keys) -> ServerSettings:
    return ServerSettings(
        pipelines={"slow": "test-ready-slow", "broken": "test-ready-broken", "bm25": "bm25"},
        default="bm25",
        ready_when="any",
        timeout=30.0,
        **keys,
    )


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))  # this test's only
    register_reranker("test-ready-slow", lambda: ScorerReranker(FunctionScorer(_slow)))
    register_reranker("test-ready-broken", lambda: ScorerReranker(FunctionScorer(_broken)))
    LOADED.clear()
    yield
    LOADED.set()


def _probe(settings: ServerSettings) -> dict[str, dict]:
    said = {}
    try:
        with TestClient(create_app(settings)) as client:
            deadline = time.time() + 30
            while time.time() < deadline:
                broken = client.get("/ready", params={"model": "broken"}).json()
                if broken["status"] == "failed":
                    break
                time.sleep(0.02)
            for name in ("slow", "broken"):
                answer = client.get("/ready", params={"model": name})
                assert answer.status_code == 503, answer.text
                said[name] = answer.json()
    finally:
        LOADED.set()
    return said


def test_with_keys_a_loading_pipeline_says_its_attempt_and_no_cause(registered):
    open_ = _probe(_settings())
    LOADED.clear()
    keyed = _probe(_settings(api_keys=["k"]))
    slow = keyed["slow"]
    assert slow["status"] == "loading" and slow["attempts"] == 1
    assert HIDDEN not in slow["message"] and "cause" not in slow["message"]
    assert slow["message"].startswith("pipeline 'slow' is loading (attempt 1, ")
    assert "; retry in " in slow["message"]
    assert open_["slow"]["message"].startswith("pipeline 'slow' is loading (attempt 1, ")
    broken = keyed["broken"]
    assert "/secret/path" not in str(broken)  # the error's text stays behind the keys
    assert broken["message"].startswith(f"pipeline 'broken' is unavailable: {HIDDEN}; ")
    assert "next load attempt in " in broken["message"] and "; retry in " in broken["message"]
    assert "/secret/path" in open_["broken"]["message"]  # without keys: said in full
