"""``rerankit serve --timeout SECONDS``: each request's deadline, overriding the settings
file's ``[server] timeout`` as ``--graceful-timeout`` overrides its key (it was refused
with a misleading "did you mean --graceful-timeout?")."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from rerankit import register_reranker
from rerankit.cli import build_parser, serve_settings
from rerankit.rerankers import ScorerReranker

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.server import create_app


class _Sleepy:
    """Sleeps as many seconds as its query says (a warm-up's: none)."""

    name = "sleepy"

    async def score(self, query, docs, **context):
        await asyncio.sleep(float(query) if query[0].isdigit() else 0)
        return np.zeros(len(docs))


register_reranker("test-sleepy-deadline", lambda: ScorerReranker(_Sleepy()))


def test_the_timeout_flag_overrides_the_files_timeout_and_sets_the_deadline(tmp_path, wait_ready):
    path = tmp_path / "service.toml"
    path.write_text("[server]\ntimeout = 30\ngraceful_timeout = 40\n")
    parse = build_parser().parse_args
    served = ["serve", "--settings", str(path), "-r", "test-sleepy-deadline"]
    assert serve_settings(parse(served)).timeout == 30
    settings = serve_settings(parse([*served, "--timeout", "0.5"]))
    assert (settings.timeout, settings.graceful_timeout) == (0.5, 40)  # the others: the file's
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        quick = client.post("/v2/rerank", json={"query": "0", "documents": ["d"]})
        assert quick.status_code == 200, quick.text
        late = client.post("/v2/rerank", json={"query": "3", "documents": ["d"]})
        assert late.status_code == 504, late.text
        assert "within the 0.5 s deadline" in late.json()["message"], late.text


def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(capsys):
    for value in ("0", "-1", "soon"):
        with pytest.raises(SystemExit) as ended:
            build_parser().parse_args(["serve", "--timeout", value])
        assert ended.value.code == 2
        assert "--timeout: expected a positive number" in capsys.readouterr().err
