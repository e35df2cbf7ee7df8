"""``rerankit serve --deadline SECONDS``: each request's deadline, overriding the settings
file's ``[server] deadline`` as ``--graceful-timeout`` overrides its key (``--timeout`` was
refused with a misleading "did you mean --graceful-timeout?"). Named as ``rank --deadline``
and ``deadline=`` name the same bound; ``--timeout`` and ``timeout``, the earlier names,
still work."""

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


def test_the_deadline_flag_overrides_the_files_deadline_and_sets_it(tmp_path, wait_ready):
    path = tmp_path / "service.toml"
    parse = build_parser().parse_args
    served = ["serve", "--settings", str(path), "-r", "test-sleepy-deadline"]
    # the key and the flag by either name: deadline, or timeout, its earlier name
    for key in ("deadline", "timeout"):
        path.write_text(f"[server]\n{key} = 30\ngraceful_timeout = 40\n")
        assert serve_settings(parse(served)).timeout == 30
        for flag in ("--deadline", "--timeout"):
            settings = serve_settings(parse([*served, flag, "0.5"]))
            assert (settings.timeout, settings.graceful_timeout) == (
                0.5,
                40,
            )  # the others: the file's
    with TestClient(create_app(settings)) as client:
        wait_ready(client)
        quick = client.post("/v2/rerank", json={"query": "0", "documents": ["d"]})
        assert quick.status_code == 200, quick.text
        late = client.post("/v2/rerank", json={"query": "3", "documents": ["d"]})
        assert late.status_code == 504, late.text
        assert "within the 0.5 s deadline" in late.json()["message"], late.text


def test_a_deadline_that_is_not_a_positive_number_is_a_usage_error(capsys):
    for flag in ("--deadline", "--timeout"):
        for value in ("0", "-1", "soon"):
            with pytest.raises(SystemExit) as ended:
                build_parser().parse_args(["serve", flag, value])
            assert ended.value.code == 2
            assert f"{flag}: expected a positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ended:  # both spellings: which would win?
        build_parser().parse_args(["serve", "--deadline", "2", "--timeout", "3"])
    assert ended.value.code == 2
    said = capsys.readouterr().err
    assert (
        "--deadline and --timeout are two spellings of one flag: give it once, as --deadline"
        in said
    )


def test_the_settings_deadline_is_named_deadline_and_timeout_still_works():
    from rerankit.server.settings import ServerSettings

    assert ServerSettings.from_mapping({"server": {"deadline": 5}}).timeout == 5
    assert ServerSettings.from_mapping({"server": {"timeout": 5}}).timeout == 5
    with pytest.raises(ValueError, match="has deadline and its earlier name timeout"):
        ServerSettings.from_mapping({"server": {"deadline": 5, "timeout": 5}})
    for value in ("soon", 0, -1, True):
        with pytest.raises(ValueError, match="deadline must be a positive number of seconds"):
            ServerSettings.from_mapping({"server": {"deadline": value}})


def test_an_unknown_server_key_lists_deadline_not_its_earlier_name():
    """It listed ``timeout`` among [server]'s keys, the field's name, not the key's."""
    from rerankit.server.settings import ServerSettings

    with pytest.raises(ValueError) as raised:
        ServerSettings.from_mapping({"server": {"deadlin": 5}})
    said = str(raised.value)
    assert "[server] has no key 'deadlin' (did you mean 'deadline'?); its keys: " in said
    keys = said.split("its keys: ")[1].split(", ")
    assert "deadline" in keys and "timeout" not in keys, keys
    assert "graceful_timeout" in keys


def test_a_413_for_too_much_work_says_raise_the_services_deadline():
    """It said "more than the 2 s timeout ... or raise the service's timeout", a name the
    settings no longer give the bound."""
    from rerankit.server.shedding import too_big

    said = too_big("hybrid", 0.072, 60, 2.0).message
    assert "more than the 2 s deadline: send at most about 22 documents" in said, said
    assert "(what 80% of the deadline holds at that rate)" in said
    assert said.endswith("or raise the service's deadline"), said
    asked = too_big("hybrid", 0.072, 60, 2.0, asked=True).message
    assert "more than the 2 s deadline its x-rerankit-timeout header set" in asked, asked
    assert asked.endswith("or a longer x-rerankit-timeout"), asked


def test_a_bad_x_rerankit_timeout_says_at_most_the_services_deadline():
    from rerankit.errors import ServiceError
    from rerankit.server.request_timeout import asked_timeout

    with pytest.raises(ServiceError) as raised:
        asked_timeout("soon", 30.0)
    said = raised.value.message
    assert said.endswith("(the request's deadline, at most the service's deadline, 30 s)"), said
    assert raised.value.status == 400
