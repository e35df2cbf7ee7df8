"""A Redis server that wants a password, met without one or with a wrong one: every message
says authentication failed and what to mend in the url (an SRE got the server's raw `HELLO
must be called with the client already authenticated ...`, and `check` called a server that
refused the password "not reachable" and passed); `check` rates it as serve would meet it:
a warning (serve computes without the cache), a mistake with `required = true` (never
ready)."""

from __future__ import annotations

import logging

from rerankit.cache import JudgmentCache
from rerankit.cli import main

NO_PASSWORD = "authentication failed: the server needs a password and the url gives none: put "
NO_PASSWORD += "it in the url, redis://:PASSWORD@HOST:PORT/DB"
REFUSED = "authentication failed: the server refused the user and password in the url"


def _url(server, auth: str = "") -> str:
    return f"redis://{auth}127.0.0.1:{server.port}/0"


def _settings(tmp_path, url: str, required: bool) -> str:
    path = tmp_path / f"service-{required}.toml"
    path.write_text(
        f'[pipelines.b]\nreranker = "bm25"\n[cache]\nurl = "{url}"\n'
        f"required = {str(required).lower()}\n",
        encoding="utf-8",
    )
    return str(path)


def test_no_password_says_where_to_put_one(password_redis, capsys, caplog):
    url = _url(password_redis)
    assert main(["cache", "info", "answers", "--url", url]) == 1
    said = capsys.readouterr().err
    assert NO_PASSWORD in said and "HELLO must be called" not in said, said
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        assert JudgmentCache(url=url).get("k") is None  # a miss, as for any failure
    (warning,) = [r.getMessage() for r in caplog.records if "computing without" in r.message]
    assert NO_PASSWORD in warning


def test_check_rates_a_refused_password_as_serve_would_meet_it(password_redis, tmp_path, capsys):
    wrong = _url(password_redis, ":wrong@")
    assert main(["check", _settings(tmp_path, wrong, required=False)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if ": cache: " in x]
    assert ": warning: cache: " in line and "not reachable" not in line, line
    assert "the server refused the url's credentials (" + REFUSED in line
    assert "serve starts and computes without it until the url is mended" in line
    assert main(["check", _settings(tmp_path, wrong, required=True)]) == 1  # never ready
    (line,) = [x for x in capsys.readouterr().out.splitlines() if ": cache: " in x]
    assert REFUSED in line and "with required = true, serve's /ready says 503" in line
    right = _url(password_redis, ":s3cret@")
    assert main(["check", _settings(tmp_path, right, required=True)]) == 0
    assert "redis://:***@" in capsys.readouterr().out  # the password never shown
