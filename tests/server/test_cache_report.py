"""What `rerankit check` and the service's start log say of ``[cache]``: where answers,
LLM judgments and embeddings are kept, for how long, ``required``, and whether the shared
server answered a PING (seen by an SRE: a file pointing at a dead Redis passed check with
the same lines as the good one, and the start log said nothing of the cache)."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cli import main
from rerankit.server import ServerSettings, create_app


def _settings(path, url: str, *, required: bool = False) -> str:
    path.write_text(
        '[server]\ndefault = "b"\nanswer_cache = true\n[pipelines.b]\nreranker = "bm25"\n'
        f'[cache]\nurl = "{url}"\nanswer_ttl = 600\nrequired = {str(required).lower()}\n'
    )
    return str(path)


def _cache_line(capsys) -> str:
    (line,) = [line for line in capsys.readouterr().out.splitlines() if ": cache: " in line]
    return line


def test_check_says_where_the_caches_are_and_that_the_server_answered(tmp_path, capsys, redis_url):
    assert main(["check", _settings(tmp_path / "service.toml", redis_url)]) == 0
    line = _cache_line(capsys)
    assert f"cache: answers, LLM judgments and embeddings shared in Redis {redis_url}" in line
    assert "kept: answers 600 s, LLM judgments until evicted or cleared" in line
    assert "required = false" in line
    assert "the server answered a PING from here" in line


def test_check_says_a_dead_server_is_not_reachable_and_what_required_means(
    tmp_path, capsys, nothing_listening_url
):
    path = _settings(tmp_path / "service.toml", nothing_listening_url)
    assert main(["check", path]) == 0  # information: CI may have no Redis
    line = _cache_line(capsys)
    assert "the server is not reachable from here (ConnectionError" in line, line
    assert "serve starts anyway and computes without it" in line
    path = _settings(tmp_path / "required.toml", nothing_listening_url, required=True)
    assert main(["check", path]) == 0  # said, as a key variable not set here is
    line = _cache_line(capsys)
    assert "not reachable from here" in line
    assert "with required = true, serve's /ready says 503 until it answers" in line


def test_check_without_a_url_names_the_files_on_this_machine(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "c"))
    path = tmp_path / "service.toml"
    path.write_text('[server]\ndefault = "b"\n[pipelines.b]\nreranker = "bm25"\n')
    assert main(["check", str(path)]) == 0
    line = _cache_line(capsys)
    assert "answers not cached (answer_cache = false)" in line
    assert f"LLM judgments in {tmp_path / 'c' / 'judgments.sqlite'}" in line
    assert "embeddings in each process's memory" in line and "no [cache] url" in line


@pytest.mark.parametrize("alive", [True, False], ids=["answers", "dead"])
def test_the_service_says_at_start_where_answers_are_cached_and_whether_the_server_answered(
    request, caplog, alive
):
    url = request.getfixturevalue("redis_url" if alive else "nothing_listening_url")
    settings = ServerSettings(
        pipelines={"b": "bm25"}, default="b", answer_cache=True, cache={"url": url}
    )
    app = create_app(settings)
    with caplog.at_level(logging.INFO, logger="rerankit"), TestClient(app) as client:
        assert client.get("/health").status_code == 200
        while client.get("/ready").json()["status"] == "loading":
            pass
    (said,) = [r for r in caplog.records if "rerankit service caches:" in r.getMessage()]
    message = said.getMessage()
    assert f"answers, LLM judgments and embeddings shared in Redis {url}" in message
    if alive:
        assert said.levelno == logging.INFO and "the server answered a PING" in message
    else:
        assert said.levelno == logging.WARNING, message
        assert "did not answer a PING (ConnectionError" in message
        assert "requests are computed without it until it answers" in message


def test_the_namespace_said_is_the_one_in_the_url(tmp_path, capsys, redis_url):
    """`?namespace=rel43` in the url: check and the start line said `under rerankit:*` while
    the keys went under `rel43:*`."""
    from rerankit.server.cache_report import cache_where

    path = _settings(tmp_path / "service.toml", redis_url + "?namespace=rel43")
    assert main(["check", path]) == 0
    assert "under rel43:*" in _cache_line(capsys)
    assert "under rel43:*" in cache_where(ServerSettings.from_file(path))  # the start line's
    table = {"url": redis_url, "namespace": "rel42"}  # the table's namespace, as before
    served = ServerSettings(pipelines={"b": "bm25"}, default="b", cache=table)
    assert "under rel42:*" in cache_where(served)


def test_check_says_the_timeout_the_ping_had_also_when_the_url_sets_it(
    tmp_path, capsys, redis_url, nothing_listening_url
):
    """`?socket_timeout=2` in the url: the client waited 2 s for the answer, and check said
    `(within 0.5 s)`, the table's timeout the url had overridden."""
    assert main(["check", _settings(tmp_path / "plain.toml", redis_url)]) == 0
    assert "the server answered a PING from here (within 0.5 s)" in _cache_line(capsys)
    path = _settings(tmp_path / "answer.toml", redis_url + "?socket_timeout=2")
    assert main(["check", path]) == 0
    line = _cache_line(capsys)
    assert "within 0.5 s)" not in line, line
    assert (
        "(within 0.5 s to connect, 2 s to answer, set by the url's ?socket_timeout= over "
        "[cache] timeout = 0.5)" in line
    ), line
    both = "?socket_timeout=3&socket_connect_timeout=3"
    assert main(["check", _settings(tmp_path / "both.toml", nothing_listening_url + both)]) == 0
    line = _cache_line(capsys)
    assert "; one PING, timeout 3 s, set by the url's ?socket_connect_timeout= and " in line
    assert "timeout 0.5 s" not in line, line
