"""An interleaved answer carries the first pipeline's meta, so the second pipeline's
warnings never reach the client: the service logs each of them once (a reader compared a
learned pipeline that warned of missing first-stage scores without ever seeing it)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import FunctionScorer
from rerankit.server import ServerSettings, create_app

KEY = {"Authorization": "Bearer sekret"}
DOCS = [f"document number {i}" for i in range(6)]
WARNING = "these documents came without first_stage_score, which this pipeline reads"


def _number(q, d):
    return float(d.text[-1]) if d.text[-1].isdigit() else 0.0


class _Warns(ScorerReranker):
    """Ranks by the number a document ends with, and warns on every request."""

    async def arerank(self, query, *args, **kwargs):
        result = await super().arerank(query, *args, **kwargs)
        return result if query == "warm up" else replace(result, warnings=(WARNING,))


register_reranker(
    "test-plain-up", lambda: ScorerReranker(FunctionScorer(lambda q, d: -_number(q, d)))
)
register_reranker("test-warns-down", lambda: _Warns(FunctionScorer(_number)))


def test_the_second_pipeline_s_warnings_are_logged_once_not_lost(tmp_path, caplog):
    settings = ServerSettings(
        pipelines={"up": "test-plain-up", "down": "test-warns-down"},
        default="up",
        api_keys=["sekret"],
        feedback={"path": str(tmp_path / "clicks.jsonl"), "store": "hash"},
        interleave=["up", "down"],
        interleave_share=1.0,
    )
    with (
        caplog.at_level("WARNING", logger="rerankit.server.experiments"),
        TestClient(create_app(settings)) as client,
    ):
        deadline = time.time() + 60
        while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
            time.sleep(0.02)
        for _ in range(3):
            body = {"model": "up", "query": "which number", "documents": DOCS, "top_n": 4}
            answer = client.post("/v2/rerank", json=body, headers=KEY)
            assert answer.status_code == 200, answer.text
            meta = answer.json()["meta"]
            assert meta["rerankit"]["order"] == "interleaved"
            assert WARNING not in str(meta)  # the answer's meta is the first pipeline's
        direct = client.post("/v2/rerank", json={**body, "model": "down"}, headers=KEY).json()
        assert WARNING in direct["meta"]["warnings"]  # what a direct call shows
    said = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert said == [
        "interleave: 'down' warned (not in the interleaved answers, which carry 'up''s "
        f"warnings; said once): {WARNING}"
    ]
