"""A run of ``label`` into a folder that holds labels keeps those of every query it does not
label again: a rerun with a slightly higher --max-calls that stops before a query the
earlier run labelled, or a rerun whose judgments of a query fail, must not drop labels that
were paid for. Through the real OpenAI SDK against a local server."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.eval.data import Dataset
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.training.label_candidates import candidates_digest, read_label_report
from rerankit.training.labelling import judge_from, label

DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\): ("(?:[^"\\]|\\.)*")')
CANDIDATES = {
    "q1": ["d0", "d1"],
    "q2": ["d2", "d3", "d4", "d5", "d6"],
    "q3": ["d7", "d8", "d9", "d10", "d11"],
}
DATA = Dataset(
    "resume",
    {f"d{i}": {"title": "", "text": f"document number {i}"} for i in range(12)},
    {"q1": "first query", "q2": "second query", "q3": "third query"},
    {},
)


def grade_7(request):
    doc = json.loads(DOC.search(request.prompt).group(1))
    return Reply(text=json.dumps({"id": doc, "score": 7}))


def judge_file(tmp_path, server, cache):
    path = tmp_path / "judge.toml"
    path.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodel = "m"\n'
        f'base_url = "{server.openai_url}"\ncache = {cache}\n'
        "retry = { attempts = 1 }\n"
    )
    return judge_from(path)


def labels(out):
    rows = (out / "qrels" / "train.tsv").read_text().splitlines()[1:]
    return {tuple(row.split("\t")[:2]) for row in rows}


def test_a_rerun_that_stops_sooner_keeps_the_labels_it_did_not_reach(tmp_path):
    """The judgment cache emptied in between (``rerankit cache clear``, another machine):
    the rerun pays again and stops before q2, whose labels the first run paid for."""
    out = tmp_path / "labelled"
    cache = json.dumps(str(tmp_path / "judgments.sqlite"))
    with FakeLLMServer(responder=grade_7) as server:
        first = label(DATA, CANDIDATES, judge_file(tmp_path, server, cache), out, max_calls=7)
        assert first.stopped and first.labelled_queries == 2
        paid = labels(out)
        assert {q for q, _ in paid} == {"q1", "q2"}
        # 2 more calls allowed: q1 (2 candidates) fits, q2 (5) does not, q3 neither
        again = label(DATA, CANDIDATES, judge_file(tmp_path, server, "false"), out, max_calls=9)
    assert again.stopped and again.labelled_queries == 1 and again.calls == 2
    assert labels(out) == paid  # q2's labels, paid for by the first run, are still there
    assert again.kept_queries == 1
    assert "kept: the labels of 1 query an earlier run labelled" in " ".join(again.notes())
    made = read_label_report(out)
    assert made["candidate_digests"]["q2"] == candidates_digest(CANDIDATES["q2"])
    queries = (out / "queries.jsonl").read_text().splitlines()
    assert [json.loads(q)["_id"] for q in queries] == ["q1", "q2"]


def test_a_rerun_whose_judgments_fail_keeps_the_earlier_labels(tmp_path):
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=grade_7) as server:
        label(DATA, CANDIDATES, judge_file(tmp_path, server, "false"), out)
    paid = labels(out)
    assert len(paid) == 12

    def q2_fails(request):
        if "second query" in request.prompt:
            return Reply(status=400, text="prompt too long")
        return grade_7(request)

    with FakeLLMServer(responder=q2_fails) as server:
        again = label(DATA, CANDIDATES, judge_file(tmp_path, server, "false"), out)
    assert again.failed == 5 and again.labelled_queries == 2 and again.kept_queries == 1
    assert labels(out) == paid
    assert "prompt too long" in " ".join(again.failure_reasons)


@pytest.mark.parametrize("limit", ["max_calls", "budget"])
def test_a_rerun_counts_what_the_judgment_cache_answers_as_free(tmp_path, limit):
    """Raised by less than a query's cost, a limit still lets a rerun read what the cache
    holds (it used to stop before the first query, whose judgments cost nothing)."""
    out = tmp_path / "labelled"
    cache = json.dumps(str(tmp_path / "judgments.sqlite"))
    prices = {"m": (1000.0, 0.0)}  # $1000 per million input tokens
    with FakeLLMServer(responder=grade_7) as server:
        first = label(
            DATA, CANDIDATES, judge_file(tmp_path, server, cache), out, max_calls=7, prices=prices
        )
        assert first.labelled_queries == 2 and first.total_calls == 7
        a_little_more = (
            {"max_calls": 8}
            if limit == "max_calls"
            else {"budget": first.total_cost_usd + 0.001}  # less than q1's estimate
        )
        sent = len(server.requests)
        again = label(
            DATA,
            CANDIDATES,
            judge_file(tmp_path, server, cache),
            out,
            prices=prices,
            **a_little_more,
        )
        assert len(server.requests) == sent  # q3 would pass the limit: not asked
    assert again.stopped and again.labelled_queries == 2 and again.cache_hits == 7
    assert again.error is None  # it wrote the labels the cache gave, no "stopped before"
    assert "the next query" in again.stopped
