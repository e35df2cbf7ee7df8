"""A cache directory this user cannot write ($RERANKIT_CACHE_DIR) is said: a WARNING naming
the folder, the error and what to do, once per folder (it was an INFO line, said for each
table), at the service's start and where the word-frequency table cannot be kept; and
`rerankit check` reports it: a warning where serve still works without it, a mistake where
serve would not start (answers kept there, in SQLite). An SQLite cache that cannot be
opened there names its file and what to do. The folder is read-only by its mode, or,
where the mode does not stop this user (root), a path under a regular file."""

from __future__ import annotations

import logging
import os
import sqlite3
import time

import pytest

from rerankit.cache import CacheUnavailableError, JudgmentCache
from rerankit.cli.main import main
from rerankit.errors import RerankitError


@pytest.fixture
def unwritable(tmp_path, monkeypatch):
    """A folder this process cannot write in, as $RERANKIT_CACHE_DIR."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root: the mode does not stop it
        (tmp_path / "a-file").write_text("")
        folder = tmp_path / "a-file" / "cache"  # never created: its parent is a file
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(folder))
    yield folder
    (tmp_path / "read-only").chmod(0o755)


def _settings(tmp_path, answer_cache: bool = False) -> str:
    path = tmp_path / f"service-{answer_cache}.toml"
    path.write_text(
        f'[server]\ndefault = "b"\nanswer_cache = {str(answer_cache).lower()}\n'
        '[pipelines.b]\nreranker = "bm25"\n'
    )
    return str(path)


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_check_warns_of_it_where_serve_still_works(tmp_path, capsys, unwritable):
    path = _settings(tmp_path)
    assert main(["check", path]) == 0  # a warning: the exit status of a file without mistakes
    out = " ".join(capsys.readouterr().out.split())
    said = f"{path}: warning: the rerankit cache directory {unwritable} cannot be written ("
    assert said in out, out
    assert "serve still starts, but nothing is kept there" in out
    assert "set RERANKIT_CACHE_DIR to a writable folder" in out


def test_check_says_nothing_of_a_folder_it_can_write(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "not-made-yet"))
    assert main(["check", _settings(tmp_path, answer_cache=True)]) == 0
    assert "cannot be written" not in capsys.readouterr().out


def test_check_fails_it_where_serve_would_not_start(tmp_path, capsys, unwritable):
    path = _settings(tmp_path, answer_cache=True)
    assert main(["check", path]) == 1
    out = " ".join(capsys.readouterr().out.split())
    said = f"{path}: the rerankit cache directory {unwritable} cannot be written ("
    assert said in out, out
    assert f"answer_cache = true keeps answers there ({unwritable / 'answers.sqlite'})" in out
    assert "serve would not start" in out and "or set answer_cache = false" in out
    # as check says: serve does not start
    pytest.importorskip("fastapi", reason="needs the 'server' extra")
    from rerankit.server import ServerSettings, create_app

    settings = ServerSettings(pipelines={"b": "bm25"}, default="b", answer_cache=True)
    with pytest.raises((OSError, sqlite3.Error, RerankitError)):
        create_app(settings)


def test_the_word_frequency_table_says_it_once_as_a_warning(unwritable, caplog, monkeypatch):
    pytest.importorskip("wordfreq", reason="background idf needs the 'lexical' extra")
    from rerankit.text import frequencies

    caplog.set_level(logging.DEBUG, logger="rerankit")
    for _ in range(2):  # built twice (as by two languages): said once
        monkeypatch.setattr(frequencies, "_TABLES", {})
        assert frequencies.frequency_table("en").get("the")
    (said,) = _warnings(caplog)
    assert f"the rerankit cache directory {unwritable} cannot be written (" in said
    assert str(unwritable) in said.split("(", 1)[1]  # the error names the path it met
    assert "word-frequency table of 'en' is built from wordfreq again" in said
    assert "set RERANKIT_CACHE_DIR to a writable folder" in said


def test_the_service_says_it_at_start(unwritable, caplog, wait_ready_client):
    caplog.set_level(logging.INFO, logger="rerankit")
    wait_ready_client()
    said = [w for w in _warnings(caplog) if "cache directory" in w]
    assert len(said) == 1, _warnings(caplog)
    assert f"the rerankit cache directory {unwritable} cannot be written (" in said[0]
    assert "word-frequency tables are built again in each process" in said[0]
    assert "set RERANKIT_CACHE_DIR to a writable folder" in said[0]


@pytest.fixture
def wait_ready_client():
    """Start a bm25 service, wait until it is ready, and stop it."""
    pytest.importorskip("fastapi", reason="needs the 'server' extra")
    from fastapi.testclient import TestClient

    from rerankit.server import ServerSettings, create_app

    def run() -> None:
        settings = ServerSettings(pipelines={"b": "bm25"}, default="b")
        with TestClient(create_app(settings)) as client:
            for _ in range(500):
                if client.get("/ready").status_code == 200:
                    break
                time.sleep(0.02)
            assert client.get("/ready").status_code == 200

    return run


def test_a_cache_file_that_cannot_be_opened_says_which_and_what_to_do(
    tmp_path, capsys, unwritable, monkeypatch
):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(CacheUnavailableError) as caught:
        JudgmentCache()  # an LLM judge's default cache: judgments.sqlite there
    said = str(caught.value)
    assert f"judgment cache {unwritable / 'judgments.sqlite'} cannot be opened (" in said
    assert "set RERANKIT_CACHE_DIR to a writable folder" in said
    assert "cache = false on the LLM scorer" in said
    # `rerankit check`: the judge's pipeline is a mistake saying so (where the folder was
    # read-only, check stopped with sqlite3's traceback, "unable to open database file")
    judge = tmp_path / "judge.toml"
    judge.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        'base_url = "http://127.0.0.1:9"\n'
    )
    settings = tmp_path / "judged.toml"
    settings.write_text(f'[pipelines]\nj = "{judge.as_posix()}"\n')
    assert main(["check", str(settings)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"{settings}: pipeline 'j': " in out, out
    assert f"judgment cache {unwritable / 'judgments.sqlite'} cannot be opened" in out
