"""The default hybrid given documents that carry a first-stage score ranks by the texts
alone and says so: a note on the pipeline's setting, the same on every call. Interleaved
with a click-learned pipeline (which reads those scores, so every request sends them), every
answer carried it; the service now logs it once per pipeline and leaves it out of the
answers (as a batch says it once in its summary and an adapter logs it once)."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.rerankers import HybridReranker, ScorerReranker
from rerankit.scorers import FieldScorer, JaccardScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATION
from rerankit.server import ServerSettings, create_app

KEY = {"Authorization": "Bearer sekret"}
NOTE = "a first-stage (retriever) score, which this hybrid does not fuse"
SPEC = {  # the calibrated hybrid with a cheap stand-in for the embedding model
    "weights": {"embedding": 0.5, "bm25_background": 0.5},
    "calibration": {
        k: HYBRID_CALIBRATION["calibration"][k] for k in ("embedding", "bm25_background")
    },
    "output_calibration": {"slope": 1.2, "intercept": 0.1},
}
DOCS = [
    {"text": f"solar panels on roofs number {i}", "first_stage_score": float(i)} for i in range(6)
]

register_reranker(
    "test-note-hybrid",
    lambda: HybridReranker(JaccardScorer(name="embedding"), calibration=SPEC),
)
register_reranker(
    "test-note-learned",
    lambda: ScorerReranker(FieldScorer("first_stage_score", name="first_stage")),
)


def test_the_hybrids_setting_note_is_logged_once_not_in_every_answer(tmp_path, caplog):
    # the log says it once per pipeline name in a process: a name no other test serves
    settings = ServerSettings(
        pipelines={"note-hybrid": "test-note-hybrid", "learned": "test-note-learned"},
        default="note-hybrid",
        api_keys=["sekret"],
        feedback={"path": str(tmp_path / "clicks.jsonl"), "store": "hash"},
        interleave=["note-hybrid", "learned"],
        interleave_share=0.5,
    )
    with caplog.at_level("WARNING"), TestClient(create_app(settings)) as client:
        deadline = time.time() + 60
        while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
            time.sleep(0.02)
        for _ in range(4):
            body = {"model": "note-hybrid", "query": "solar roofs", "documents": DOCS}
            answer = client.post("/v1/rerank", json=body, headers=KEY)
            assert answer.status_code == 200, answer.text
            assert NOTE not in answer.text
            assert NOTE not in answer.headers.get("x-rerankit-warnings", "")
    said = [r.getMessage() for r in caplog.records if NOTE in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("pipeline 'note-hybrid': every document carries a first-stage"), said
