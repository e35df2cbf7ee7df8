"""``rerankit check --clicks LOG``: a click log checked before ``tune --clicks``."""

from __future__ import annotations

import json

from rerankit.cli import main


def _log(path, queries, *, clicked=None, bad=False):
    """A log of ``queries`` impressions with texts, the first ``clicked`` clicked."""
    with open(path, "w", encoding="utf-8") as out:
        for q in range(queries):
            docs = [{"id": f"d{q}-{i}", "text": f"document {i} of query {q}"} for i in range(3)]
            imp = {"type": "impression", "id": f"a{q}", "query": f"query {q}", "documents": docs,
                   "shown": [0, 1, 2]}  # fmt: skip
            out.write(json.dumps(imp) + "\n")
            if q < (queries if clicked is None else clicked):
                out.write(json.dumps({"type": "feedback", "id": f"a{q}", "clicks": [1]}) + "\n")
        if bad:
            out.write('{"type": "feedback", "id": \n')
    return path


def test_a_good_log_is_ok_and_says_how_to_learn_from_it(tmp_path, capsys):
    log = _log(tmp_path / "clicks.jsonl", 5)
    assert main(["check", "--clicks", str(log)]) == 0
    out = capsys.readouterr().out
    assert "read 1 file: 5 impressions, 5 feedback records" in out
    assert "learning would read 5 sessions of 5 queries (5 with a click)" in out
    # enough to run, far too few for a verdict: said before tune --clicks is run on it
    assert "warning: 5 sessions are far too few for learning's verdict: tune --clicks keeps" in out
    # the command as the pages give it, and simulate-clicks prints it: the file they name
    assert out.rstrip().endswith(
        f"ok: learn from it with rerankit tune --clicks {log} --out learned.toml"
    )


def test_a_bad_line_or_too_few_clicks_is_a_mistake_exit_1(tmp_path, capsys):
    bad = _log(tmp_path / "bad.jsonl", 5, bad=True)
    assert main(["check", "--clicks", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "mistake: 1 bad line" in out and f"{bad}:11: " in out and "ok:" not in out
    thin = _log(tmp_path / "thin.jsonl", 8, clicked=2)
    assert main(["check", "--clicks", str(thin)]) == 1
    out = capsys.readouterr().out
    assert "2 of the 8 queries have a click" in out and "needs at least 4" in out


def test_check_clicks_usage_errors(tmp_path, capsys):
    log = _log(tmp_path / "clicks.jsonl", 5)
    assert main(["check", "--clicks", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl: no such file (--clicks: a click log" in capsys.readouterr().err
    assert main(["check", "--clicks", str(log), "--data", str(tmp_path / "corpus")]) == 2
    assert main(["check", "--data", str(log)]) == 2
    assert "--data is the corpus of a click log: it goes with --clicks" in capsys.readouterr().err
    assert main(["check", "--clicks", str(log), "--reranker", "bm25"]) == 2
    assert main(["check"]) == 2
    assert "name a pipeline or settings file to check, or --clicks LOG" in capsys.readouterr().err


def test_a_pipeline_file_and_a_click_log_are_checked_together(tmp_path, capsys):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text('reranker = "bm25"\n', encoding="utf-8")
    thin = _log(tmp_path / "thin.jsonl", 2)
    assert main(["check", str(pipeline), "--clicks", str(thin)]) == 1  # the log's mistake
    out = capsys.readouterr().out
    assert f"{pipeline}: ok" in out and "too few clicks to learn from" in out


def test_a_click_log_named_without_clicks_is_pointed_to_it(tmp_path, capsys):
    """``rerankit check clicks.jsonl`` (the flag forgotten) says how a click log is checked,
    not only that the file's suffix is not a settings file's."""
    log = _log(tmp_path / "clicks.jsonl", 5)
    assert main(["check", str(log)]) == 1
    out = capsys.readouterr().out
    assert f"a click log is checked with rerankit check --clicks {log}" in out
