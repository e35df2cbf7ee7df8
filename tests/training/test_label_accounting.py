"""What ``rerankit label`` counts against what the provider saw: calls and retries, the
cost and budget over every run into a folder, and the judge's answers that name another
document: through the real OpenAI SDK against a local server that counts its requests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers.base import run_sync
from rerankit.training.labelling import judge_from
from rerankit.types import Document

K = 5
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')


def judge(request):
    """Grades every document 7 (grade 2), naming the id the prompt gave it."""
    doc = json.loads(DOC.search(request.prompt).group(1))
    return Reply(text=json.dumps({"id": doc, "score": 7}), input_tokens=100, output_tokens=8)


def judge_file(tmp_path, server, monkeypatch, extra=""):
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    path = tmp_path / "judge.toml"
    path.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        f'base_url = "{server.openai_url}"\napi_key_env = "RERANKIT_TEST_KEY"\n'
        f'cache = "{tmp_path / "judgments.sqlite"}"\n'
        "retry = { attempts = 3, min_wait = 0.0, max_wait = 0.0 }\n" + extra
    )
    return path


def run_label(collection, judge, out, *extra):
    args = ["label", "--data", str(collection), "--judge", str(judge), "--candidates", str(K)]
    return main([*args, "--out", str(out), "--no-progress", *extra])


@pytest.fixture
def collection(tmp_path, synthetic):
    return synthetic(tmp_path / "data")


def test_retries_are_counted_apart_and_the_calls_are_what_the_server_received(
    tmp_path, collection, monkeypatch, capsys
):
    out = tmp_path / "labelled"
    busy = [Reply(status=503, text="busy"), Reply(status=429, text="slow down")]
    with FakeLLMServer(busy, responder=judge) as server:
        assert run_label(collection, judge_file(tmp_path, server, monkeypatch), out) == 0
    report = json.loads((out / "label_report.json").read_text())
    answered = len(server.requests) - len(busy)
    assert report["failed"] == 0 and report["labels"] == 30 * K
    assert report["calls"] == len(server.requests) and report["retries"] == len(busy)
    assert report["input_tokens"] == 100 * answered  # the cost counts the answers
    err = capsys.readouterr().err
    assert f"{report['calls']} calls (2 of them retries, " in err
    assert (
        f"label: retries: 2 of the {report['calls']} calls repeated an attempt that failed "
        f"(a rate limit, a server error, a timeout, or a connection the server reset, which "
        f"it never saw), so the provider answered at most {answered}"
    ) in err


def test_the_budget_covers_every_run_into_the_folder(tmp_path, collection, monkeypatch, capsys):
    """A run stopped by --budget, run again with the same budget, spends nothing more and
    leaves the labels as they were; a higher budget goes on, and the totals add up."""
    out = tmp_path / "labelled"
    prices = tmp_path / "prices.json"  # $1000 per million input tokens: $0.50 a query
    prices.write_text(json.dumps({"house-model": {"input": 1000.0, "output": 0.0}}))
    with FakeLLMServer(responder=judge) as server:
        path = judge_file(tmp_path, server, monkeypatch)
        path.write_text(path.read_text().replace("gpt-4o-mini", "house-model"))

        def run(budget):
            return run_label(collection, path, out, "--budget", budget, "--prices", str(prices))

        assert run("2") == 3  # stopped partly: written, and a script can tell
        first = json.loads((out / "label_report.json").read_text())
        labels = (out / "qrels" / "train.tsv").read_text()
        assert first["stopped"].startswith("budget") and first["total_cost_usd"] <= 2
        sent = len(server.requests)
        capsys.readouterr()
        # the same budget: the judgment cache gives back what was paid for, free, and the
        # run stops where the first did: nothing more is sent, the same labels are written
        assert run("2") == 3
        err = capsys.readouterr().err
        assert len(server.requests) == sent
        assert f" 0 calls ({first['labels']} cached), $0.0000 in " in err
        assert "run again with a higher --budget to go on (it covers every run into" in err
        assert (out / "qrels" / "train.tsv").read_text() == labels
        assert json.loads((out / "label_report.json").read_text())["total_cost_usd"] == (
            pytest.approx(first["total_cost_usd"])
        )
        assert run_label(collection, path, out, "--dry-run", "--prices", str(prices)) == 0
        said = capsys.readouterr().err
        assert re.search(r"about [\d,]+ input and [\d,]+ output tokens, about \$", said)
        assert f"label: {out} has spent {first['total_calls']} calls and $" in said
        assert run("4") == 3  # a higher budget goes on, and stops again before the end
    last = json.loads((out / "label_report.json").read_text())
    assert last["total_calls"] == len(server.requests) > first["total_calls"]
    assert first["total_cost_usd"] < last["total_cost_usd"] <= 4
    assert last["total_cost_usd"] == pytest.approx(last["total_input_tokens"] * 1000 / 1e6)
    assert last["total_cost_usd"] == pytest.approx(first["cost_usd"] + last["cost_usd"])


def test_answers_naming_another_document_id_are_counted_and_one_is_shown(
    tmp_path, collection, monkeypatch, capsys
):
    misnamed = {"d0-1": None, "d2-3": "d2-4"}  # a null id, and another document's

    def confused(request):
        doc = json.loads(DOC.search(request.prompt).group(1))
        named = misnamed.get(doc, doc)
        return Reply(text=json.dumps({"id": named, "score": 7}), input_tokens=100)

    out = tmp_path / "labelled"
    with FakeLLMServer(responder=confused) as server:
        assert run_label(collection, judge_file(tmp_path, server, monkeypatch), out) == 0
    asked = [r for r in server.requests if json.loads(DOC.search(r.prompt).group(1)) in misnamed]
    report = json.loads((out / "label_report.json").read_text())
    assert len(asked) >= 2 and report["wrong_ids"] == len(asked)
    assert report["labels"] == 30 * K and report["failed"] == 0  # their scores are kept
    err = capsys.readouterr().err
    shown = re.search(r"label: wrong ids: (\d+) answers named another document id .*", err)
    assert shown and int(shown.group(1)) == len(asked)
    assert re.search(
        r"e\.g\. query \S+: document \d+ \(id '(d0-1|d2-3)'\): the answer names id", err
    )


def test_the_request_learning_md_shows_is_the_one_label_sends(tmp_path, monkeypatch):
    page = (Path(__file__).parents[2] / "docs" / "learning.md").read_text(encoding="utf-8")
    shown = json.loads(re.search(r'```json\n(\{"model".*?)```', page, flags=re.S).group(1))
    user = shown["messages"][1]["content"]
    query = json.loads(re.search(r'Query \(a JSON string\): ("(?:[^"\\]|\\.)*")', user).group(1))
    found = re.search(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\): ("(?:[^"\\]|\\.)*")', user)
    doc_id, text = (json.loads(g) for g in found.groups())
    with FakeLLMServer(responder=judge) as server:
        scorer = judge_from(judge_file(tmp_path, server, monkeypatch))
        run_sync(scorer.score(query, [Document(text, id=doc_id)]))
    assert server.requests[0].body == shown


def test_the_listwise_request_learning_md_shows_is_the_one_sent(tmp_path, monkeypatch):
    page = (Path(__file__).parents[2] / "docs" / "learning.md").read_text(encoding="utf-8")
    bodies = [json.loads(b) for b in re.findall(r'```json\n(\{"model".*?)```', page, flags=re.S)]
    shown = next(b for b in bodies if b["response_format"]["json_schema"]["name"] == "rerank")
    user = shown["messages"][1]["content"]
    chunks = json.loads(user.split("Chunks (JSON array):\n", 1)[1].split("\n\n", 1)[0])
    query = json.loads(user.split("Question (a JSON string): ", 1)[1])
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    order = json.dumps({"reranked_indices": [1, 0], "is_rejected": False, "rejection_reason": ""})
    with FakeLLMServer(responder=lambda request: Reply(text=order)) as server:
        path = tmp_path / "judge.toml"
        path.write_text(
            '[scorer]\ntype = "llm_listwise"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
            f'base_url = "{server.openai_url}"\napi_key_env = "RERANKIT_TEST_KEY"\ncache = false\n'
        )
        scorer = judge_from(path)
        run_sync(scorer.score(query, [Document(t, id=f"d{i}") for i, t in enumerate(chunks)]))
    assert server.requests[0].body == shown
    assert scorer.max_chars == 2_000  # the default the page gives
