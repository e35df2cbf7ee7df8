"""What a pointwise judge's answer says about the document it names, and how warnings name
documents: through the real openai SDK against a local server that speaks its protocol."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("openai", reason="needs the 'openai' extra")

from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import LLMPointwiseScorer

NO_RETRY = RetryPolicy(attempts=1, min_wait=0.0, max_wait=0.0, timeout=5.0)
DOCS = [{"id": "u1", "text": "solar power"}, {"id": "u2", "text": "wind farms"}]


def _rerank(responder, docs=DOCS, **options):
    with FakeLLMServer(responder=responder) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="k")
        scorer = LLMPointwiseScorer(client, cache=False, retry=NO_RETRY, **options)
        return ScorerReranker(scorer).rerank("solar", docs)


def _asked(request) -> str:
    """The id the prompt gave its one document."""
    return re.search(r'Document "([^"]+)"', request.prompt).group(1)


def test_an_answer_naming_another_id_keeps_its_score_flagged_llm_wrong_id():
    def judge(request):
        doc_id = _asked(request)
        named = "nope" if doc_id == "u1" else doc_id
        return Reply(text=json.dumps({"id": named, "score": 7 if doc_id == "u1" else 2}))

    result = _rerank(judge)
    by_id = {r.id: r for r in result}
    assert by_id["u1"].score == 7.0 and by_id["u1"].flags == ("llm_wrong_id",)
    assert by_id["u2"].flags == ()  # its own id: nothing to say
    assert result.warnings == (
        "document 0 (id 'u1'): the answer names id 'nope', not 'u1', the id the prompt gave "
        "it; its score is kept (it was asked about this document alone)",
    )
    assert not result.degraded and result.unusable is None


def test_an_answer_whose_id_is_null_is_flagged_llm_wrong_id():
    result = _rerank(lambda request: Reply(text='{"id": null, "score": 6}'))
    assert [r.score for r in result] == [6.0, 6.0]
    assert [r.flags for r in result] == [("llm_wrong_id",), ("llm_wrong_id",)]
    assert result.warnings[0] == (
        "document 0 (id 'u1'): the answer names id null, not 'u1', the id the prompt gave "
        "it; its score is kept (it was asked about this document alone)"
    )


def test_an_answer_without_an_id_is_not_flagged():
    result = _rerank(lambda request: Reply(text='{"score": 6}'))
    assert [r.flags for r in result] == [(), ()] and result.warnings == ()


def test_warnings_name_a_document_by_its_id_as_well_as_its_position():
    result = _rerank(lambda request: Reply(status=401, text="bad key"))
    assert [w.split(":")[0] for w in result.warnings[:2]] == [
        "document 0 (id 'u1')",
        "document 1 (id 'u2')",
    ]
    plain = _rerank(lambda request: Reply(status=401, text="bad key"), docs=["a", "b"])
    assert plain.warnings[0].startswith("document 0: no score (")  # no id: as before


def test_a_shared_answer_naming_ids_not_asked_about_says_which():
    answer = json.dumps({"scores": [{"id": "u1", "score": 8}, {"id": "x9", "score": 3}]})
    result = _rerank(lambda request: Reply(text=answer), docs_per_call=2)
    by_id = {r.id: r for r in result}
    assert by_id["u1"].score == 8.0 and "llm_failed:unreadable" in by_id["u2"].flags
    said = [w for w in result.warnings if w.startswith("document 1 (id 'u2'): no score (")]
    assert re.fullmatch(
        r"document 1 \(id 'u2'\): no score \(openai at http://127\.0\.0\.1:\d+/v1 \(model "
        r"'m'\): the answer left this document out \(it named ids not asked about: 'x9'\)\); "
        r"scored 0\.0",
        said[0],
    ), said
