"""A model folder that holds its config and tokenizer but no weights: ``rerankit check``
says so (a mistake naming the folder and the files looked for), and loading it raises
``ModelLoadError`` saying the same, not the hub-id hint; a cascade does not fall back
around it (a set-up mistake, as docs/pipelines.md says)."""

from __future__ import annotations

import json

import pytest

from rerankit import Pipeline
from rerankit.backends.local import LazyModel
from rerankit.cli.main import main
from rerankit.errors import ModelLoadError
from rerankit.scorers import BM25Scorer, CrossEncoderScorer

LOOKED_FOR = "looked for model.safetensors or pytorch_model.bin"


def weightless(root):
    """A BERT cross-encoder folder copied without its weights."""
    folder = root / "broken-ce"
    folder.mkdir()
    config = {"model_type": "bert", "architectures": ["BertForSequenceClassification"]}
    config |= {"vocab_size": 8, "hidden_size": 8, "num_hidden_layers": 1}
    config |= {"num_attention_heads": 1, "intermediate_size": 8, "num_labels": 1}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nvaccines\n")
    return folder


CASCADE = """name = "cascade"
[[stages]]
name = "lexical"
scorer = { type = "bm25" }
keep = 5
[[stages]]
name = "ce"
scorer = { type = "cross_encoder", model = "broken-ce", backend = "torch" }
"""


def test_check_names_a_model_folder_without_weights_as_a_mistake(tmp_path, capsys):
    folder = weightless(tmp_path)
    pipeline = tmp_path / "cascade.toml"
    pipeline.write_text(CASCADE)
    settings = tmp_path / "service.toml"
    settings.write_text('[pipelines.cascade]\nreranker = "cascade.toml"\n')
    assert main(["check", str(pipeline), str(settings)]) == 1
    out = capsys.readouterr().out
    said = f"pipeline 'cascade': the cross-encoder folder {folder.resolve()} holds no weights ("
    assert f"{pipeline}: {said}" in out, out
    assert f"{settings}: {said}" in out, out
    assert LOOKED_FOR in out and "model.onnx" in out
    assert ": ok:" not in out


@pytest.mark.slow
def test_loading_it_says_which_weight_files_it_looked_for_not_the_hub_hint(tmp_path):
    pytest.importorskip("sentence_transformers", reason="a torch cross-encoder")
    folder = weightless(tmp_path)
    pipe = Pipeline([(BM25Scorer(), 5), CrossEncoderScorer(str(folder), backend="torch")])
    docs = ["vaccines train the immune system", "the stock market fell"]
    with pytest.raises(ModelLoadError) as raised:  # not a degraded fallback
        pipe.rerank("vaccines", docs)
    said = str(raised.value)
    assert f"could not load cross-encoder '{folder}'" in said, said
    assert f"the cross-encoder folder {folder.resolve()} holds no weights" in said, said
    assert LOOKED_FOR in said
    assert "hub id" not in said and "network" not in said, said


def _no_weights() -> None:
    raise OSError("Error no file named model.safetensors, or pytorch_model.bin, found")


def test_a_failed_load_gives_the_hub_hint_for_a_hub_id_only(tmp_path):
    """The hint after a failed load fits what was named: the weight files looked for in a
    folder without them; network access or the cache for a hub id; nothing more for a
    folder that has its weights (its own error says what went wrong)."""
    folder = weightless(tmp_path)
    with pytest.raises(ModelLoadError) as raised:
        LazyModel("cross-encoder", str(folder), _no_weights).get()
    said = str(raised.value)
    assert f"(the cross-encoder folder {folder.resolve()} holds no weights (" in said, said
    assert LOOKED_FOR in said and "hub id" not in said
    with pytest.raises(ModelLoadError, match="a hub id needs network access"):
        LazyModel("cross-encoder", "org/no-such-model", _no_weights).get()
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError) as raised:
        LazyModel("cross-encoder", str(folder), _no_weights).get()
    assert str(raised.value).endswith("found"), raised.value
