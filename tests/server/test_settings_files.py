"""What a settings file says is read as written or refused with a message that names the
fix: environment variables in ``[cache] url``, and a mistyped key."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="needs the 'server' extra")

from fastapi.testclient import TestClient

from rerankit.cli import main
from rerankit.cli.main import build_parser
from rerankit.cli.serve import serve_settings
from rerankit.server import ServerSettings, create_app


def _file(tmp_path, text: str):
    path = tmp_path / "service.toml"
    path.write_text(text)
    return path


def test_environment_variables_in_the_cache_url_are_their_values(tmp_path, monkeypatch):
    """``${NAME}`` in ``[cache] url`` was kept as written: the service started and every
    cache call failed on the host ``${redis_host}``."""
    monkeypatch.setenv("RERANKIT_TEST_REDIS_HOST", "cache.internal")
    monkeypatch.setenv("RERANKIT_TEST_REDIS_PASSWORD", "s3cret")
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    path = _file(
        tmp_path,
        '[pipelines.bm25]\nreranker = "bm25"\n[cache]\n'
        'url = "redis://:${RERANKIT_TEST_REDIS_PASSWORD}@${RERANKIT_TEST_REDIS_HOST}:6379/0"\n',
    )
    wanted = "redis://:s3cret@cache.internal:6379/0"
    assert ServerSettings.from_file(path).cache.resolved_url == wanted
    served = serve_settings(build_parser().parse_args(["serve", "--settings", str(path)]))
    assert served.cache.resolved_url == wanted
    # the mapping worker processes read holds the value: not expanded a second time
    assert ServerSettings.from_mapping(served.to_mapping()).cache.resolved_url == wanted


def test_an_unset_variable_in_the_cache_url_stops_the_service_naming_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("RERANKIT_TEST_REDIS_HOST", raising=False)
    monkeypatch.setenv("RERANKIT_TEST_REDIS_PASSWORD", "s3cret")
    path = _file(
        tmp_path,
        '[pipelines.bm25]\nreranker = "bm25"\n[cache]\n'
        'url = "redis://:${RERANKIT_TEST_REDIS_PASSWORD}@${RERANKIT_TEST_REDIS_HOST}:6379/0"\n',
    )
    with pytest.raises(ValueError, match=r"\[cache\] url .*'RERANKIT_TEST_REDIS_HOST' is not set"):
        ServerSettings.from_file(path)
    assert main(["serve", "--settings", str(path), "--port", "1"]) == 1
    said = capsys.readouterr().err
    assert "[cache] url" in said and "'RERANKIT_TEST_REDIS_HOST' is not set" in said
    assert f"rerankit serve: error: {path}: [cache] url" in said  # said with its file, exit 1
    assert "s3cret" not in said  # a password is not said


@pytest.mark.parametrize("password", ["a/b#c", "pa#ss", "x?y@z", "user:pa/ss"])
def test_a_password_that_breaks_the_url_is_neither_said_nor_left_unexplained(
    tmp_path, monkeypatch, capsys, password
):
    """A secret holding a '/', '#' or '?' (put in the url as it is) cut the url short, and
    the error quoted the url, password and all: `cache url: 'redis://:a/b#c@cache:6379/0'
    names no host`, in a CI log, with no word of what to do."""
    monkeypatch.setenv("RERANKIT_TEST_REDIS_PASSWORD", password)
    path = _file(
        tmp_path,
        '[pipelines.bm25]\nreranker = "bm25"\n[cache]\n'
        'url = "redis://:${RERANKIT_TEST_REDIS_PASSWORD}@cache.internal:6379/0"\n',
    )
    assert main(["serve", "--settings", str(path), "--port", "1"]) == 1
    said = capsys.readouterr().err
    secret = password.split(":")[-1]
    assert secret not in said and secret[1:] not in said and secret[:-1] not in said, said
    assert "redis://***@cache.internal:6379/0" in said, said
    assert "%2F" in said and "%23" in said and "%3F" in said and "%40" in said, said


def test_without_a_cache_url_the_service_reads_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_URL", "redis://cache.internal:6379/0")
    path = _file(tmp_path, '[pipelines.bm25]\nreranker = "bm25"\n')
    settings = ServerSettings.from_file(path)
    assert settings.cache.resolved_url == "redis://cache.internal:6379/0"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (  # a flag's hyphens in the file: the key it means, and every key
            {"server": {"max-documents": 10}},
            "[server] has no key 'max-documents' (did you mean 'max_documents'?); its keys: "
            "default, api_keys,",
        ),
        ({"server": {"max_concurrencyy": 2}}, "(did you mean 'max_concurrency'?); its keys:"),
        (
            {"cache": {"name-space": "a"}},
            "[cache] has no key 'name-space' (did you mean 'namespace'?)",
        ),
        ({"servers": {}}, "a settings file has no table 'servers' (did you mean 'server'?)"),
    ],
)
def test_a_mistyped_settings_key_says_the_one_meant_and_the_keys(spec, said):
    """It said only `[server]: unknown keys ['max-documents']`, where a pipeline file's
    typo says the key meant and its keys."""
    with pytest.raises(ValueError) as raised:
        ServerSettings.from_mapping(spec)
    assert said in str(raised.value)


def test_an_unknown_model_is_404_with_the_name_meant():
    settings = ServerSettings(pipelines={"hybrid": "bm25", "lexical": "bm25"}, default="lexical")
    with TestClient(create_app(settings)) as client:
        answer = client.post(
            "/v2/rerank", json={"model": "hybird", "query": "q", "documents": ["a"]}
        )
        far = client.post("/v2/rerank", json={"model": "zzz", "query": "q", "documents": ["a"]})
    assert answer.status_code == 404
    assert answer.json()["message"].startswith(
        "model 'hybird' not found; did you mean 'hybrid'? available: hybrid, lexical"
    )
    assert far.status_code == 404 and "did you mean" not in far.json()["message"]


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ('"k1,k2"', "expected a list of strings"),  # each character was a key, "k1" was not
        ('[""]', "an empty key would let any request in"),  # the service was open
        ('{a = "TOPSECRET"}', "expected a list of strings"),  # "a" was the key
        ('["k1", 12345]', "entry 2 of 2 is an integer, not a string"),  # other requests got 500s
    ],
)
def test_api_keys_in_a_settings_file_are_a_list_of_keys_or_refused(
    tmp_path, monkeypatch, keys, said
):
    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    path = _file(tmp_path, f'[server]\napi_keys = {keys}\n[pipelines.b]\nreranker = "bm25"\n')
    with pytest.raises(ValueError, match=said):
        ServerSettings.from_file(path)
    with pytest.raises(ValueError, match=said):  # what serve reads, before it listens
        serve_settings(build_parser().parse_args(["serve", "--settings", str(path)]))


def test_a_setting_of_the_wrong_kind_is_named_with_its_kind(tmp_path):
    for line, said in [
        ('max_documents = "lots"', "max_documents must be an integer, got 'lots'"),
        ('timeout = "5"', "timeout must be a number"),
        ("truncate = 1", "truncate must be true or false"),
    ]:
        path = _file(tmp_path, f'[server]\n{line}\n[pipelines.b]\nreranker = "bm25"\n')
        with pytest.raises(ValueError, match=said):
            ServerSettings.from_file(path)
    ok = _file(
        tmp_path, '[server]\ntimeout = 5\napi_keys = ["k1"]\n[pipelines.b]\nreranker = "bm25"\n'
    )
    assert ServerSettings.from_file(ok).timeout == 5


CUT = (
    '[[stages]]\nreranker = "hybrid"\n\n'
    '[[stages]]\nrule = { type = "min_score", threshold = 0.3, keep_at_least = 2 }\n'
)


@pytest.mark.parametrize(
    "declared", ['[pipelines]\nrag = "cut.toml"\n', '[pipelines.rag]\nreranker = "cut.toml"\n']
)
def test_the_settings_model_reaches_a_pipeline_file_as_the_model_flag_does(tmp_path, declared):
    """``[server] model`` moved a pipeline named inline but not one in a file: a torch-free
    image serving cut.toml (integrations.md's threshold) failed on the bundled model's
    missing export, while ``serve --reranker cut.toml --model DIR`` read DIR."""
    (tmp_path / "cut.toml").write_text(CUT)
    (tmp_path / "minilm-onnx").mkdir()
    settings = _file(tmp_path, f'[server]\nmodel = "minilm-onnx"\n\n{declared}')
    spec = ServerSettings.from_file(settings).pipelines["rag"]
    hybrid = spec["stages"][0]["reranker"]
    assert hybrid["type"] == "hybrid" and hybrid["model"] == str(tmp_path / "minilm-onnx")
    assert spec["stages"][1] == {
        "rule": {"type": "min_score", "threshold": 0.3, "keep_at_least": 2}
    }
    flag = serve_settings(
        build_parser().parse_args(
            ["serve", "-r", str(tmp_path / "cut.toml"), "--model", str(tmp_path / "minilm-onnx")]
        )
    )
    assert spec["stages"] == flag.pipelines["cut"]["stages"]  # as the flag has it


def test_a_pipeline_file_the_settings_model_cannot_reach_is_served_as_named(tmp_path):
    """A file with no built-in hybrid or embedding stays the file, as written."""
    (tmp_path / "lex.toml").write_text('reranker = "bm25"\n')
    settings = _file(tmp_path, '[server]\nmodel = "m"\n\n[pipelines]\nlex = "lex.toml"\n')
    assert ServerSettings.from_file(settings).pipelines["lex"] == str(tmp_path / "lex.toml")
