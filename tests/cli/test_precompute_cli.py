"""``rerankit precompute``: its summary, a second run finding everything in the cache, its
refusal to keep vectors nowhere, and a pipeline with nothing to keep."""

from __future__ import annotations

import json

import pytest

import rerankit
from rerankit.cli import main
from rerankit.scorers.recipe import HYBRID_CALIBRATION


@pytest.fixture
def files(tmp_path, tiny_st):
    """A pipeline file (the calibrated hybrid on the tiny model) and a corpus with titles."""
    pipeline = tmp_path / "pipeline.json"
    hybrid = {"type": "hybrid", "model": str(tiny_st), "calibration": HYBRID_CALIBRATION}
    pipeline.write_text(json.dumps({"reranker": hybrid}), encoding="utf-8")
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"id": i, "headline": f"Panel {i}", "body": " ".join(["solar panels work"] * (i * 9 + 1))}
        for i in range(6)
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return pipeline, corpus


def test_the_summary_then_a_second_run_finds_everything_in_the_cache(files, tmp_path, capsys):
    pipeline, corpus = files
    store = tmp_path / "vectors.sqlite"
    argv = ["precompute", "-i", str(corpus), "-r", str(pipeline), "--embedding-cache", str(store)]
    argv += ["--text-field", "body", "--title-field", "headline", "--batch-size", "2"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert f"{pipeline}: 6 documents read" in first
    assert "texts encoded: " in first and "(6 whole documents, " in first
    assert "already in the cache: 0" in first and f"vectors kept in: {store}" in first
    encoded = int(first.split("texts encoded: ")[1].split()[0])
    assert encoded > 6  # the long documents' passages too
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert "texts encoded: 0 (0 whole documents, 0 passages)" in second
    assert f"already in the cache: {encoded}" in second


def test_nowhere_to_keep_them_is_refused_saying_how_to_name_a_place(files, capsys):
    pipeline, corpus = files
    assert main(["precompute", "-i", str(corpus), "-r", str(pipeline), "--text-field", "body"]) == 1
    said = capsys.readouterr().err
    assert "in memory only, which would be thrown away" in said
    assert "--embedding-cache FILE" in said and "RERANKIT_CACHE_URL" in said
    with pytest.raises(SystemExit) as exited:
        main(["precompute", "-i", str(corpus), "--no-embedding-cache"])
    assert exited.value.code == 2
    assert "name where with --embedding-cache FILE" in capsys.readouterr().err


def test_a_pipeline_with_nothing_to_keep_says_so_and_exits_0(files, capsys):
    _, corpus = files
    assert main(["precompute", "-i", str(corpus), "-r", "bm25"]) == 0
    assert "bm25: nothing to precompute: it keeps no work per document" in capsys.readouterr().out


def test_the_settings_file_and_a_cache_file_are_not_given_together(files, tmp_path, capsys):
    _, corpus = files
    service = tmp_path / "service.toml"
    service.write_text('[pipelines]\nlexical = "bm25"\n', encoding="utf-8")
    argv = ["precompute", "-i", str(corpus), "--settings", str(service)]
    assert main([*argv, "--embedding-cache", str(tmp_path / "x.sqlite")]) == 2
    assert "--settings" in capsys.readouterr().err
    assert main(argv) == 0
    assert "lexical: nothing to precompute" in capsys.readouterr().out


def test_a_cache_that_cannot_be_reached_is_an_error_saying_so(
    files, nothing_listening_url, monkeypatch, capsys
):
    pipeline, corpus = files
    monkeypatch.setenv("RERANKIT_CACHE_URL", nothing_listening_url)
    argv = ["precompute", "-i", str(corpus), "-r", str(pipeline), "--text-field", "body"]
    assert main(argv) == 1
    said = capsys.readouterr().out
    assert "  1 call to the cache failed: those vectors were not kept" in said, said


def test_documents_longer_than_the_passages_read_are_said_once_as_a_rerank_warns(
    files, tmp_path, capsys
):
    pipeline, _ = files
    long_text = " ".join(f"word{i}" for i in range(1200))  # more than 16 passages of 48 words
    corpus = tmp_path / "long.jsonl"
    rows = [{"id": "long", "text": long_text}, {"id": "short", "text": "solar panels"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = tmp_path / "vectors.sqlite"
    argv = ["precompute", "-i", str(corpus), "-r", str(pipeline), "--embedding-cache", str(store)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    said = "1 document longer than 16 passages of 48 words: read on its first 16, as every "
    said += "rerank reads it"
    assert said in out, out
    ranked = rerankit.load(str(pipeline)).rerank("solar", [long_text, "solar panels"])
    assert any("longer than 16 passages" in w for w in ranked.warnings)  # what it stands for
