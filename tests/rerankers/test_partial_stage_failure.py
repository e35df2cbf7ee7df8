"""A pipeline stage whose LLM judge fails for some documents only: each document it could
not score keeps the previous stage's score, scale and place (its position in the previous
order), and the documents it did score fill the other places in its order, so a failure
never demotes a document below the judged ones. A judge with no earlier stage scores them
0.0, as it does alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import Document, Pipeline
from rerankit.llm import OpenAIClient, RetryPolicy
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.scorers import LLMPointwiseScorer
from rerankit.scorers.base import NO_SCORE, ScoreBatch


class Table:
    """Scores each document by a table keyed on its text, on a declared scale."""

    def __init__(self, name: str, table: dict[str, float], scale: str = "relative") -> None:
        self.name, self.table, self.score_scale = name, table, scale

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        return np.array([self.table[d.text] for d in docs])


class HalfJudge(Table):
    """An LLM judge whose calls fail for the documents in ``fails`` (0.0, flagged and
    warned as LLMPointwiseScorer does)."""

    def __init__(self, table: dict[str, float], fails: set[str]) -> None:
        super().__init__("judge", table, "unit")
        self.fails = fails

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        values, flags, warnings = np.zeros(len(docs)), {}, []
        for i, d in enumerate(docs):
            if d.text in self.fails:
                flags[i] = ["llm_failed", "llm_failed:server_error"]
                warnings.append(f"document {i}: no score (HTTP 500){NO_SCORE}")
            else:
                values[i] = self.table[d.text]
        return ScoreBatch(values, flags=flags, warnings=warnings, degraded=bool(flags))


DOCS = ["a", "b", "c", "d", "e", "f"]
FIRST = Table("first", {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5, "f": 0.1}, "probability")


def test_the_first_stage_s_best_document_keeps_its_place_when_the_judge_fails_for_it():
    judge = HalfJudge({"b": 0.3, "c": 0.9, "d": 0.5, "e": 0.7}, fails={"a"})
    result = Pipeline([(FIRST, 5), judge]).rerank("q", DOCS)
    assert [r.text for r in result] == ["a", "c", "e", "d", "b", "f"]
    top = result[0]
    assert top.score == 0.9 and top.scores == {"first/first": 0.9}  # the first stage's
    assert top.flags == ("llm_failed", "llm_failed:server_error")
    assert result.degraded and result.ranked_by == "judge"
    assert result.top_k(3).score_scale == "relative"  # a probability beside unit grades
    assert Pipeline([(FIRST, 5), judge]).rerank("q", DOCS, top_k=3).score_scale == "relative"
    said = [w for w in result.warnings if "document 0" in w]
    kept = "it keeps the previous stage's score and place"
    assert said[0] == f"stage 'judge': document 0: no score (HTTP 500); {kept}"
    assert "stage 'judge' could not score 1 of 5 documents (document 0)" in said[1]
    # a judge with no earlier stage: the failed document scores 0.0, below the judged ones
    alone = Pipeline([judge]).rerank("q", ["a", "b", "c"])
    assert [(r.text, r.score) for r in alone] == [("c", 0.9), ("b", 0.3), ("a", 0.0)]
    assert alone.warnings[0].endswith(NO_SCORE)


@settings(max_examples=80, deadline=None)
@given(
    first=st.lists(st.floats(0, 1), min_size=7, max_size=7),
    judged=st.lists(st.floats(0, 10), min_size=7, max_size=7),
    fails=st.sets(st.integers(0, 6), max_size=7),
    keep=st.integers(1, 7),
)
def test_a_failed_document_keeps_its_place_after_the_previous_stage(first, judged, fails, keep):
    texts = [f"t{i}" for i in range(7)]
    cheap = Table("cheap", dict(zip(texts, first, strict=True)))
    judge = HalfJudge(dict(zip(texts, judged, strict=True)), {texts[i] for i in fails})
    before = [r.index for r in Pipeline([cheap]).rerank("q", texts)]
    after = Pipeline([(cheap, keep), judge]).rerank("q", texts)
    order = [r.index for r in after]
    assert sorted(order) == list(range(7))
    head = set(before[:keep])
    for i in fails & head:
        assert order.index(i) == before.index(i)
    # the judged documents of the head take the other places, best grade first
    rest = [i for i in order[:keep] if i not in fails]
    assert [judged[i] for i in rest] == sorted((judged[i] for i in rest), reverse=True)
    assert order[keep:] == before[keep:]


def test_a_judge_failing_for_every_document_says_the_previous_stage_s_order_is_kept():
    """Every call of a real LLM judge fails behind a first stage: the warnings say the
    previous stage's order is kept (as it is), not the judge-alone "input order kept"."""
    pytest.importorskip("openai", reason="needs the 'openai' extra")
    with FakeLLMServer(responder=lambda r: Reply(status=500)) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m", api_key="k")
        judge = LLMPointwiseScorer(client, cache=False, retry=RetryPolicy(attempts=1))
        result = Pipeline([(FIRST, 3), judge]).rerank("q", ["f", "b", "a", "e"])
        alone = Pipeline([judge]).rerank("q", ["f", "b"])
    assert [r.text for r in result] == ["a", "b", "e", "f"]  # the first stage's order
    every = [w for w in result.warnings if "every LLM call failed" in w]
    assert every == [
        "stage 'llm_pointwise': every LLM call failed (3 of 3; no score for 3 documents); "
        "the previous stage's order is kept"
    ]
    assert not any("input order" in w for w in result.warnings)
    # with no earlier stage the order kept is the input's, and it says so
    assert any(w.endswith("; input order kept") for w in alone.warnings)
