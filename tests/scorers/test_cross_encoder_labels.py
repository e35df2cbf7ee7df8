"""A two-label cross-encoder is scored on the label its config.json names relevant
(``id2label``), on torch and ONNX Runtime alike; names that say neither keep label 1, and
the log says so (docs/scorers.md, "Two-label models")."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

from rerankit.backends.labels import relevant_label

QUERY = "how do vaccines work"
DOCS = ["vaccines train the immune system", "the stock market fell", "immune cells", "a virus"]


@pytest.mark.parametrize(
    ("names", "relevant"),
    [
        ({0: "irrelevant", 1: "relevant"}, 1),
        ({0: "relevant", 1: "irrelevant"}, 0),
        ({"0": "Relevant", "1": "Not_Relevant"}, 0),  # as config.json keeps them: strings
        ({0: "positive", 1: "negative"}, 0),
        ({0: "YES", 1: "no"}, 0),
        ({0: "true", 1: "false"}, 0),
        ({0: "no", 1: "yes"}, 1),
        ({0: "LABEL_0", 1: "LABEL_1"}, 1),
        ({0: "entailment", 1: "contradiction"}, 1),  # not relevance: the default order
        ({0: "relevant", 1: "relevant"}, 1),
        ({0: "relevant", 1: "maybe"}, 1),
        ({0: "relevant"}, 1),
        (None, 1),
    ],
)
def test_the_relevant_label_is_label_0_only_when_the_names_say_so_plainly(names, relevant):
    assert relevant_label(names) == relevant


def _labelled(source, folder, names):
    """A copy of the two-label model ``source`` whose config.json names its labels ``names``."""
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {str(i): name for i, name in enumerate(names)}
    config["label2id"] = {name: i for i, name in enumerate(names)}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _direct_logits(folder) -> np.ndarray:
    """Both logits of each (query, document) pair, read by transformers itself."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        enc = tokenizer([QUERY] * len(DOCS), DOCS, padding=True, return_tensors="pt")
        return model(**enc).logits.numpy()


def test_a_model_whose_label_0_is_relevant_ranks_the_right_way_round(bert2_dir, tmp_path, caplog):
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    from rerankit.scorers import CrossEncoderScorer

    usual = _labelled(bert2_dir, tmp_path / "usual", ["irrelevant", "relevant"])
    flipped = _labelled(bert2_dir, tmp_path / "flipped", ["relevant", "irrelevant"])
    caplog.set_level(logging.INFO, logger="rerankit")
    scorer = CrossEncoderScorer(str(flipped), device="cpu")
    scores = scorer.score_texts(QUERY, DOCS)
    np.testing.assert_allclose(
        scores, -CrossEncoderScorer(str(usual), device="cpu").score_texts(QUERY, DOCS), atol=1e-6
    )
    assert scorer.relevant_label == 0
    assert "names label 0 'relevant' and label 1 'irrelevant'" in caplog.text
    logits = _direct_logits(flipped)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    sigmoid = CrossEncoderScorer(str(flipped), device="cpu", output="sigmoid")
    np.testing.assert_allclose(sigmoid.score_texts(QUERY, DOCS), softmax[:, 0], atol=1e-6)


def test_an_export_keeps_the_labels_and_scores_the_same_label(bert2_dir, tmp_path):
    pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    from rerankit.backends.onnx import export
    from rerankit.scorers import CrossEncoderScorer

    flipped = _labelled(bert2_dir, tmp_path / "flipped", ["relevant", "irrelevant"])
    out = export(str(flipped), tmp_path / "flipped-onnx", kind="cross_encoder")
    onnx = CrossEncoderScorer(str(out), backend="onnx")
    np.testing.assert_allclose(
        onnx.score_texts(QUERY, DOCS),
        CrossEncoderScorer(str(flipped), device="cpu").score_texts(QUERY, DOCS),
        atol=1e-4,
    )
    assert onnx.relevant_label == 0


def test_names_that_say_neither_keep_label_1_and_the_log_says_so(bert2_dir, tmp_path, caplog):
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    from rerankit.scorers import CrossEncoderScorer

    nli = _labelled(bert2_dir, tmp_path / "nli", ["entailment", "contradiction"])
    caplog.set_level(logging.INFO, logger="rerankit")
    scorer = CrossEncoderScorer(str(nli), device="cpu")
    scorer.score_texts(QUERY, DOCS)
    assert scorer.relevant_label == 1
    (said,) = [r for r in caplog.records if "do not say which is relevant" in r.getMessage()]
    assert said.levelno == logging.WARNING and "label 1 ('contradiction')" in said.getMessage()


@pytest.mark.parametrize(
    "config",
    [
        {"id2label": {"0": "no", "1": "yes"}, "num_labels": 2},
        {"id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"}},  # no count
        {"num_labels": 1},
        {"id2label": {"0": "a", "2": "b"}, "num_labels": 3},  # names not numbered 0, 1, ...
        {},
    ],
)
def test_a_models_labels_are_read_alike_from_its_files_and_once_loaded(tmp_path, config):
    """One reader of what a cross-encoder records of its labels: a folder's config.json (read
    before loading, by ``rerankit check``), an export's manifest and a loaded model's config
    give the same labels and the same count."""
    from types import SimpleNamespace

    from rerankit.backends.labels import declared_label_count, loaded_label_count, loaded_labels
    from rerankit.backends.manifest import MANIFEST

    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    declared = declared_label_count(str(tmp_path))
    loaded = SimpleNamespace(config=SimpleNamespace(**config))  # as transformers holds it
    export = SimpleNamespace(manifest=dict(config))  # an ONNX export's session
    assert loaded_label_count(loaded) == loaded_label_count(export) == declared
    assert loaded_labels(loaded) == loaded_labels(export) == config.get("id2label")
    (tmp_path / MANIFEST).write_text(json.dumps(config), encoding="utf-8")
    assert declared_label_count(str(tmp_path)) == declared
