"""The cache of ONNX exports made on first use (``backend="onnx"`` given a model that is no
export): one export per model folder, however its path is spelled, and a new one once its
files change; a hub id's by the commit it resolves to (docs/scorers.md, "When an export in
the cache is made again")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rerankit.backends.export import export_folder
from rerankit.backends.manifest import MANIFEST

MODEL = "acme/tiny-ce"


def _model_files(folder: Path, weights: bytes = b"w1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "vocab.txt").write_text("[PAD]\n")
    return folder


def test_one_folder_spelled_three_ways_shares_one_export(tmp_path, monkeypatch):
    _model_files(tmp_path / "bge-like")
    monkeypatch.chdir(tmp_path)
    folders = {
        export_folder(spelled, kind="cross_encoder")
        for spelled in ("bge-like", "./bge-like", str(tmp_path / "bge-like"), "bge-like/")
    }
    assert len(folders) == 1
    (folder,) = folders
    assert folder.name.startswith("bge-like-")  # named after the folder, never hidden


def test_a_folder_of_the_same_name_elsewhere_gets_its_own_export(tmp_path, monkeypatch):
    _model_files(tmp_path / "bge-like")
    _model_files(tmp_path / "other" / "bge-like")
    monkeypatch.chdir(tmp_path)
    here = export_folder("bge-like", kind="cross_encoder")
    monkeypatch.chdir(tmp_path / "other")
    assert export_folder("bge-like", kind="cross_encoder") != here


def test_saving_any_file_of_the_folder_again_moves_its_export(tmp_path):
    model = _model_files(tmp_path / "ce")
    before = export_folder(str(model), kind="cross_encoder")
    assert export_folder(str(model), kind="cross_encoder") == before  # nothing changed
    for name, text in (("model.safetensors", "w2!"), ("config.json", "{}"), ("vocab.txt", "x")):
        (model / name).write_text(text)
        now = export_folder(str(model), kind="cross_encoder")
        assert now != before, name
        before = now
    assert export_folder(str(model), kind="cross_encoder", max_length=64) != before


def _cached_hub_model(hub: Path, commit: str, source: Path) -> Path:
    repo = hub / ("models--" + MODEL.replace("/", "--"))
    shutil.copytree(source, repo / "snapshots" / commit)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return repo


def test_a_hub_id_is_keyed_by_the_commit_main_resolves_to(tmp_path, monkeypatch):
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the local cache says which commit
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    model = _model_files(tmp_path / "files")
    _cached_hub_model(tmp_path / "hub", "a" * 40, model)
    first = export_folder(MODEL, kind="cross_encoder")
    assert first.name.startswith("acme_tiny-ce-")
    assert export_folder(MODEL, kind="cross_encoder") == first
    _cached_hub_model(tmp_path / "hub", "b" * 40, model)  # main moved on
    assert export_folder(MODEL, kind="cross_encoder") != first


@pytest.mark.slow
def test_a_model_saved_again_into_its_folder_is_exported_again(bert_dir, tmp_path, monkeypatch):
    """The reader's case: a second fine-tuning run saves into the same folder; the next
    ``backend="onnx"`` load scores with the new weights (not the first export's), and the
    first export leaves the cache."""
    pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    import torch
    from transformers import AutoModelForSequenceClassification

    from rerankit.backends.export import cached_export
    from rerankit.backends.export_cache import CACHED_FOR
    from rerankit.backends.onnx import OnnxModel, onnx_cache_root
    from rerankit.scorers import CrossEncoderScorer

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "my-ce"
    shutil.copytree(bert_dir, model)
    monkeypatch.chdir(tmp_path)
    pairs = [("how do vaccines work", "vaccines train the immune system"), ("q", "solar panels")]
    first = cached_export("./my-ce", kind="cross_encoder")
    assert json.loads((first / MANIFEST).read_text())["source"] == str(model)
    old = OnnxModel(first).predict(pairs)
    retrained = AutoModelForSequenceClassification.from_pretrained(model)
    with torch.no_grad():
        for weight in retrained.parameters():
            weight.mul_(1.5)
    retrained.save_pretrained(model)  # a second run saves into the same folder
    second = cached_export("my-ce", kind="cross_encoder")
    assert second != first and not first.exists()  # the stale export is gone
    assert not (first.parent / f".{first.name}.lock").exists()  # and its lock file
    made_of = json.loads((second / MANIFEST).read_text())[CACHED_FOR]
    assert made_of["source"] == str(model) and made_of["kind"] == "cross_encoder"
    new = OnnxModel(second).predict(pairs)
    torch_now = CrossEncoderScorer(str(model), backend="torch").logits(pairs[0][0], [pairs[0][1]])
    assert not np.allclose(new, old, atol=1e-3)
    np.testing.assert_allclose(new[:1], torch_now, atol=1e-4)
    assert [p.name for p in onnx_cache_root().iterdir() if not p.name.startswith(".")] == [
        second.name
    ]
    assert os.listdir(second)  # a whole export


def test_the_export_log_line_names_the_folder_the_export_is_read_from(
    bert_dir, tmp_path, monkeypatch, caplog
):
    """The INFO line said the hidden staging folder (``.NAME.PID-HEX``), gone by the time
    anyone read the log; it names the cache's folder, which the next line (the model
    loaded from it) names too."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.export import cached_export

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    with caplog.at_level("INFO", logger="rerankit.backends.export"):
        folder = cached_export(str(bert_dir), kind="cross_encoder")
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("exported ")]
    assert said == [f"exported {bert_dir} (cross_encoder) to {folder}"]
    assert folder.is_dir() and not folder.name.startswith(".")


def _export_made(folder: Path, manifest: dict) -> Path:
    """An export's folder as the cache holds one (its manifest and a weight file)."""
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text(json.dumps({"kind": "cross_encoder", **manifest}))
    (folder / "model.onnx").write_bytes(b"0" * 1000)
    return folder


def test_cache_info_counts_every_export_and_names_what_it_was_made_of(
    tmp_path, monkeypatch, capsys
):
    """``rerankit cache info onnx``: an export of ``./bge-like`` counts and is named by its
    folder's path; one an earlier build made of a ``./`` path (a hidden folder, the
    reader's "0 exports, 5.9 MB") counts too; a hub id's names its commit; a folder
    being written does not count."""
    constants = pytest.importorskip("huggingface_hub.constants")
    from rerankit.cli import main

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    model = _model_files(tmp_path / "bge-like")
    _cached_hub_model(tmp_path / "hub", "c" * 40, model)
    monkeypatch.chdir(tmp_path)
    folder = export_folder("./bge-like", kind="cross_encoder")
    made_of = {"source": str(model), "files": "@x", "kind": "cross_encoder", "max_length": None}
    _export_made(folder, {"source": str(model), "cached_for": made_of})
    hub = export_folder(MODEL, kind="cross_encoder")
    made_of = {"source": MODEL, "revision": "c" * 40, "kind": "cross_encoder", "max_length": None}
    _export_made(hub, {"source": MODEL, "revision": "c" * 40, "cached_for": made_of})
    _export_made(folder.parent / "._bge-like-a33622b46f31", {"source": "./bge-like"})
    _export_made(folder.parent / f".{folder.name}.4242-0123abcd", {"source": "./bge-like"})
    assert main(["cache", "info", "onnx"]) == 0
    out = capsys.readouterr().out
    listed = out.split("3 exports: ")[1]
    for source in (f"{model}, ", f"{MODEL}@{'c' * 12}, ", "./bge-like, "):
        assert listed.count(source) == 1, out
