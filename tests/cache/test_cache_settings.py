"""``[cache]`` in the service's settings and ``$RERANKIT_CACHE_URL``: checked when read,
errors that name the problem (never the password), and options the caches take."""

from __future__ import annotations

import pytest

from rerankit.cache import CacheSettings, JudgmentCache, cache_url
from rerankit.server.settings import ServerSettings


def test_the_cache_table_is_read_checked_and_written_back():
    settings = ServerSettings.from_mapping(
        {
            "server": {"default": "bm25"},
            "pipelines": {"bm25": "bm25"},
            "cache": {"url": "redis://cache.internal:6379/2", "answer_ttl": 60},
        }
    )
    assert settings.cache.url == "redis://cache.internal:6379/2"
    assert settings.cache.options("answer")["ttl"] == 60.0
    assert settings.cache.options("judgment")["ttl"] is None  # 0: kept until evicted
    again = ServerSettings.from_mapping(settings.to_mapping())
    assert again.cache == settings.cache
    assert ServerSettings().cache == CacheSettings()  # none given: SQLite, as before


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"url": "http://cache:6379"}, "is not a Redis or Valkey URL"),
        ({"url": "redis://:s3cret@cache:port/0"}, "port that is not a number"),
        ({"url": "redis://cache:6379/zero"}, "database in"),
        ({"url": "redis://:s3cret@cache:6379/x"}, r"redis://:\*\*\*@cache:6379/x"),
        (
            {"urls": "redis://cache"},
            r"\[cache\] has no key 'urls' \(did you mean 'url'\?\); its keys: url, namespace",
        ),
        ({"namespace": "rerankit:*"}, "namespace"),
        ({"timeout": 0}, "timeout must be > 0"),
        ({"answer_ttl": -1}, "answer_ttl must be >= 0"),
        ({"url": "redis://c:6379/0", "judgment_max_stored": 10}, "maxmemory"),
        ({"url": "redis://c:6379/0?namespace=a", "namespace": "b"}, "not both"),
        ({"required": True}, "required = true needs a url"),
        ({"url": "redis://c:6379/0", "required": "yes"}, "required must be true or false"),
    ],
)
def test_a_bad_cache_table_says_what_is_wrong(table, message):
    with pytest.raises(ValueError, match=message) as caught:
        ServerSettings.from_mapping({"cache": table})
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "redis://:s3cret@cache:6379/0?socket_timout=2",
            r"'socket_timout' is not an option of a redis:// url \(did you mean 'socket_timeout'",
        ),
        (
            "redis://cache:6379/0?ssl_ca_certs=/etc/ca.crt",
            r"'ssl_ca_certs' is an option of rediss:// \(TLS\) urls",
        ),
        ("unix:///run/redis.sock?host=x", "'host' is not an option of a unix:// url"),
    ],
)
def test_an_option_the_redis_client_does_not_take_is_said_at_start(url, said):
    """A typo in the url's options (`?socket_timout=2`) passed every check: the service
    started, said it was ready, and answered every request 500 `internal error` (the Redis
    client refusing the option at its first connection); `check` stopped on a bare
    `AbstractConnection.__init__() got an unexpected keyword argument`."""
    pytest.importorskip("redis", reason="the Redis cache needs the 'redis' extra")
    with pytest.raises(ValueError, match=said) as caught:
        ServerSettings.from_mapping({"cache": {"url": url}})
    assert "s3cret" not in str(caught.value)
    for fine in ("socket_timeout=2", "namespace=a&db=1", "ssl_cert_reqs=none"):
        ServerSettings.from_mapping({"cache": {"url": f"rediss://cache:6380/0?{fine}"}})


def test_the_environment_variable_is_checked_where_it_is_read(monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_URL", "localhost:6379")
    with pytest.raises(ValueError, match=r"\$RERANKIT_CACHE_URL"):
        cache_url()
    with pytest.raises(ValueError, match=r"\$RERANKIT_CACHE_URL"):
        JudgmentCache()
    assert cache_url("") is None  # given empty: none, whatever the environment says
    monkeypatch.setenv("RERANKIT_CACHE_URL", "redis://127.0.0.1:1/0")
    assert cache_url() == "redis://127.0.0.1:1/0"


def test_a_cache_takes_a_path_or_a_url_not_both(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        JudgmentCache(tmp_path / "j.sqlite", url="redis://127.0.0.1:6379/0")


def test_sqlite_options_make_the_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    settings = CacheSettings(judgment_ttl=30, judgment_max_stored=100)
    cache = JudgmentCache(**settings.options("judgment"))
    assert cache.store.where == str(tmp_path / "judgments.sqlite")
    assert (cache.store.ttl, cache.store.max_stored) == (30.0, 100)


def test_a_missing_redis_client_names_the_extra(monkeypatch):
    import sys

    from rerankit.cache import redis_store
    from rerankit.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed
    monkeypatch.setattr(redis_store, "_SERVERS", {})
    with pytest.raises(MissingDependencyError, match=r"rerankit\[redis\]"):
        JudgmentCache(url="redis://127.0.0.1:6379/0")


def test_cache_defaults_reach_caches_opened_without_a_place_of_their_own(tmp_path, monkeypatch):
    from rerankit.cache import AnswerCache, EmbeddingCache, cache_defaults, current_defaults

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    url = "redis://127.0.0.1:1/0"  # never reached: opening a store connects to nothing
    settings = CacheSettings(url=url, namespace="ns", judgment_ttl=30, answer_ttl=0)
    with cache_defaults(settings):
        assert current_defaults() is settings
        judgments, embeddings, answers = JudgmentCache(), EmbeddingCache(), AnswerCache()
        assert (judgments.store.url, judgments.store.prefix) == (url, "ns:judgment:")
        assert judgments.store.ttl == 30.0
        assert embeddings.store.prefix == "ns:embedding:" and embeddings.store.ttl is None
        assert answers.store.ttl is None  # answer_ttl = 0: kept until evicted
        assert JudgmentCache(ttl=5).store.ttl == 5.0  # what is given wins
        own = JudgmentCache(tmp_path / "own.sqlite")  # a place of its own: as given
        assert own.store.where == str(tmp_path / "own.sqlite") and own.store.ttl is None
        assert EmbeddingCache(url="").store is None  # "": memory only, as given
    assert current_defaults() is None
    assert JudgmentCache().store.where == str(tmp_path / "judgments.sqlite")  # as before
    with cache_defaults(CacheSettings(judgment_max_stored=7)):  # no server: SQLite, bounded
        assert JudgmentCache().store.max_stored == 7
        assert EmbeddingCache().store is None
