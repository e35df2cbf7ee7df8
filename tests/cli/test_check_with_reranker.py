"""``rerankit check FILE --reranker X`` checks what ``rerankit serve --settings FILE
--reranker X`` serves, read by serve's own code: a settings file whose ``[server.aliases]``
name the pipeline ``--reranker`` adds (what the service's 404 advises) passes, which
``check FILE`` alone cannot know. And ``serve --help`` says what such a pair serves: the
file's declared pipelines and X, or X alone when the file declares none."""

from __future__ import annotations

import re

import pytest

from rerankit.cli import build_parser, main, serve_settings


@pytest.fixture
def files(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text('name = "mine"\nreranker = "bm25"\n')
    aliases = '[server.aliases]\n"hybrid" = "mine"\n"rerank-v3.5" = "mine"\n'
    (tmp_path / "svc.toml").write_text(aliases)  # no [pipelines]
    (tmp_path / "own.toml").write_text(f'[pipelines]\nfast = "bm25"\n{aliases}')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _served(*flags: str) -> list[str]:
    return list(serve_settings(build_parser().parse_args(["serve", *flags])).pipelines)


def _ok(out: str, name: str) -> list[str]:
    return [line.split("'")[1] for line in out.splitlines() if line.startswith(f"{name}: ok:")]


@pytest.mark.parametrize(
    ("settings", "served"), [("svc.toml", ["mine"]), ("own.toml", ["fast", "mine"])]
)
def test_check_with_reranker_checks_what_serve_serves(capsys, files, settings, served):
    assert main(["check", settings, "--reranker", "mine.toml"]) == 0
    out = capsys.readouterr().out
    assert (
        _ok(out, settings) == served == _served("--settings", settings, "--reranker", "mine.toml")
    )
    assert main(["check", settings, "-r", "mine.toml"]) == 0  # serve's short spelling too
    assert _ok(capsys.readouterr().out, settings) == served


def test_check_without_it_says_how_to_check_the_pair(capsys, files):
    assert main(["check", "svc.toml"]) == 1
    out = capsys.readouterr().out
    assert "svc.toml: aliases: 'hybrid' names pipeline 'mine'" in out
    assert "rerankit check svc.toml --reranker X" in out


def test_check_reranker_needs_a_settings_file_and_a_reranker_that_is_there(capsys, files):
    assert main(["check", "mine.toml", "--reranker", "mine.toml"]) == 2
    assert "--reranker mine.toml goes with the service's settings file" in capsys.readouterr().err
    assert main(["check", "svc.toml", "--reranker", "gone.toml"]) == 2
    assert "gone.toml: no such file (--reranker: a pipeline file)" in capsys.readouterr().err


def test_serve_help_says_a_file_without_pipelines_serves_the_reranker_alone(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    said = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # (wrapped at -)
    assert "with a file that declares no [pipelines], the built-ins are not served beside X" in said
    assert "the built-ins are served only when no pipeline is named" in said
    assert "checks what this serves" in said
