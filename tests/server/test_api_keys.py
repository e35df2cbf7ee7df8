"""API keys follow one rule wherever they are set, and no message repeats one (the
security reader's findings: a mistyped ``api_keys`` printed the secret into CI logs; keys
that can never be sent were accepted; ``api_keys = []`` ran the service open)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from rerankit.cli import main
from rerankit.cli.main import build_parser
from rerankit.cli.serve import serve_settings
from rerankit.server import ServerSettings, create_app

PIPELINE = '[pipelines]\nb = "bm25"\n'


def _check(tmp_path, capsys, server: str) -> tuple[int, str]:
    path = tmp_path / "service.toml"
    path.write_text(f"[server]\n{server}\n{PIPELINE}")
    code = main(["check", str(path)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ('"TOPSECRET"', "got a string of 9 characters"),
        ('[1, "TOPSECRET"]', "entry 1 of 2 is an integer, not a string"),
        ('{TOPSECRET = "x"}', "got a table of 1 entry"),
        ("[]", "an empty list would run the service open"),
        ('["TOPSECRET", " TOPSECRET"]', "entry 2 of 2 starts or ends with a space"),
        ('["TOPSECRET "]', "entry 1 of 1 starts or ends with a space"),
        ('["TOPSECRETé"]', "entry 1 of 1 holds a non-ASCII character"),
        ('["TOP\\tSECRET"]', "entry 1 of 1 holds a control character"),
        ('["TOPSECRET,k2"]', "entry 1 of 1 holds a comma"),
    ],
)
def test_a_bad_api_keys_entry_is_refused_by_position_never_by_value(
    tmp_path, capsys, monkeypatch, keys, said
):
    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    code, out = _check(tmp_path, capsys, f"api_keys = {keys}")
    assert code == 1 and said in out and "SECRET" not in out
    path = tmp_path / "service.toml"
    with pytest.raises(ValueError, match=said) as raised:  # serve reads it the same way
        serve_settings(build_parser().parse_args(["serve", "--settings", str(path)]))
    assert "SECRET" not in str(raised.value)


def test_the_key_variable_follows_the_same_rule(monkeypatch):
    monkeypatch.setenv("RERANKIT_API_KEYS", " k1 , SECRETé ,,")
    with pytest.raises(ValueError, match="key 2 of 2 holds a non-ASCII character") as raised:
        ServerSettings(pipelines={"b": "bm25"}, default="b")
    assert "SECRET" not in str(raised.value)
    monkeypatch.setenv("RERANKIT_API_KEYS", " k1 , a b ,,")  # spaces around: the list's
    assert ServerSettings(pipelines={"b": "bm25"}, default="b").api_keys == ["k1", "a b"]


def test_an_empty_api_key_env_is_named_as_the_files_mistake(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    code, out = _check(tmp_path, capsys, 'api_key_env = ""')
    assert code == 1
    assert "api_key_env: expected the name of an environment variable" in out
    assert "RERANKIT_API_KEYS" not in out
    path = tmp_path / "service.toml"
    with pytest.raises(ValueError, match="api_key_env: expected the name") as raised:
        serve_settings(build_parser().parse_args(["serve", "--settings", str(path)]))
    assert "RERANKIT_API_KEYS" not in str(raised.value)


def test_check_says_whether_the_service_is_open_and_how_many_keys_from_where(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    code, out = _check(tmp_path, capsys, "")
    assert code == 0 and "keys: none in api_keys" in out and "will be open" in out
    assert "$RERANKIT_API_KEYS is not set here" in out
    monkeypatch.setenv("RERANKIT_API_KEYS", "")  # set, but empty: not "not set"
    code, out = _check(tmp_path, capsys, "")
    assert "$RERANKIT_API_KEYS holds no keys here" in out and "is not set here" not in out
    monkeypatch.setenv("RERANKIT_API_KEYS", "k3,k4")
    code, out = _check(tmp_path, capsys, 'api_keys = ["k1"]')
    assert code == 0 and "1 in api_keys, 2 in $RERANKIT_API_KEYS" in out
    assert "will be open" not in out


def test_the_start_line_says_how_many_keys_came_from_where_never_a_key(monkeypatch, caplog):
    monkeypatch.setenv("RERANKIT_API_KEYS", "TOPSECRET3,TOPSECRET1")
    settings = ServerSettings(
        pipelines={"b": "bm25"}, default="b", api_keys=["TOPSECRET1", "TOPSECRET2"]
    )
    with caplog.at_level("INFO", logger="rerankit.server.app"):
        create_app(settings)
    said = [r.getMessage() for r in caplog.records if "API key" in r.getMessage()]
    assert said == [
        "rerankit service: 3 API keys (1 in api_keys, 2 in $RERANKIT_API_KEYS); "
        "every request but the public endpoints needs one"
    ]
    assert "TOPSECRET" not in caplog.text
