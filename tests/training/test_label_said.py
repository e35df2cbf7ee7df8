"""What ``rerankit label`` says of labels it will not write: a listwise judge's order of no
more candidates than the second ``--positions`` number grades every one relevant (warned
before the work, with what to change), and a failed judgment is "left out", never the
scorer's "scored 0.0" (label writes no label for it), and makes the run exit 3 (partly
labelled; a rerun asks again for the failed ones only)."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fake_judge import cached_judge_file

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.eval.data import load_beir, load_qrels
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.training.labelling import LabelReport, judge_from, label

CHUNKS = re.compile(r"Chunks \(JSON array\):\n(.*)\n\nQuestion", re.S)
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')


def in_order(request):
    """A listwise judge that keeps the order it was given."""
    n = len(json.loads(CHUNKS.search(request.prompt).group(1)))
    answer = {"reranked_indices": list(range(n)), "is_rejected": False, "rejection_reason": ""}
    return Reply(text=json.dumps(answer))


def run_label(collection, judge, out, *extra):
    args = ["label", "--data", str(collection), "--judge", str(judge), "--max-queries", "2"]
    return main([*args, "--out", str(out), "--no-progress", *extra])


def test_a_listwise_judge_of_too_few_candidates_is_warned_of_before_the_work(
    tmp_path, synthetic, monkeypatch, capsys, caplog
):
    collection = synthetic(tmp_path / "data")
    with FakeLLMServer(responder=in_order) as server:
        judge = cached_judge_file(tmp_path, server, monkeypatch, "listwise")
        # --dry-run: warned when the set-up is checked, before anything is spent
        assert (
            run_label(collection, judge, tmp_path / "dry", "--candidates", "10", "--dry-run") == 0
        )
        warning = next(
            line for line in capsys.readouterr().err.splitlines() if "rerankit: warning:" in line
        )
        assert "--candidates 10 with --positions 3,10 grades every candidate 1 or 2" in warning
        assert "no candidate will be labelled not relevant (grade 0)" in warning
        assert "--candidates 20" in warning and "--positions 3,5" in warning
        out = tmp_path / "labelled"
        assert run_label(collection, judge, out, "--candidates", "10") == 0
        err = capsys.readouterr().err
        assert err.index("rerankit: warning: --candidates 10") < err.index("queries, 20 labels")
        grades = {
            g
            for labels in load_qrels(out / "qrels" / "train.tsv").values()
            for g in labels.values()
        }
        assert grades == {1, 2}  # what the warning said
        # more candidates than the second number: grade 0s, and no warning
        assert run_label(collection, judge, tmp_path / "deeper", "--candidates", "12") == 0
        assert "warning" not in capsys.readouterr().err
        made = load_qrels(tmp_path / "deeper" / "qrels" / "train.tsv")
        assert 0 in {g for labels in made.values() for g in labels.values()}
        # label() from Python logs it
        data = load_beir(collection, "train")
        data.queries = dict(list(data.queries.items())[:1])
        ids = {q: list(data.corpus)[:4] for q in data.queries}
        with caplog.at_level(logging.WARNING, logger="rerankit.training.labelling"):
            label(data, ids, judge_from(judge), tmp_path / "py", positions=(1, 4))
        assert "positions (1, 4) grade every one of 4 candidates 1 or 2" in caplog.text


def test_a_pointwise_judge_has_no_positions_to_warn_of(tmp_path, synthetic, monkeypatch, capsys):
    collection = synthetic(tmp_path / "data")
    answer = Reply(text=json.dumps({"score": 8}))
    with FakeLLMServer(responder=lambda r: answer) as server:
        judge = cached_judge_file(tmp_path, server, monkeypatch, "pointwise")
        assert run_label(collection, judge, tmp_path / "o", "--candidates", "3", "--dry-run") == 0
    assert "warning" not in capsys.readouterr().err


def test_failed_judgments_are_said_to_be_left_out_and_the_run_exits_3(
    tmp_path, synthetic, monkeypatch, capsys
):
    collection = synthetic(tmp_path / "data")
    failing = {"on": True}

    def judge(request):
        doc = json.loads(DOC.search(request.prompt).group(1))
        if failing["on"] and doc.endswith("-1"):
            return Reply(text="I think it is fine.")
        return Reply(text=json.dumps({"id": doc, "score": 8}))

    out = tmp_path / "labelled"
    with FakeLLMServer(responder=judge) as server:
        path = cached_judge_file(tmp_path, server, monkeypatch, "pointwise")
        assert run_label(collection, path, out, "--candidates", "5") == 3
        err = capsys.readouterr().err
        report = json.loads((out / "label_report.json").read_text())
        assert report["failed"] > 0 and report["labels"] > 0
        failed = [line for line in err.splitlines() if "label: failed:" in line]
        assert failed and all(
            line.endswith("; left out (no label written for it)") for line in failed
        )
        assert "scored 0.0" not in err
        assert all("left out" in r and "scored 0.0" not in r for r in report["failure_reasons"])
        assert f"{report['failed']} failed judgments were left out (exit 3): run the same" in err
        failing["on"] = False  # the rerun asks again for those, and finishes
        assert run_label(collection, path, out, "--candidates", "5") == 0
        assert json.loads((out / "label_report.json").read_text())["failed"] == 0


@pytest.mark.parametrize("kind", ["pointwise", "listwise"])
def test_a_run_where_every_judgment_failed_says_left_out(
    tmp_path, synthetic, monkeypatch, capsys, kind
):
    collection = synthetic(tmp_path / "data")
    with FakeLLMServer(responder=lambda r: Reply(text="no idea")) as server:
        judge = cached_judge_file(tmp_path, server, monkeypatch, kind)
        assert run_label(collection, judge, tmp_path / "out", "--candidates", "12") == 1
    err = capsys.readouterr().err
    assert "no label written: all" in err and "scored 0.0" not in err and "order kept" not in err
    assert "left out (no label written for" in err


def test_the_same_reason_for_other_documents_is_kept_once():
    report = LabelReport(judge="j", model="m", queries=2)
    said = "no score (unreadable answer: 'I think so'); scored 0.0"
    report.note_failures(
        "q1", [f"document 0 (id 'd1'): {said}", f'document 3 (id "it\'s"): {said}']
    )
    report.note_failures(
        "q2", [f"document 1 (id 'd9'): {said}", "document 2: the answer was cut off"]
    )
    assert len(report.failure_reasons) == 2, report.failure_reasons
    assert report.failure_reasons[0].startswith("query q1: document 0 (id 'd1'): no score")
    assert report.failure_reasons[1] == "query q2: document 2: the answer was cut off"


def test_a_judge_that_fails_every_judgment_of_3_queries_in_a_row_is_asked_no_more(
    tmp_path, synthetic, monkeypatch, capsys
):
    """A judge that went down (or answers nothing readable) after two queries: label stops
    after 3 queries of nothing but failures, where it asked about all 30 (each, on a real
    provider, after its retries and timeouts), and a rerun once it is back goes on."""
    collection = synthetic(tmp_path / "data")
    down = {"after": 2 * 5}

    def judge(request):
        doc = json.loads(DOC.search(request.prompt).group(1))
        if len(server.requests) > down["after"]:
            return Reply(status=500, text="model crashed")
        return Reply(text=json.dumps({"id": doc, "score": 8}))

    out = tmp_path / "labelled"
    args = ["label", "--data", str(collection), "--candidates", "5", "--out", str(out)]
    with FakeLLMServer(responder=judge) as server:
        path = cached_judge_file(tmp_path, server, monkeypatch, "pointwise")
        assert main([*args, "--judge", str(path), "--no-progress"]) == 3
        assert len(server.requests) == 5 * 5  # 2 queries judged, then 3 that all failed
        err = capsys.readouterr().err
        report = json.loads((out / "label_report.json").read_text())
        assert report["labelled_queries"] == 2 and report["failed"] == 15
        assert report["stopped"].startswith(
            "the judge: every judgment of 3 queries in a row failed, so it was asked no more"
        )
        assert "answered HTTP 500: model crashed" in err
        assert "the judgment cache keeps what was judged" in err
        down["after"] = 10**6  # back up: the rerun labels the rest
        assert main([*args, "--judge", str(path), "--no-progress"]) == 0
    assert json.loads((out / "label_report.json").read_text())["labelled_queries"] == 30
