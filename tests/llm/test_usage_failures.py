"""One meaning of ``usage["failures"]``, through the real openai SDK against a local server
that speaks its protocol: a call (with its retries) that left a document without a
judgment, whether the call failed or its answer could not be read; and the "every LLM call
failed (N of N ...)" warning counts the same calls."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer

DOCS = ["alpha doc", "beta doc", "gamma doc"]
NO_RETRY = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=5.0)
UNUSABLE = {"llm_failed", "llm_unreadable"}


def _ids(request) -> list[str]:
    return re.findall(r'"id": "(\d+)"', request.prompt)


def _scores(ids) -> Reply:
    return Reply(text=json.dumps({"scores": [{"id": i, "score": 5} for i in ids]}))


def _rerank(scorer_class, responder, retry=NO_RETRY, **options):
    with FakeLLMServer(responder=responder) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="test-key")
        scorer = scorer_class(client, cache=False, retry=retry, **options)
        return ScorerReranker(scorer).rerank("which doc?", DOCS)


def _warned_failures(result) -> int | None:
    """The N of "every LLM call failed (N of N; ...)", None without that warning."""
    found = [re.search(r"every LLM call failed \((\d+) of \1;", w) for w in result.warnings]
    return next((int(m.group(1)) for m in found if m), None)


CASES = {
    # name: (scorer, responder, options, calls, failures, every call failed)
    "three per call, answer without them": (
        LLMPointwiseScorer,
        lambda r: Reply(text='{"scores": []}'),
        {"docs_per_call": 3},
        1,
        1,
        True,
    ),
    "three per call, answer without one": (
        LLMPointwiseScorer,
        lambda r: _scores(_ids(r)[:-1]),
        {"docs_per_call": 3},
        1,
        1,
        False,
    ),
    "three per call, all scored": (
        LLMPointwiseScorer,
        lambda r: _scores(_ids(r)),
        {"docs_per_call": 3},
        1,
        0,
        False,
    ),
    "one per call, prose": (
        LLMPointwiseScorer,
        lambda r: Reply(text="quite relevant, I would say"),
        {},
        3,
        3,
        True,
    ),
    "one per call, HTTP 500": (
        LLMPointwiseScorer,
        lambda r: Reply(status=500, text="boom"),
        {},
        3,
        3,
        True,
    ),
    "one per call, the second unreadable": (
        LLMPointwiseScorer,
        lambda r: Reply(text="no idea" if "beta" in r.prompt else '{"id": "0", "score": 7}'),
        {},
        3,
        1,
        False,
    ),
    "listwise, prose": (
        LLMListwiseScorer,
        lambda r: Reply(text="the second is best"),
        {},
        1,
        1,
        False,
    ),
    "listwise, repaired": (  # read: its order is used, the missing index appended
        LLMListwiseScorer,
        lambda r: Reply(text="[2, 0]"),
        {},
        1,
        0,
        False,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_failures_count_the_calls_that_left_a_document_without_a_judgment(case):
    scorer, responder, options, calls, failures, every = CASES[case]
    result = _rerank(scorer, responder, **options)
    assert result.usage["calls"] == calls
    assert result.usage["failures"] == failures
    unusable = [r for r in result if UNUSABLE & set(r.flags)]
    assert (failures > 0) == bool(unusable) == (failures > 0 and result.degraded)
    assert _warned_failures(result) == (failures if every else None)


def test_retries_are_calls_and_a_failure_counts_once():
    patient = RetryPolicy(attempts=3, min_wait=0.0, max_wait=0.0, timeout=5.0)
    result = _rerank(LLMPointwiseScorer, lambda r: Reply(status=503, text="down"), retry=patient)
    assert result.usage["calls"] == 9 and result.usage["retries"] == 6
    assert result.usage["failures"] == 3 == _warned_failures(result)


def test_a_provider_failing_for_every_document_it_was_sent_is_unusable_despite_an_empty_one():
    """A document with no text is never sent (flagged empty_content); the provider failing
    for all the others still leaves no ranking, and the result says so."""
    with FakeLLMServer(responder=lambda r: Reply(status=500)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="test-key")
        scorer = LLMPointwiseScorer(client, cache=False, retry=NO_RETRY)
        result = ScorerReranker(scorer).rerank("which doc?", [*DOCS, "   "])
    assert sorted(tuple(r.flags) for r in result) == [
        ("empty_content",),
        *[("llm_failed", "llm_failed:server_error")] * 3,
    ]
    assert result.unusable == "the LLM provider failed for every document"
    with FakeLLMServer(responder=lambda r: _scores(_ids(r))) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="test-key")
        scorer = LLMPointwiseScorer(client, cache=False, retry=NO_RETRY)
        fine = ScorerReranker(scorer).rerank("which doc?", [*DOCS, "   "])
    assert fine.unusable is None  # an empty document alone is not a failure
