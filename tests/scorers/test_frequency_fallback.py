"""A language without its own word-frequency table reads the nearest language's, and every
result says so in its warnings (wordfreq's own one-time log line is not printed); the
table keeps the language it is of; `rerankit cache` lists the tables; the refusal of an
unknown code says where the codes are listed."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import rerankit
from rerankit.cli import main
from rerankit.errors import flags_first
from rerankit.scorers import BM25Scorer
from rerankit.text import check_language
from rerankit.text.frequencies import FrequencyTable

DOCS = ["Rücksendungen sind innerhalb von 30 Tagen möglich.", "Öffnungszeiten Montag."]


def test_a_language_without_a_table_is_said_in_every_results_warnings(caplog):
    pytest.importorskip("wordfreq", reason="needs the 'lexical' extra")
    caplog.set_level(logging.INFO)
    scorer = BM25Scorer(language="xh", idf="background")
    for _ in range(2):  # every time, not once per process
        result = rerankit.rerank("Rücksendung möglich", DOCS, reranker=scorer)
        said = [w for w in result.warnings if "word-frequency" in w]
        assert said == [
            "bm25: no word-frequency table for language 'xh': its idf reads the nearest "
            "language's table, 'en'"
        ]
    assert not [r for r in caplog.records if r.name.startswith("wordfreq")]
    german = rerankit.rerank(
        "Rücksendung", DOCS, reranker=BM25Scorer(language="de", idf="background")
    )
    assert not [w for w in german.warnings if "word-frequency" in w]


def test_a_saved_table_keeps_its_language(tmp_path):
    table = FrequencyTable.from_mapping({"der": 0.03, "und": 0.02}, "de")
    table.save(tmp_path / "t.npz")
    again = FrequencyTable.load(tmp_path / "t.npz")
    assert again.language == "de" and again.get("und") == pytest.approx(0.02)
    assert FrequencyTable.from_mapping({"a": 0.1}).language is None
    assert np.isclose(again.floor, 0.02)


def test_rerankit_cache_lists_the_word_frequency_tables(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "wordfreq"
    FrequencyTable.from_mapping({"der": 0.03}, "de").save(folder / "de-best-abc-v2.npz")
    FrequencyTable.from_mapping({"the": 0.05}, "en").save(folder / "en-best-abc-v2.npz")
    assert main(["cache", "info", "wordfreq"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wordfreq: {folder}, 2 languages: de, en, ")
    assert main(["cache", "clear", "wordfreq"]) == 0
    assert not folder.exists()


def test_an_unknown_code_is_refused_without_saying_every_code_is_taken():
    with pytest.raises(ValueError) as python:
        check_language("xx")
    with flags_first(), pytest.raises(ValueError) as command:
        check_language("xx")
    for said in (str(python.value), str(command.value)):
        assert "taken" not in said and "unknown language 'xx'" in said
    assert "docs/documents.md, Languages, lists them" in str(command.value)
    assert "rerankit.text.LANGUAGES lists them" in str(python.value)
