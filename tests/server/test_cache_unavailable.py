"""An answer computed while the shared cache cannot be read says so: ``x-rerankit-cache:
unavailable`` (and ``meta.rerankit.cache``), not ``miss``, so a client or an access log
tells an outage from a plain miss (an SRE saw only misses through a Redis outage)."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app


def _ask(client, query: str):
    body = {"model": "b", "query": query, "documents": ["solar panels", "wind at sea"]}
    answer = client.post("/v2/rerank", json=body)
    assert answer.status_code == 200, answer.text
    return answer.headers["x-rerankit-cache"], answer.json()["meta"]["rerankit"]["cache"]


def test_an_answer_computed_while_the_cache_is_down_says_unavailable(own_redis, wait_ready):
    settings = ServerSettings(
        pipelines={"b": "bm25"}, default="b", answer_cache=True, cache={"url": own_redis.url}
    )
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        assert _ask(client, "solar") == ("miss", "miss")
        assert _ask(client, "solar") == ("hit", "hit")
        own_redis.stop()
        assert _ask(client, "solar") == ("unavailable", "unavailable")
        assert _ask(client, "wind") == ("unavailable", "unavailable")  # (in the back-off)
        metrics = client.get("/metrics").text
        own_redis.start()
        counted = 'rerankit_answer_cache_total{model="b",result="unavailable"} 2.0'
        assert counted in metrics, metrics
        # the calls made in the second after the failure did not try the server: counted
        # apart from the failed ones (errors), which the back-off keeps to about one a second
        line = r'^rerankit_cache_skipped_total\{cache="answer"\} (\S+)$'
        skipped = re.search(line, metrics, re.M)
        assert skipped is not None and float(skipped.group(1)) >= 1, metrics
        deadline = time.monotonic() + 10
        while _ask(client, "sea")[0] == "unavailable" and time.monotonic() < deadline:
            time.sleep(0.1)  # (calls skip the server for a second after a failure)
        assert _ask(client, "sea") == ("hit", "hit")
