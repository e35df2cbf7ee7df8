"""``rerankit check JUDGE.toml`` in CI, without the provider's key: a warning naming it,
and the check goes on (exit 0), as ``check --help`` says and as a settings file naming
the same judge file already did (it exited 1 for the pipeline file itself)."""

from __future__ import annotations

import pytest

from rerankit.cli.main import main

JUDGES = {
    "openai": ('provider = "openai"\nmodel = "gpt-4o-mini"\n', "no OpenAI API key"),
    "gemini": (
        'provider = "gemini"\nmodel = "gemini-2.0-flash"\nbase_url = "http://127.0.0.1:9"\n',
        "no Gemini API key",
    ),
}


@pytest.fixture
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("provider", sorted(JUDGES))
def test_a_judge_file_without_its_key_is_a_warning_as_in_a_settings_file(
    tmp_path, capsys, no_keys, provider
):
    body, missing = JUDGES[provider]
    judge = tmp_path / "judge.toml"
    judge.write_text(f'[scorer]\ntype = "llm_pointwise"\n{body}')
    settings = tmp_path / "service.toml"
    settings.write_text(f'[pipelines]\nj = "{judge.as_posix()}"\n')
    assert main(["check", str(judge)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{judge}: warning: scorer: {missing}" in out
    assert "(checked without it; rank and serve need it)" in out
    assert f"{judge}: ok: 'judge': llm_pointwise" in out
    # the settings file naming the same judge file: the same verdict
    assert main(["check", str(settings)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{settings}: warning: pipeline 'j': {judge}: scorer: {missing}" in out
    assert f"{settings}: ok: 'j': llm_pointwise" in out


def test_a_judge_file_with_another_mistake_still_fails(tmp_path, capsys, no_keys):
    judge = tmp_path / "judge.toml"
    judge.write_text('[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\ntimeout = 5\n')
    assert main(["check", str(judge)]) == 1
    out = capsys.readouterr().out
    assert "set it in the retry table" in out
    assert "warning" not in out
