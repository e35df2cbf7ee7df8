"""A model folder that cannot work as asked is refused before it scores, saying why and what
to do: one saved without its tokenizer, a cross-encoder given as an embedding model, and a
`rerankit export` folder given to torch; and one given as a `Path` loads as its string does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="local models need the 'torch' extra")

from rerankit.cli import main
from rerankit.errors import ConfigError, ModelLoadError
from rerankit.rerankers import FusionReranker, HybridReranker
from rerankit.scorers import BM25Scorer, CrossEncoderScorer, EmbeddingScorer


def _without_tokenizer(model, to):
    """A copy of the folder ``model`` without its tokenizer files (those a tokenizer's
    ``save_pretrained`` writes, and the vocabulary the fixtures write)."""
    patterns = ("tokenizer*", "vocab*", "special_tokens_map.json", "added_tokens.json")
    shutil.copytree(model, to, ignore=shutil.ignore_patterns(*patterns))
    return to


@pytest.fixture(scope="module")
def ce_export(bert_dir, tmp_path_factory):
    """The tiny cross-encoder as `rerankit export` writes it."""
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.export import export

    return export(str(bert_dir), tmp_path_factory.mktemp("ce-onnx"))


def test_a_model_folder_without_its_tokenizer_is_refused_at_load_and_export(
    bert_dir, tiny_st, tmp_path, capsys
):
    bare = str(_without_tokenizer(bert_dir, tmp_path / "ce"))
    said = rf"'{bare}' has no tokenizer.*tokenizer\.save_pretrained\('{bare}'\)"
    with pytest.raises(ModelLoadError, match=said):
        CrossEncoderScorer(bare).score_texts("vaccines", ["vaccines train cells"])
    assert main(["export", bare, "--out", str(tmp_path / "out")]) == 1
    assert "tokenizer.save_pretrained" in capsys.readouterr().err
    assert not (tmp_path / "out" / "model.onnx").exists()
    st = str(_without_tokenizer(tiny_st, tmp_path / "st"))
    with pytest.raises(ModelLoadError, match=r"embedding model folder .* has no tokenizer"):
        EmbeddingScorer(st, backend="torch").model  # noqa: B018 - loads it
    # the folder as it was, tokenizer and all, still loads
    assert CrossEncoderScorer(str(bert_dir)).score_texts("vaccines", ["vaccines"]).shape == (1,)


def test_a_cross_encoder_is_refused_as_the_hybrids_embedding_model(bert_dir, ce_export):
    for folder in (str(bert_dir), str(ce_export)):
        for build in (lambda f: HybridReranker(model=f), EmbeddingScorer):
            with pytest.raises(ConfigError, match=r"is a cross-encoder .*not an embedding model"):
                build(folder)
    with pytest.raises(ConfigError, match=r"FusionReranker\(\[CrossEncoderScorer\(.*BM25Scorer"):
        HybridReranker(model=str(bert_dir))
    # what the message offers runs
    fused = FusionReranker([CrossEncoderScorer(str(bert_dir)), BM25Scorer()])
    assert len(fused.rerank("vaccines", ["vaccines train cells", "stock market"])) == 2


def test_an_export_folder_on_torch_says_to_run_it_on_onnx(bert_dir, ce_export, tmp_path, capsys):
    said = r"is an ONNX export .*backend=\"onnx\".*--backend onnx"
    with pytest.raises(ConfigError, match=said) as caught:
        CrossEncoderScorer(str(ce_export), backend="torch")
    assert str(bert_dir) in str(caught.value)  # the model it was exported from
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "vaccines train cells"}\n')
    argv = ["rank", "-q", "vaccines", "-i", str(docs), "-r", str(ce_export), "--backend", "torch"]
    assert main(argv) == 1
    assert "is an ONNX export" in capsys.readouterr().err


def test_a_model_folder_given_as_a_path_loads_as_its_string_does(bert_dir, ce_export):
    """``reranker=Path(folder)`` is the folder, as ``reranker=str(folder)`` is (it was read
    as a pipeline file: "use a .toml, .yaml, .yml or .json file")."""
    import rerankit

    docs = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells."]
    for folder in (bert_dir, ce_export):
        by_path = rerankit.rerank("how do vaccines work", docs, reranker=Path(folder))
        by_name = rerankit.rerank("how do vaccines work", docs, reranker=str(folder))
        assert [(d.index, d.score) for d in by_path] == [(d.index, d.score) for d in by_name]
        assert by_path.score_scale == "logit" and not by_path.degraded


def test_check_takes_a_model_folder_as_rank_r_does(bert_dir, ce_export, capsys):
    """`rerankit check FOLDER` says what the folder runs and on which backend (it said `use
    a .toml, .yaml, .yml or .json file`), so a torch-free install can check an export."""
    assert main(["check", str(ce_export)]) == 0
    said = capsys.readouterr().out
    assert f"ok: '{ce_export}': cross_encoder" in said and f"runs {ce_export} on onnx" in said
    assert main(["check", str(bert_dir)]) == 0
    assert f"runs {bert_dir} on torch" in capsys.readouterr().out


@pytest.mark.parametrize("fixture", ["bert_dir", "bert2_dir"])
def test_a_saved_sentence_transformers_cross_encoder_gives_predicts_numbers(
    fixture, request, tmp_path
):
    """A folder `CrossEncoder.save_pretrained` wrote (modules.json, its own config files
    beside the model's) is read as a cross-encoder, and `output="sigmoid"` gives
    `predict`'s numbers (the relevant label's softmax for two labels), on torch and from
    its ONNX export, which `RerankerService` serves as it is."""
    import numpy as np
    from sentence_transformers import CrossEncoder

    from rerankit.backends.detect import model_kind
    from rerankit.backends.export import export
    from rerankit.compat import RerankerService

    folder = tmp_path / "my-ce"
    CrossEncoder(str(request.getfixturevalue(fixture))).save_pretrained(str(folder))
    assert (folder / "modules.json").is_file()
    assert model_kind(str(folder)) == ("cross_encoder", {})
    query, docs = "how do vaccines work", ["Vaccine storage needs fridges.", "B and T cells."]
    predicted = CrossEncoder(str(folder)).predict([(query, d) for d in docs])
    if predicted.ndim == 2:  # two labels: both logits
        predicted = np.exp(predicted[:, 1]) / np.exp(predicted).sum(axis=1)
    ours = CrossEncoderScorer(str(folder), output="sigmoid").score_texts(query, docs)
    np.testing.assert_allclose(ours, predicted, atol=1e-6)
    onnx = export(str(folder), tmp_path / "my-ce-onnx")
    exported = CrossEncoderScorer(str(onnx), output="sigmoid").score_texts(query, docs)
    np.testing.assert_allclose(exported, predicted, atol=1e-4)
    served = RerankerService(None, str(onnx)).rerank_results(query, [{"content": d} for d in docs])
    assert [s["content"] for s in served] == [docs[i] for i in np.argsort(-predicted)]


def test_int8_asked_of_a_float32_export_is_refused_by_check_as_loading_refuses_it(
    ce_export, capsys
):
    """`check FOLDER --quantize int8` said ok (`on onnx-int8`) where loading then failed:
    both now say the folder has no int8 file, what it holds, and the export that writes it."""
    with pytest.raises(ModelLoadError) as raised:
        CrossEncoderScorer(str(ce_export), quantize="int8").score_texts("q", ["d"])
    assert str(raised.value).startswith(
        f"{ce_export} has no int8 model (it holds float32 (model.onnx)): run `rerankit export "
    )
    assert f"--quantize int8 --out {ce_export}` where torch is" in str(raised.value)
    assert str(raised.value).endswith("; or leave out --quantize int8 to run its float32 file")
    assert main(["check", str(ce_export), "--quantize", "int8"]) == 1
    assert str(raised.value) in capsys.readouterr().out
    assert main(["check", str(ce_export)]) == 0
