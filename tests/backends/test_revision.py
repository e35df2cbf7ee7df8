"""``revision`` pins a hub model to a branch, tag or commit: it reaches the loaders (read
here from a local Hugging Face cache laid out as the hub client keeps it, offline), keys
the ONNX export and the embedding cache, and is refused where it cannot apply; a local
folder spelled like the hub id wins over the hub and ignores it, with a warning."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from rerankit.backends.export import export_folder

MODEL = "acme/pinned-ce"
MAIN, PINNED = "a" * 40, "b" * 40
QUERY = "how do vaccines work"
DOCS = ["vaccines train the immune system", "the stock market fell", "a virus"]


@pytest.fixture
def hub_cache(bert_dir, bert2_dir, tmp_path, monkeypatch):
    """A Hugging Face cache holding ``MODEL`` at two commits: ``main`` is ``bert_dir``, the
    tag ``v2`` (and commit ``PINNED``) is ``bert2_dir``; the hub is not asked."""
    constants = pytest.importorskip("huggingface_hub.constants")
    repo = tmp_path / "hub" / ("models--" + MODEL.replace("/", "--"))
    shutil.copytree(bert_dir, repo / "snapshots" / MAIN)
    shutil.copytree(bert2_dir, repo / "snapshots" / PINNED)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(MAIN)
    (repo / "refs" / "v2").write_text(PINNED)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)  # no folder named acme/pinned-ce here
    return repo


def test_a_revision_loads_that_commit_of_a_hub_model(hub_cache, bert_dir, bert2_dir):
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    from rerankit.errors import ModelLoadError
    from rerankit.scorers import CrossEncoderScorer

    def scores(model, **options):
        return CrossEncoderScorer(model, device="cpu", **options).score_texts(QUERY, DOCS)

    np.testing.assert_allclose(scores(MODEL), scores(str(bert_dir)), atol=1e-6)
    pinned = scores(str(bert2_dir))
    np.testing.assert_allclose(scores(MODEL, revision="v2"), pinned, atol=1e-6)
    with pytest.raises(ModelLoadError, match=f"could not load cross-encoder '{MODEL}' at revision"):
        scores(MODEL, revision="no-such-tag")


def test_a_revision_keys_the_onnx_export_and_the_embedding_cache(hub_cache):
    from rerankit.scorers import EmbeddingScorer

    main = export_folder(MODEL, kind="cross_encoder")
    assert export_folder(MODEL, kind="cross_encoder", revision="main") == main
    pinned = export_folder(MODEL, kind="cross_encoder", revision="v2")
    assert pinned != main
    assert export_folder(MODEL, kind="cross_encoder", revision=PINNED) == pinned
    keys = {EmbeddingScorer(MODEL, revision=r, cache=False).model_key for r in (None, "v2")}
    assert len(keys) == 2


def test_revision_is_a_pipeline_option_and_bad_values_are_refused(tmp_path):
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    import rerankit
    from rerankit.cache import pipeline_fingerprint
    from rerankit.scorers import CrossEncoderScorer

    spec = {"scorer": {"type": "cross_encoder", "model": MODEL, "revision": "v2"}}
    (scorer,) = rerankit.load(spec).scorers()
    assert scorer.revision == "v2"
    unpinned = rerankit.load({"scorer": {"type": "cross_encoder", "model": MODEL}})
    assert pipeline_fingerprint("p", rerankit.load(spec)) != pipeline_fingerprint("p", unpinned)
    for bad in ("", " v2", 2):
        with pytest.raises(ValueError, match="revision must be a branch, tag or commit"):
            CrossEncoderScorer(MODEL, revision=bad)
    with pytest.raises(ValueError, match="revision applies to a model named by a hub id"):
        CrossEncoderScorer(object(), revision="v2")


def test_a_local_folder_spelled_like_the_hub_id_wins_and_ignores_the_revision(
    hub_cache, bert2_dir, caplog
):
    pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
    from rerankit.scorers import CrossEncoderScorer

    shutil.copytree(bert2_dir, Path(MODEL))  # ./acme/pinned-ce beside the cache's
    caplog.set_level(logging.WARNING, logger="rerankit")
    got = CrossEncoderScorer(MODEL, device="cpu", revision=MAIN).score_texts(QUERY, DOCS)
    want = CrossEncoderScorer(str(bert2_dir), device="cpu").score_texts(QUERY, DOCS)
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert f"revision {MAIN!r} is ignored: {MODEL} is a local folder" in caplog.text


@pytest.mark.slow
def test_an_onnx_export_of_a_pinned_revision_is_that_commit(hub_cache, bert2_dir, tmp_path):
    pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.manifest import read_manifest
    from rerankit.scorers import CrossEncoderScorer

    onnx = CrossEncoderScorer(MODEL, backend="onnx", revision="v2")
    got = onnx.score_texts(QUERY, DOCS)
    want = CrossEncoderScorer(str(bert2_dir), device="cpu").score_texts(QUERY, DOCS)
    np.testing.assert_allclose(got, want, atol=1e-4)
    manifest = read_manifest(onnx.model.path)
    assert manifest["revision"] == PINNED and manifest["cached_for"]["revision"] == PINNED
