"""A cross-encoder folder saved with ``save_pretrained`` (the model and its tokenizer, the
documented recipe) is loaded with its weights, and the log does not say otherwise."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="the cross-encoder needs the 'torch' extra")
import torch
import transformers

from rerankit.backends.local import NEW_MODEL_LOGGERS, without_new_model_line
from rerankit.scorers import CrossEncoderScorer

LINE = "No modules.json found for"
QUERY = "how do vaccines work"
DOCS = ["vaccines train the immune system", "the stock market fell", "immune cells and vaccines"]


def _direct_logits(folder) -> np.ndarray:
    """The folder's model read by transformers itself, one logit per (query, doc)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    enc = tokenizer([QUERY] * len(DOCS), DOCS, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**enc).logits.numpy()[:, 0]


def test_a_saved_folder_loads_its_weights_without_the_new_model_line(bert_dir, tmp_path, caplog):
    folder = shutil.copytree(bert_dir, tmp_path / "my-ce")  # a folder no test loaded
    caplog.set_level(logging.INFO)
    scores = CrossEncoderScorer(str(folder), device="cpu").score_texts(QUERY, DOCS)
    # sentence-transformers' "initializing a new CrossEncoder model" reads as "your weights
    # were ignored": it is not logged, and the scores are the folder's weights' own
    assert LINE not in caplog.text
    reference = _direct_logits(folder)
    np.testing.assert_allclose(scores, reference, atol=1e-5)
    assert len(set(np.round(reference, 6))) > 1


def test_only_that_line_is_kept_out_and_only_while_rerankit_loads(caplog):
    caplog.set_level(logging.INFO)
    st_logger = logging.getLogger(NEW_MODEL_LOGGERS[0])
    with without_new_model_line(), without_new_model_line():  # nested, as threads may
        st_logger.info("%s ./my-ce, initializing a new CrossEncoder model.", LINE)
        st_logger.warning("%s ./x: a warning still shows", LINE)
        st_logger.info("another line shows")
    st_logger.info("%s ./other: said outside rerankit's loads", LINE)
    said = [r.getMessage() for r in caplog.records if r.name == NEW_MODEL_LOGGERS[0]]
    assert said == [
        f"{LINE} ./x: a warning still shows",
        "another line shows",
        f"{LINE} ./other: said outside rerankit's loads",
    ]
