"""What ``rerankit label`` counts against what the provider saw: calls and retries, the
cost and budget over every run into a folder, and the judge's answers that name another
document: through the real OpenAI SDK against a local server that counts its requests."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.llm.testing import FakeLLMServer, Reply

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
