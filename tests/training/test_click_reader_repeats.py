"""A click log that holds an answer id twice (an example run twice into one log), and
clicks naming by id a document whose id other documents of the answer share: the reader
counts what it leaves out, says which copy it kept and where the others are, in its
report, its log and what ``interleave-report`` prints."""

from __future__ import annotations

import json
import logging

from rerankit.cli import main
from rerankit.training.clicks import ClickLog, read_log

DOCS = [{"id": "x"}, {"id": "y"}]


def _run(path, query: str, answers: int = 3) -> None:
    """One run of a script that logs ``answers`` interleaved answers, ids ``s0``, ``s1``..."""
    log = ClickLog(path, store="id")
    for s in range(answers):
        log.log_impression(
            f"s{s}", query, DOCS, [0, 1], interleaving={"pipelines": ["a", "b"], "teams": [0, 1]}
        )
        log.log_feedback(f"s{s}", [s % 2])
    log.close()


def test_a_repeated_answer_id_keeps_the_first_impression_and_says_where_the_others_are(
    tmp_path, caplog
):
    path = tmp_path / "clicks.jsonl"
    _run(path, "first run")
    _run(path, "second run")  # the same ids again, appended
    with caplog.at_level(logging.WARNING, logger="rerankit.training.clicks.reader"):
        sessions, report = read_log(path)
    assert [s.impression.query for s in sessions] == ["first run"] * 3  # the first kept
    assert report.impressions == 3 and report.duplicate_impressions == 3
    # each copy left out is named, with its file and line, and the one kept
    assert report.problems[0] == (
        f"impression 's0' ({path}, line 7) repeats the id of an earlier one ({path}, line 1): "
        "left out (the first kept)"
    )
    assert "3 impressions repeating an earlier one's id (the first kept)" in report.describe()
    (logged,) = [r.getMessage() for r in caplog.records if r.name.endswith("reader")]
    assert logged.startswith(f"{path}: 3 impressions left out: an earlier impression has the")
    assert "the first of each id is kept" in logged


def test_interleave_report_prints_and_counts_the_repeats(tmp_path, capsys):
    path = tmp_path / "clicks.jsonl"
    _run(path, "q")
    _run(path, "q")
    assert main(["interleave-report", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "3 impressions repeating an earlier one's id (the first kept)" in printed
    assert f"({path}, line 7)" in printed
    assert main(["interleave-report", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["read"]["duplicate_impressions"] == 3


def test_a_click_by_an_id_several_documents_share_is_counted_and_left_out(tmp_path):
    path = tmp_path / "clicks.jsonl"
    # written by hand, as a log from another system (ClickLog refuses such feedback)
    records = [
        {"type": "impression", "id": "r1", "query": "q", "shown": [0, 1, 2],
         "documents": [{"id": "a"}, {"id": "b"}, {"id": "a"}]},
        {"type": "feedback", "id": "r1", "clicks": ["a", "b", 2]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (session,), report = read_log(path)
    assert session.clicks == (1, 2)  # 'b' and the index; not 'a', which names two
    assert report.ambiguous_clicks == 1
    assert "1 click by an id several documents share" in report.describe()
    assert "feedback r1: click 'a' is the id of several of its documents" in report.problems[0]
    # ClickLog, which checks what it wrote, refuses the record at once
    log = ClickLog(tmp_path / "checked.jsonl", store="id")
    log.log_impression("r1", "q", [{"id": "a"}, {"id": "b"}, {"id": "a"}], [0, 1, 2])
    assert log.log_feedback("r1", ["a"]) is False
    assert "'a' is the id of documents [0, 2] of the answer" in str(log.last_error)
    assert log.log_feedback("r1", [2]) is True
    log.close()
