"""The Redis store against a real Redis server: key layout, versioned values, expiry, the
memory bound, clear touching only rerankit's keys, and a server killed, frozen or restarted
under a cache that keeps answering (misses within its timeout, errors counted, one warning a
minute, hits again once the server is back)."""

from __future__ import annotations

import logging
import os
import re
import signal
import time

import numpy as np
import pytest

from rerankit.cache import (
    AnswerCache,
    CacheUnavailableError,
    EmbeddingCache,
    JudgmentCache,
    embedding_key,
    error_counts,
    judgment_cache,
    skipped_counts,
)
from rerankit.cache import redis_store as redis_module


def test_entries_live_under_the_namespace_and_kind(redis_url, redis_server):
    judgments = JudgmentCache(url=redis_url)
    judgments.put_many([("k1", {"score": 7}), ("k2", [1, 2])])
    assert judgments.get_many(["k1", "k2", "k3"]) == [{"score": 7}, [1, 2], None]
    vectors = EmbeddingCache(max_entries=0, url=redis_url)
    vectors.put_many("model-a", ["doc"], np.array([[0.5, -1.0]], dtype=np.float32))
    answers = AnswerCache(url=redis_url + "?namespace=staging")
    answers.put("fp:-:abc", b'{"results": []}')
    keys = {k.decode() for k in redis_server.client().keys("*")}
    assert keys == {
        "rerankit:judgment:k1",
        "rerankit:judgment:k2",
        f"rerankit:embedding:{embedding_key('model-a', 'doc')}",
        "staging:answer:fp:-:abc",
    }
    named = judgment_cache(redis_url)  # what `cache = "redis://..."` in a pipeline file gives
    assert named.get("k1") == {"score": 7} and named.store.where.startswith(redis_url)
    (vec,) = EmbeddingCache(max_entries=0, url=redis_url).get_many("model-a", ["doc"])
    assert vec.tolist() == [0.5, -1.0] and vec.dtype == np.float32
    assert answers.get("fp:-:abc") == b'{"results": []}' and answers.bytes_read == 15


def test_values_of_another_format_are_misses_never_misread(redis_url, redis_server):
    client = redis_server.client()
    client.set("rerankit:judgment:newer", b"rk\x02" + b'{"score": 1}')  # a later format
    client.set("rerankit:judgment:unversioned", b'{"score": 1}')
    vec = np.ones(3, dtype=np.float32).tobytes()
    client.set("rerankit:embedding:" + embedding_key("m", "doc"), b"rk\x02" + vec)
    judgments = JudgmentCache(url=redis_url)
    assert judgments.get_many(["newer", "unversioned"]) == [None, None]
    assert EmbeddingCache(max_entries=0, url=redis_url).get_many("m", ["doc"]) == [None]
    judgments.put("newer", {"score": 2})  # computed again, and the entry replaced
    assert judgments.get("newer") == {"score": 2}


def test_ttl_becomes_each_keys_expiry(redis_url, redis_server):
    answers = AnswerCache(url=redis_url, ttl=1.0)
    answers.put("a", b"x")
    ttl_ms = redis_server.client().pttl("rerankit:answer:a")
    assert 0 < ttl_ms <= 1000
    assert answers.get("a") == b"x"
    time.sleep(1.3)
    assert answers.get("a") is None
    JudgmentCache(url=redis_url).put("kept", 1)  # no ttl: kept until evicted or cleared
    assert redis_server.client().pttl("rerankit:judgment:kept") == -1


def test_the_memory_bound_evicts_instead_of_failing(redis_url, redis_server):
    client = redis_server.client()
    client.config_set("maxmemory", 3_000_000)
    client.config_set("maxmemory-policy", "allkeys-lru")
    vectors = EmbeddingCache(max_entries=0, url=redis_url)
    before = error_counts()["embedding"]
    texts = [f"document {i}" for i in range(3000)]  # 3000 x 1.5 KB: twice the bound
    for lo in range(0, len(texts), 250):
        vectors.put_many("m", texts[lo : lo + 250], np.ones((250, 384), dtype=np.float32))
    info = client.info("memory")
    # Redis evicts before each command runs, so the last write may leave it above the
    # bound by about that write (250 vectors, ~0.4 MB); what was written is ~4.6 MB
    assert info["used_memory"] <= 3_000_000 + 250 * 1600
    assert client.info("stats")["evicted_keys"] > 0
    assert error_counts()["embedding"] == before  # evictions are no errors
    found = vectors.get_many("m", texts[-10:])  # the newest are kept
    assert sum(v is not None for v in found) >= 5


def test_a_full_server_drops_writes_and_counts_them(redis_url, redis_server):
    client = redis_server.client()
    client.config_set("maxmemory", 1_500_000)
    client.config_set("maxmemory-policy", "noeviction")
    judgments = JudgmentCache(url=redis_url)
    judgments.put("early", 1)
    before = error_counts()["judgment"]
    for i in range(200):  # until full: OOM refusals, never an exception
        judgments.put_many([(f"k{i}-{j}", "x" * 2000) for j in range(20)])
    assert error_counts()["judgment"] > before
    assert judgments.get("early") == 1  # a full server still answers reads


def test_clear_deletes_only_rerankits_keys(redis_url, redis_server, capsys):
    from rerankit.cli import main

    client = redis_server.client()
    others = {
        "session:42": b"someone else's",
        "rerankit": b"a key named like us",
        "rerankitx:judgment:k": b"another prefix",
        "staging:judgment:k": b"another namespace",
        "rerankit-judgment:k": b"no colon",
    }
    for k, v in others.items():
        client.set(k, v)
    JudgmentCache(url=redis_url).put_many([(f"k{i}", i) for i in range(1200)])
    EmbeddingCache(url=redis_url).put_many("m", ["a"], np.ones((1, 4), dtype=np.float32))
    AnswerCache(url=redis_url).put("fp:-:x", b"answer")

    assert main(["cache", "info", "--url", redis_url]) == 0
    out = capsys.readouterr().out
    lines = {line.split(":")[0]: line for line in out.splitlines() if not line.startswith(" ")}
    assert "1200 entries" in lines["judgments"] and "1 entry," in lines["embeddings"]
    assert "policy noeviction" in out and "no memory bound" in out
    assert main(["cache", "clear", "judgments", "--url", redis_url]) == 0
    assert "cleared judgments" in capsys.readouterr().out
    assert client.exists("rerankit:embedding:" + embedding_key("m", "a"))
    os.environ["RERANKIT_CACHE_URL"] = redis_url  # the environment names it as well
    try:
        assert main(["cache", "clear"]) == 0
    finally:
        del os.environ["RERANKIT_CACHE_URL"]
    left = {k.decode(): client.get(k) for k in client.keys("*")}
    assert left == others


def test_info_and_clear_say_when_the_server_cannot_be_reached(capsys, nothing_listening_url):
    from rerankit.cli import main

    url = nothing_listening_url
    with pytest.raises(CacheUnavailableError):
        JudgmentCache(url=url).clear()
    assert main(["cache", "clear", "--url", url]) == 1
    assert "rerankit:" in capsys.readouterr().err


@pytest.fixture
def quick_retry(monkeypatch):
    monkeypatch.setattr(redis_module, "RETRY_AFTER", 0.2)


def test_a_server_killed_then_restarted_under_a_cache(own_redis, quick_retry, caplog):
    timeout = 0.3
    cache = JudgmentCache(url=own_redis.url, timeout=timeout)
    cache.put("before", 1)
    assert cache.get("before") == 1
    own_redis.stop()  # killed mid-use
    before, skipped = error_counts()["judgment"], skipped_counts()["judgment"]
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        for i in range(20):
            started = time.monotonic()
            assert cache.get(f"k{i}") is None  # a miss, no exception
            cache.put(f"k{i}", i)  # dropped, no exception
            assert time.monotonic() - started < 10 * timeout
    # every call went without the cache: those that tried the server and failed are
    # errors; those in the back-off after a failure did not try it, and are counted apart
    failed = error_counts()["judgment"] - before
    not_tried = skipped_counts()["judgment"] - skipped
    assert failed + not_tried == 40 and failed >= 1 and not_tried >= 1, (failed, not_tried)
    warnings = [r for r in caplog.records if "computing without the cache" in r.message]
    assert len(warnings) == 1  # one, when it went
    own_redis.start()  # the same port; the same cache object: no restart of the client
    deadline = time.monotonic() + 10
    with caplog.at_level(logging.INFO, logger="rerankit"):
        while time.monotonic() < deadline:
            cache.put("after", 2)
            if cache.get("after") == 2:
                break
            time.sleep(0.1)
    assert cache.get("after") == 2  # hits resume
    assert own_redis.client().get("rerankit:judgment:after") is not None
    (back,) = [r.getMessage() for r in caplog.records if "server answers again," in r.message]
    assert re.search(r"after \d+\.\d s out; \d+ cache calls went without it", back), back


def test_a_frozen_server_costs_each_call_its_timeout_and_no_more(own_redis, quick_retry):
    timeout = 0.3
    cache = AnswerCache(url=own_redis.url, timeout=timeout)
    cache.put("k", b"v")
    os.kill(own_redis.proc.pid, signal.SIGSTOP)  # slow: connected, never answering
    try:
        started = time.monotonic()
        assert cache.get("k") is None
        first = time.monotonic() - started
        started = time.monotonic()
        assert cache.get("k") is None  # skipped while the server is marked down
        second = time.monotonic() - started
    finally:
        os.kill(own_redis.proc.pid, signal.SIGCONT)
    assert timeout * 0.8 <= first < timeout * 10
    assert second < first
    deadline = time.monotonic() + 10
    while cache.get("k") != b"v" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cache.get("k") == b"v"


def test_info_says_which_entries_volatile_lru_would_never_evict(redis_url, redis_server, capsys):
    from rerankit.cli import main

    client = redis_server.client()
    client.config_set("maxmemory", 50_000_000)
    client.config_set("maxmemory-policy", "volatile-lru")
    JudgmentCache(url=redis_url).put_many([("a", 1), ("b", 2)])  # no ttl
    EmbeddingCache(url=redis_url, ttl=60).put_many("m", ["x"], np.ones((1, 4), dtype="f4"))
    assert main(["cache", "info", "--url", redis_url]) == 0
    out = capsys.readouterr().out
    under = out.split("judgments:")[1].splitlines()[1]
    assert "2 of 2 sampled keys have no TTL, which volatile-lru never evicts" in under
    assert "judgment_ttl in the service's [cache], ttl= in Python" in under  # what to set
    assert "no TTL" not in out.split("embeddings:")[1].split("judgments:")[0]
    assert "policy volatile-lru" in out and "no memory bound" not in out


def test_store_hits_count_the_vectors_read_from_the_server_not_from_memory(redis_url):
    vectors = np.arange(8, dtype=np.float32).reshape(2, 4)
    EmbeddingCache(url=redis_url).put_many("m", ["a", "b"], vectors)  # another process's
    mine = EmbeddingCache(url=redis_url)
    found = mine.get_many("m", ["a", "b", "c"])
    assert [v is not None for v in found] == [True, True, False]
    assert (mine.hits, mine.misses, mine.store_hits) == (2, 1, 2)
    mine.get_many("m", ["a", "b"])  # a repeat here: answered from memory
    assert (mine.hits, mine.store_hits) == (4, 2)


def test_clear_takes_singular_names_and_a_server_leaves_this_machines_exports(
    redis_url, redis_server, capsys, tmp_path, monkeypatch
):
    from rerankit.cli import main

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    export = tmp_path / "onnx" / "some-model"
    export.mkdir(parents=True)
    JudgmentCache(url=redis_url).put_many([("k", 1)])
    EmbeddingCache(url=redis_url).put_many("m", ["a"], np.ones((1, 4), dtype=np.float32))
    assert main(["cache", "info", "--url", redis_url]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("embeddings:"))
    assert "RERANKIT_CACHE_URL" in line and "names this file" not in line
    assert main(["cache", "clear", "embedding", "--url", redis_url]) == 0
    assert capsys.readouterr().out.startswith("cleared embeddings: ")
    client = redis_server.client()
    assert {k.decode() for k in client.keys("*")} == {"rerankit:judgment:k"}
    assert main(["cache", "clear", "--url", redis_url]) == 0
    assert "kept onnx" in capsys.readouterr().out
    assert export.exists() and client.keys("*") == []
    assert main(["cache", "clear", "onnx", "--url", redis_url]) == 0  # named: removed
    assert not export.exists()


def test_the_namespace_is_given_once_in_the_url_or_by_flag_as_in_a_settings_file(
    redis_url, redis_server, capsys, tmp_path
):
    """An SRE's `cache clear answers --url '...?namespace=v7' --namespace v8` cleared v8's
    answers, silently, where a settings file giving both is an error: both are now."""
    from rerankit.cli import main

    client = redis_server.client()
    AnswerCache(url=redis_url + "?namespace=v7").put("fp:-:x", b"v7's")
    AnswerCache(url=redis_url, namespace="v8").put("fp:-:x", b"v8's")
    both = ["cache", "clear", "answers", "--url", redis_url + "?namespace=v7", "--namespace", "v8"]
    assert main(both) == 2
    said = capsys.readouterr().err
    assert "give the namespace in the url (?namespace=v7) or in --namespace (v8), not both" in said
    assert client.exists("v7:answer:fp:-:x") and client.exists("v8:answer:fp:-:x")  # untouched
    assert main(["cache", "info", "answers", "--url", redis_url + "?namespace=v7"]) == 0
    assert "(v7:answer:*), 1 entry" in capsys.readouterr().out
    with pytest.raises(ValueError, match="not both"):  # in Python as well
        AnswerCache(url=redis_url + "?namespace=v7", namespace="v8")
    settings = tmp_path / "service.toml"
    settings.write_text(
        f'[pipelines.b]\nreranker = "bm25"\n[cache]\nurl = "{redis_url}?namespace=v7"\n'
        'namespace = "v8"\n',
        encoding="utf-8",
    )
    assert main(["check", str(settings)]) == 1
    assert "(?namespace=v7) or in [cache] namespace (v8), not both" in capsys.readouterr().out


def test_an_outage_is_said_once_when_it_goes_and_once_when_it_is_back(caplog):
    """A server that flaps (a timeout, an answer, a timeout) is not a pair of lines a
    second: an outage within a minute of the last warning is counted, not said."""
    from rerankit.cache.store import Outage

    outage = Outage(logging.getLogger("rerankit.test"), "redis://cache:6379/0")
    with caplog.at_level(logging.INFO, logger="rerankit"):
        outage.failed("a read", "ConnectionError: refused", "not reachable (ConnectionError)")
        outage.failed("a write", "ConnectionError: refused", "not reachable (ConnectionError)")
        outage.skipped()
        assert outage.since is not None and outage.reason == "not reachable (ConnectionError)"
        outage.answered()
        outage.answered()  # (nothing more to say)
        outage.failed("a read", "TimeoutError: slow", "timed out (TimeoutError)")  # flaps
        outage.answered()
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in said] == ["WARNING", "INFO"], said
    assert said[0][1].startswith("shared cache redis://cache:6379/0: a read failed (Connection")
    assert "went without it" in said[1][1] and "3 cache calls" in said[1][1]
    assert outage.since is None and outage.reason is None


def test_lookups_are_counted_by_cache_and_result(redis_url, redis_server, capsys):
    """What a replica read from the shared cache instead of computing (an SRE could tell
    only from timing and Redis' own global count): `lookup_counts()`, exported as
    `rerankit_cache_lookups_total{cache, result}`; `cache info` adds the server's count."""
    from rerankit.cache import lookup_counts
    from rerankit.cli import main

    before = lookup_counts()
    vectors = np.arange(8, dtype=np.float32).reshape(2, 4)
    EmbeddingCache(url=redis_url).put_many("m", ["a", "b"], vectors)  # another replica's
    mine = EmbeddingCache(url=redis_url)
    mine.get_many("m", ["a", "b", "c"])  # two read from Redis, one to encode
    mine.get_many("m", ["a"])  # then held in memory
    judgments = JudgmentCache(url=redis_url)
    judgments.put("asked", 1)
    judgments.get_many(["asked", "never asked"])
    after = lookup_counts()
    delta = {k: {r: n - before[k][r] for r, n in after[k].items()} for k in after}
    assert delta == {
        "embedding": {"hit": 2, "memory": 1, "miss": 1},
        "judgment": {"hit": 1, "miss": 1},
    }
    assert main(["cache", "info", "--url", redis_url]) == 0
    assert re.search(
        r"server lookups since it started: \d+ hits, \d+ misses", capsys.readouterr().out
    )


def test_a_unix_socket_url_reaches_the_server(tmp_path):
    """`unix:///run/redis.sock`, as the scale-out page offers, reached redis-py as
    `unix:/run/redis.sock` (the url rebuilt without its `//`), which it refuses: every call
    failed, `check` said `Redis URL must specify one of the following schemes`, and
    `cache info` stopped on it."""
    import shutil
    import tempfile

    from redis_server import RedisServer, redis_binary
    from rerankit.cli import main
    from rerankit.server.cache_report import cache_ping
    from rerankit.server.settings import ServerSettings

    if redis_binary() is None:
        pytest.skip("no redis-server (or valkey-server) on this machine")
    folder = tempfile.mkdtemp(prefix="rk", dir="/tmp")  # a socket path is short (108 bytes)
    socket_path = f"{folder}/redis.sock"
    server = RedisServer(tmp_path / "r", "--unixsocket", socket_path, "--unixsocketperm", "700")
    server.start()
    try:
        for url in (f"unix://{socket_path}", f"unix://{socket_path}?namespace=team-a"):
            judgments = JudgmentCache(url=url)
            judgments.put("k", {"score": 3})
            assert JudgmentCache(url=url).get("k") == {"score": 3}
            settings = ServerSettings.from_mapping({"cache": {"url": url}})
            assert cache_ping(settings) is None  # what check and the start line ask
            assert main(["cache", "info", "--url", url]) == 0
        keys = {k.decode() for k in server.client().keys("*")}
        assert keys == {"rerankit:judgment:k", "team-a:judgment:k"}
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
