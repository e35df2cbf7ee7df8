"""``rerankit check SETTINGS`` in CI, where the secrets and the image's model folders are
not: an unset environment variable the file names, or an unset API key, is a warning
naming it (serve stays strict); a ``timeout`` longer than ``graceful_timeout`` is warned
of as serve warns of it; a model folder that is not here is said, and the pipeline is not
described with scorers and a scale its folder would decide."""

from __future__ import annotations

import pytest

from rerankit.cli.main import main
from rerankit.server.settings import ServerSettings, settings_beside

SETTINGS = """[server]
model = "/no/such/minilm-onnx"
timeout = 60
graceful_timeout = 30
default = "bm25"

[pipelines]
bm25 = "bm25"
hybrid = "hybrid"

[pipelines.judge]
stages = [{ scorer = { type = "llm_pointwise", provider = "openai", model = "gpt-4o-mini" } }]

[cache]
url = "redis://:${RERANKIT_TEST_UNSET_PASSWORD}@redis:6379/0"
"""


@pytest.fixture
def no_secrets(monkeypatch):
    for name in ("RERANKIT_TEST_UNSET_PASSWORD", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_check_warns_of_what_ci_lacks_and_still_passes(tmp_path, capsys, no_secrets):
    settings = tmp_path / "service.toml"
    settings.write_text(SETTINGS)
    assert main(["check", str(settings)]) == 0
    got = capsys.readouterr()
    err = " ".join(got.out.split())
    assert (
        f"{settings}: warning: [cache] url: the environment variable "
        "'RERANKIT_TEST_UNSET_PASSWORD' is not set here" in err
    )
    assert f"{settings}: warning: pipeline 'judge': stages[0].scorer: no OpenAI API key" in err
    assert f"{settings}: ok: 'judge': llm_pointwise" in got.out
    # serve's own warning, from the same check
    assert f"{settings}: warning: deadline (60 s) is longer than graceful_timeout (30 s)" in err
    # the folder is said, and the hybrid is not described with a scale it may not have
    assert "model '/no/such/minilm-onnx': no such folder here" in err
    hybrid = next(line for line in got.out.splitlines() if "'hybrid'" in line)
    assert "scores" not in hybrid.replace("its scorers and scale", "")
    assert "model '/no/such/minilm-onnx' is not here" in hybrid
    assert f"{settings}: ok: 'bm25': bm25 (bm25); scores relative" in got.out


def test_serve_still_refuses_an_unset_variable(tmp_path, no_secrets):
    with pytest.raises(ValueError, match="'RERANKIT_TEST_UNSET_PASSWORD' is not set"):
        settings_beside(
            {"cache": {"url": "redis://:${RERANKIT_TEST_UNSET_PASSWORD}@r/0"}}, tmp_path
        )


def test_a_timeout_within_the_graceful_timeout_is_not_warned_of(tmp_path, capsys):
    settings = tmp_path / "service.toml"
    settings.write_text('[server]\ntimeout = 10\n\n[pipelines]\nbm25 = "bm25"\n')
    assert ServerSettings(timeout=10).graceful_timeout >= 10
    assert main(["check", str(settings)]) == 0
    assert "graceful_timeout" not in capsys.readouterr().out


@pytest.mark.parametrize("empty", [False, True])
def test_an_api_key_variable_ci_lacks_is_a_warning_and_the_rest_is_checked(
    tmp_path, capsys, monkeypatch, empty
):
    """The on-call reader's file: ``api_key_env`` naming a secret CI lacks (or an empty
    ``RERANKIT_API_KEYS``) stopped check with exit 1 before any pipeline was checked."""
    monkeypatch.delenv("RERANKIT_TEST_PROD_KEYS", raising=False)
    if empty:
        monkeypatch.setenv("RERANKIT_API_KEYS", "")
        server, key, state = "", "api_keys", "is set here but holds no keys"
    else:
        monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
        server = 'api_key_env = "RERANKIT_TEST_PROD_KEYS"\n'
        key, state = "api_key_env", "is not set here"
    settings = tmp_path / "service.toml"
    settings.write_text(
        f'[server]\n{server}default = "bm25"\n\n[pipelines]\nbm25 = "bm25"\n\n'
        '[pipelines.cascade]\nstages = [{ scorer = { type = "bm25" }, kep = 30 }]\n'
    )
    assert main(["check", str(settings)]) == 1  # the pipeline's mistake, not the key
    lines = capsys.readouterr().out.splitlines()
    variable = "RERANKIT_API_KEYS" if empty else "RERANKIT_TEST_PROD_KEYS"
    assert lines[0].startswith(
        f"{settings}: warning: {key}: the environment variable {variable!r} {state}"
    )
    assert lines[1] == f"{settings}: ok: 'bm25': bm25 (bm25); scores relative"
    assert "no key 'kep' (did you mean 'keep'?)" in lines[2]
    settings.write_text(settings.read_text().replace("kep", "keep"))
    assert main(["check", str(settings)]) == 0  # a correct file passes without the secret


def test_serve_still_refuses_an_api_key_variable_that_is_not_set(monkeypatch):
    monkeypatch.delenv("RERANKIT_TEST_PROD_KEYS", raising=False)
    with pytest.raises(ValueError, match=r"api_key_env: \$RERANKIT_TEST_PROD_KEYS is not set"):
        ServerSettings.from_mapping(
            {"server": {"api_key_env": "RERANKIT_TEST_PROD_KEYS"}, "pipelines": {"b": "bm25"}}
        )
