"""A rule that raises: ``InvalidDocumentError`` (a caller's error) fails the call naming the
document by its input position; any other exception degrades the answer, and the warning
says where the rule raised it, so a rule's bug is not a silent fallback."""

from __future__ import annotations

import pytest

from rerankit import Pipeline
from rerankit.errors import InvalidDocumentError
from rerankit.ordering import Outcome, Rule
from rerankit.scorers import FieldScorer

DOCS = [{"id": i, "text": "x", "rank": i, "source": s} for i, s in enumerate(["a", ["b"], "c"])]


class PerSource(Rule):
    name = "per_source"

    def decide(self, items):
        seen = {}
        for item in items:
            seen[item.document["source"]] = True  # a list is unhashable: TypeError
        return Outcome(order=list(range(len(items))), dropped=[])


class Strict(Rule):
    name = "strict"

    def decide(self, items):
        for i, item in enumerate(items):
            if not isinstance(item.document["source"], str):
                raise InvalidDocumentError("source must be a string", index=i, field="source")
        return Outcome(order=list(range(len(items))), dropped=[])


FIRST = FieldScorer("rank", higher_is_better=False)


def test_a_rule_s_bug_degrades_the_answer_saying_where_it_was_raised():
    result = Pipeline([FIRST, PerSource()]).rerank("q", DOCS)
    assert result.degraded and [r.id for r in result] == [0, 1, 2]
    [warning] = result.warnings
    line = PerSource.decide.__code__.co_firstlineno + 3
    assert warning == (
        "stage 'per_source' failed (TypeError: unhashable type: 'list', raised at "
        f"test_rule_failures.py:{line} in decide: a bug in the rule or a document it cannot "
        "read); the previous stage's order is kept"
    )


def test_a_rule_that_raises_invalid_document_error_fails_the_call_naming_the_document():
    docs = [{"id": i, "text": "x", "rank": i, "source": s} for i, s in enumerate([["b"], "a"])]
    last_first = FieldScorer("rank")  # the rule sees document 0 at its position 1
    with pytest.raises(InvalidDocumentError, match=r"^document 0: source must be a string") as err:
        Pipeline([last_first, Strict()]).rerank("q", docs)
    assert err.value.index == 0 and err.value.field == "source"
