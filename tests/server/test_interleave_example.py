"""docs/clicks.md's interleaving settings, as written, in the real app: requests are
interleaved, a click is credited to a pipeline, and ``rerankit interleave-report`` counts
the session (the example paired two pipelines that rank alike, which credits nothing)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")
pytest.importorskip("sentence_transformers", reason="the example's candidate is the hybrid")

from fastapi.testclient import TestClient

from rerankit.cli import build_parser, serve_settings
from rerankit.server import create_app
from rerankit.training.clicks import interleaving_report, read_log

PAGE = Path(__file__).resolve().parents[2] / "docs" / "clicks.md"
DOCS = [
    "Photovoltaic modules convert sunlight into electricity for homes.",
    "Solar power solar power solar power: a list of words.",
    "Wind turbines and the power grid.",
    "A guide to solar eclipses and how to watch them safely.",
    "Rooftop panels turn the sun's energy into household current.",
    "Power tools for the garden.",
]


def test_the_page_s_interleaving_settings_credit_clicks(tmp_path, monkeypatch):
    (block,) = [
        b
        for b in re.findall(r"```toml\n(.*?)```", PAGE.read_text(), flags=re.S)
        if "interleave =" in b and "learned.toml" not in b  # that one needs a learned file
    ]
    monkeypatch.chdir(tmp_path)  # the log's relative path is taken from here
    (tmp_path / "service.toml").write_text(block.replace("0.1\n", "1.0\n", 1))
    args = build_parser().parse_args(["serve", "--settings", str(tmp_path / "service.toml")])
    settings = serve_settings(args)
    assert settings.interleave_share == 1.0  # every request interleaved: the test's only change
    with TestClient(create_app(settings)) as client:
        _wait_until_loaded(client, "candidate")  # until then the current answers alone
        for n in range(6):
            body = {"query": "solar power for homes", "documents": DOCS[n:] + DOCS[:n]}
            answer = client.post("/v2/rerank", json=body)
            assert answer.status_code == 200, answer.text
            answer = answer.json()
            assert answer["meta"]["rerankit"]["order"] == "interleaved"
            # the user clicks the first result, and the last
            clicks = [answer["results"][0]["index"], answer["results"][-1]["index"]]
            sent = client.post("/v1/feedback", json={"id": answer["id"], "clicks": clicks})
            assert sent.status_code == 200, sent.text
        client.app.state.feedback.flush()
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    sessions = [s for s in sessions if s.impression.interleaving]  # not the warm-up's
    assert len(sessions) == 6
    # optimized interleaving (the default): each position carries its credit
    assert any(c != 0 for s in sessions for c in s.impression.interleaving["credits"])
    report = interleaving_report(sessions)
    assert report.pipelines == ("current", "candidate")
    assert report.clicked >= 1  # at least one session credited to a pipeline


def _wait_until_loaded(client, model, seconds=120.0):
    deadline = time.monotonic() + seconds
    while True:
        body = {"model": model, "query": "warm", "documents": ["a", "b"]}
        answer = client.post("/v2/rerank", json=body)
        if answer.status_code == 200 or time.monotonic() > deadline:
            assert answer.status_code == 200, answer.text
            return
        time.sleep(0.5)
