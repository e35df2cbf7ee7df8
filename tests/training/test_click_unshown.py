"""A click on a document the answer did not show (cut by ``top_n``, or a position on
screen sent for an index): refused by the log writer that wrote the impression, and
counted when a log holds one."""

from __future__ import annotations

import json

import numpy as np

from rerankit.training.clicks import ClickLog, read_log

DOCS = [{"id": f"d{i}", "text": f"text {i}"} for i in range(4)]


def test_the_log_writer_refuses_a_click_on_a_document_it_did_not_show(tmp_path, caplog):
    path = tmp_path / "clicks.jsonl"
    log = ClickLog(path)
    assert log.log_impression("a", "q", DOCS, [2, 0])  # d1 and d3 were not shown
    assert log.log_feedback("a", [0, "d2"])
    assert log.log_feedback("a", [np.int64(2)])  # numpy's integers are indices too
    with caplog.at_level("WARNING", logger="rerankit.training.clicks.log"):
        assert not log.log_feedback("a", [2, 1])
        assert not log.log_feedback("a", ["d3"])
        assert not log.log_feedback("a", [9])
    assert log.write_errors == 3
    assert "clicks[1]: 1 names document 1, which the answer did not show (it showed [0, 2]" in (
        caplog.text
    )
    assert "clicks[0]: 'd3' names document 3, which the answer did not show" in caplog.text
    assert "clicks[0]: 9 names none of the answer's 4 documents" in log.last_error
    # feedback for an impression it did not write is written: the reader counts its clicks
    assert log.log_feedback("b", [1])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["clicks"] for r in records if r["type"] == "feedback"] == [[0, "d2"], [2], [1]]


def test_reading_counts_the_clicks_on_documents_not_shown(tmp_path):
    path = tmp_path / "clicks.jsonl"
    ClickLog(path).log_impression("a", "q", DOCS, [2, 0])
    ClickLog(path).log_feedback("a", [0, 1, "d3"])  # a fresh writer: written unchecked
    sessions, report = read_log(path)
    assert sessions[0].clicked_positions() == [2]
    assert report.unshown_clicks == 2 and report.unknown_clicks == 0
    described = report.describe()
    assert "2 clicks on a document not shown" in described
    assert "feedback a: click 'd3' names document 3, which the impression did not show" in (
        described
    )
