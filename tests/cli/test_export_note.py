"""A model's export to ONNX on first use is said on stderr as it starts: the reader's
one-shot ``rank`` with an empty cache sat silent for 28.7 s (the default hybrid's model
exported) and 40 s with ``-r ./models/my-ce --backend onnx``. The library logs it; the
CLI prints it, once, before the result, and not again once the export is in the cache."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from rerankit.cli import main

NOTE = "rerankit: note: exporting {model} to ONNX for this machine, once"


def _rank(args: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """stdout and stderr of ``rerankit rank ARGS`` in one text, in the order written."""
    both = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", both)
        m.setattr(sys, "stderr", both)
        assert main(["rank", *args]) == 0
    return both.getvalue()


def test_the_first_use_export_is_said_once_before_the_result(bert_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
    pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "freshcache"))
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(["solar", "wind"]))
    )
    args = ["-q", "solar power", "-i", str(docs), "-r", str(bert_dir), "--backend", "onnx"]
    first = _rank([*args, "--top-k", "2"], monkeypatch)
    note = NOTE.format(model=bert_dir)
    assert first.count(note) == 1, first
    lines = first.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith(note))
    results = [i for i, line in enumerate(lines) if line.startswith("{")]
    assert len(results) == 2 and said < min(results)
    assert "later runs start at once" in lines[said]
    second = _rank([*args, "--top-k", "2"], monkeypatch)
    assert "exporting" not in second and second.count("{") == 2


def test_the_export_logger_is_left_as_it_was(tmp_path, monkeypatch):
    """The CLI listens to the library's export log while a command runs, no longer."""
    logger = logging.getLogger("rerankit.backends.export")
    before = (logger.level, list(logger.handlers))
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "solar panels"}\n')
    assert "solar panels" in _rank(["-q", "solar", "-i", str(docs), "-r", "bm25"], monkeypatch)
    assert (logger.level, list(logger.handlers)) == before
