"""``[server] explore`` and ``interleave_share`` are shares of the same requests: explore is
the share of all requests explored (interleaved ones included in the count of requests,
never explored), so the two together cannot exceed 1 of the first pipeline's requests."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app

KEY = {"Authorization": "Bearer sekret"}
DOCS = [f"document number {i}" for i in range(10)]


def _settings(tmp_path, **server):
    server.setdefault("feedback", {"path": str(tmp_path / "clicks.jsonl"), "store": "id"})
    return ServerSettings(
        pipelines={"up": "bm25", "down": "jaccard"},
        default="up",
        api_keys=["sekret"],
        **server,
    )


def test_explore_and_interleave_share_over_one_is_an_error_naming_both(tmp_path):
    spec = {
        "server": {
            "feedback": "c.jsonl",
            "interleave": ["up", "down"],
            "interleave_share": 0.7,
            "explore": 0.6,
        },
        "pipelines": {"up": "bm25", "down": "jaccard"},
    }
    with pytest.raises(ValueError) as caught:
        ServerSettings.from_mapping(spec)
    message = str(caught.value)
    assert "interleave_share" in message and "explore" in message
    assert "0.7" in message and "0.6" in message
    # at most 1 together is fine, and explore alone may be anything in [0, 1]
    spec["server"]["explore"] = 0.3
    assert ServerSettings.from_mapping(spec).explore == 0.3
    del spec["server"]["interleave"], spec["server"]["interleave_share"]
    spec["server"]["explore"] = 1.0
    assert ServerSettings.from_mapping(spec).explore == 1.0


def test_explore_is_a_share_of_all_requests_not_of_those_left_after_interleaving(tmp_path):
    # half interleaved, half explored (every pair exchanged): no request is left plain
    settings = _settings(
        tmp_path, interleave=["up", "down"], interleave_share=0.5, explore=0.5, explore_pairs=1.0
    )
    orders: Counter[str] = Counter()
    with TestClient(create_app(settings)) as client:
        deadline = time.time() + 120  # both pipelines ready, so every interleaving can run
        while client.get("/ready").json()["status"] != "ready" and time.time() < deadline:
            time.sleep(0.02)
        for n in range(60):
            body = {"model": "up", "query": f"number {n % 10}", "documents": DOCS}
            response = client.post("/v2/rerank", json=body, headers=KEY)
            assert response.status_code == 200, response.text
            orders[response.json()["meta"]["rerankit"].get("order", "plain")] += 1
        client.app.state.feedback.flush()
    assert orders["plain"] == 0, orders
    assert orders["interleaved"] > 10 and orders["explored"] > 10, orders
    lines = (tmp_path / "clicks.jsonl").read_text(encoding="utf-8").splitlines()
    impressions = [json.loads(line) for line in lines]
    explored = sum("explore" in r for r in impressions)
    assert explored == orders["explored"] and explored + orders["interleaved"] == 60


def test_check_says_the_experiments_a_settings_file_runs(tmp_path, capsys):
    from rerankit.cli import main

    settings = tmp_path / "service.toml"
    settings.write_text(
        '[server]\ninterleave = ["up", "down"]\ninterleave_share = 0.2\nexplore = 0.1\n'
        '[server.feedback]\npath = "clicks.jsonl"\n'
        '[pipelines.up]\nreranker = "bm25"\n[pipelines.down]\nreranker = "jaccard"\n',
        encoding="utf-8",
    )
    assert main(["check", str(settings)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{settings}: interleave: 20 % of the requests to 'up' answered with 'down' "
        "interleaved (optimized)"
    ) in out
    assert (
        f"{settings}: explore: 10 % of all requests with pairs below the top 3 exchanged "
        "(each with chance 0.1)"
    ) in out
