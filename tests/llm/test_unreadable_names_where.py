"""An answer that cannot be read is said with the server and model that gave it (the
provider, its address and the model, never the key), as a failed call is: in the
scorer's warnings, its log line, and what ``label`` says of failed judgments. Through the
real openai SDK against a local server."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.eval.data import Dataset
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMListwiseScorer, LLMPointwiseScorer
from rerankit.training.labelling import label

KEY = "sk-secret-never-shown"
RETRY = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=10.0)
DOCS = ["alpha doc", "beta doc"]


def prose(request) -> Reply:
    return Reply(text="I think the first one is the better of the two.")


@pytest.mark.parametrize(
    ("scorer_class", "options", "said"),
    [
        (LLMPointwiseScorer, {}, "document 0: no score ({where}: "),
        (LLMPointwiseScorer, {"docs_per_call": 2}, "document 0: no score ({where}: "),
        (LLMListwiseScorer, {}, "window 0-1: unreadable answer ({where}: "),
    ],
    ids=["pointwise", "pointwise-shared", "listwise"],
)
def test_an_unreadable_answer_names_who_gave_it(scorer_class, options, said, caplog):
    with FakeLLMServer(responder=prose) as server:
        client = OpenAIClient(base_url=server.openai_url, model="judge-m", api_key=KEY)
        scorer = scorer_class(client, cache=False, retry=RETRY, **options)
        with caplog.at_level(logging.WARNING, logger="rerankit"):
            result = ScorerReranker(scorer).rerank("which doc?", DOCS)
        where = f"openai at {server.openai_url} (model 'judge-m')"
    assert any(w.startswith(said.format(where=where)) for w in result.warnings), result.warnings
    assert where in caplog.text  # the log line too (without the answer's text)
    assert KEY not in " ".join(result.warnings) + caplog.text


def test_label_says_who_gave_the_answers_it_could_not_read(tmp_path):
    data = Dataset("d", {"d1": {"title": "", "text": "one"}}, {"q1": "a query"}, {})
    with FakeLLMServer(responder=prose) as server:
        client = OpenAIClient(base_url=server.openai_url, model="judge-m", api_key=KEY)
        judge = LLMPointwiseScorer(client, cache=False, retry=RETRY)
        report = label(data, {"q1": ["d1"]}, judge, tmp_path / "out")
        where = f"openai at {server.openai_url} (model 'judge-m')"
    assert report.failed == 1
    assert report.failure_reasons[0].startswith(
        f"query q1: document 0 (id 'd1'): no score ({where}: "
    )
    assert KEY not in " ".join(report.failure_reasons)
