"""A replica with ``[cache] required = true`` whose Redis goes and comes back, as an SRE
watches it: ``/ready`` 503 with a reason that names no host or port (it needs no key),
``/info`` agreeing with it (it said ``"ready": true`` under a 503) and saying which server
and why, ``rerankit_cache_up`` 0 then 1 (no series dropped before), and the log: one
warning when it goes, one line when it is back with how long it was out."""

from __future__ import annotations

import logging
import re
import time

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app

KEY = {"Authorization": "Bearer k1"}


def _cache_up(client) -> float:
    found = re.search(r"^rerankit_cache_up (\S+)$", client.get("/metrics").text, re.M)
    assert found is not None, "no rerankit_cache_up series"
    return float(found.group(1))


def test_a_required_cache_that_goes_and_comes_back(own_redis, wait_ready, caplog):
    settings = ServerSettings(
        pipelines={"b": "bm25"},
        default="b",
        api_keys=["k1"],
        cache={"url": own_redis.url, "required": True, "timeout": 0.3},
    )
    port = str(own_redis.port)
    with caplog.at_level(logging.INFO, logger="rerankit"), TestClient(create_app(settings)) as c:
        wait_ready(c)
        assert c.get("/info", headers=KEY).json()["ready"] is True
        assert _cache_up(c) == 1.0
        own_redis.stop()
        ready = c.get("/ready")
        assert ready.status_code == 503
        why = ready.json()["failed"]["cache"]
        assert "not reachable (ConnectionError)" in why and "required = true" in why
        assert port not in ready.text and "127.0.0.1" not in ready.text  # no address in public
        info = c.get("/info", headers=KEY).json()
        assert info["ready"] is False  # as /ready says
        assert port in info["not_ready"]["failed"]["cache"]  # in full behind the key
        server = info["cache"]["server"]
        assert server["up"] is False and port in server["url"] and "problem" in server
        assert _cache_up(c) == 0.0
        own_redis.start()  # the same port
        deadline = time.monotonic() + 10
        while c.get("/ready").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.get("/ready").status_code == 200
        assert c.get("/info", headers=KEY).json()["ready"] is True
        assert _cache_up(c) == 1.0
    said = [(r.levelno, r.getMessage()) for r in caplog.records if "shared cache" in r.getMessage()]
    went = [m for level, m in said if level == logging.WARNING]
    back = [m for level, m in said if level == logging.INFO]
    assert len(went) == 1 and "computing without the cache until the server answers" in went[0]
    assert len(back) == 1, said
    assert re.search(r"the server answers again, after \d+\.\d s out", back[0]), back[0]


def _pings(redis) -> int:
    return int(redis.info("commandstats").get("cmdstat_ping", {}).get("calls", 0))


@pytest.mark.parametrize("required", [True, False])
def test_info_asks_the_shared_cache_server_once(own_redis, wait_ready, required):
    """``/info`` says whether the server answers and (with ``required = true``) whether the
    replica is ready for it: both from one PING, so the two cannot disagree."""
    settings = ServerSettings(
        pipelines={"b": "bm25"},
        default="b",
        cache={"url": own_redis.url, "required": required, "timeout": 0.3},
    )
    redis = own_redis.client()
    with TestClient(create_app(settings)) as c:
        wait_ready(c)
        redis.config_resetstat()
        info = c.get("/info").json()
        assert _pings(redis) == 1
    assert info["ready"] is True and info["cache"]["server"]["up"] is True


def test_info_names_the_server_not_a_cache_it_does_not_keep(own_redis, wait_ready):
    """An operator running without the answer cache, under a namespace of their own, read
    ``/info`` say the server ``redis://... (rerankit:answer:*)`` failed: a cache it did not
    keep, under a namespace it did not use. A PING asks the server, so what it says names
    the server alone."""
    settings = ServerSettings(
        pipelines={"b": "bm25"},
        default="b",
        api_keys=["k1"],
        cache={"url": own_redis.url, "namespace": "team-a", "required": True, "timeout": 0.3},
    )
    with TestClient(create_app(settings)) as c:
        wait_ready(c)
        own_redis.stop()
        info = c.get("/info", headers=KEY).json()
    said = [info["not_ready"]["failed"]["cache"], info["cache"]["server"]["problem"]]
    for text in said:
        assert text.startswith(f"{own_redis.url}: ConnectionError"), text
        assert "answer" not in text and "rerankit:" not in text, text
