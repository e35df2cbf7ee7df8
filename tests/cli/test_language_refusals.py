"""--language with a model folder is refused with a message about a model (no pipeline
file was given), with a pipeline file by one about the file; rerank()'s TypeError for
language= names the fix."""

from __future__ import annotations

import json

import pytest

import rerankit
from rerankit.cli import main


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


def test_language_with_a_model_folder_or_a_pipeline_file_says_which(tmp_path, capsys):
    docs = tmp_path / "d.jsonl"
    docs.write_text(json.dumps({"text": "a"}) + "\n", encoding="utf-8")
    folder = tmp_path / "model"
    folder.mkdir()
    said = _refused(
        capsys, ["rank", "-q", "x", "-i", str(docs), "-r", str(folder), "--language", "de"]
    )
    assert "in a pipeline file" not in said and "a model reads the languages it learned" in said
    assert 'reranker = { type = "hybrid", model = "EMBEDDING-MODEL", language = "de" }' in said
    spec = tmp_path / "p.toml"
    spec.write_text('reranker = "bm25"\n', encoding="utf-8")
    said = _refused(
        capsys, ["rank", "-q", "x", "-i", str(docs), "-r", str(spec), "--language", "de"]
    )
    assert "give language in the file, on its reranker or scorers" in said


def test_reranks_type_error_for_language_names_the_fix():
    with pytest.raises(TypeError, match=r"HybridReranker\(language=\.\.\.\)"):
        rerankit.rerank("q", ["a"], language="de")
