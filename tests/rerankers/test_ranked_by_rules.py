"""``ranked_by`` names the stage that decided a document's place: the rule stage that moved
it (a pin put the 0.25 document first, and explain said the fusion had), else the last stage
that scored it. A rule moves the documents it takes out of the order it was given, not the
ones they pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import Pipeline
from rerankit.ordering import Outcome, Pin, Rule
from rerankit.rerankers import Stage
from rerankit.rerankers.placement import moved
from rerankit.scorers import BM25Scorer, FieldScorer

DOCS = [{"id": f"d{i}", "text": "x", "relevance": 10 - i, "source": s}
        for i, s in enumerate(["wire", "wire", "wire", "blog", "wire", "blog"])]  # fmt: skip


class Cap(Rule):
    """At most one document per source first; the rest after them."""

    name = "cap"

    def decide(self, items):
        seen, first, later = set(), [], []
        for i, item in enumerate(items):
            source = item.document["source"]
            (later if source in seen else first).append(i)
            seen.add(source)
        return Outcome(order=first + later, dropped=[])


def test_a_pinned_and_a_buried_document_are_ranked_by_the_pin_the_others_by_the_scorer():
    pins = Pin(pin={"q": ["d4"]}, bury={"q": ["d0"]})
    result = Pipeline([FieldScorer("relevance", name="rel"), pins]).rerank("q", DOCS)
    assert [(r.id, r.ranked_by) for r in result] == [
        ("d4", "pin"), ("d1", "rel"), ("d2", "rel"), ("d3", "rel"), ("d5", "rel"), ("d0", "pin"),
    ]  # fmt: skip
    assert [e["ranked_by"] for e in result.explain()] == [r.ranked_by for r in result]
    assert result.ranked_by == "rel"  # the result's: the last stage that scored


def test_a_cap_names_the_documents_it_moved_and_a_later_scoring_stage_takes_them_back():
    capped = Pipeline([FieldScorer("relevance", name="rel"), Cap()]).rerank("q", DOCS)
    assert [(r.id, r.ranked_by) for r in capped] == [
        ("d0", "rel"), ("d3", "cap"), ("d1", "rel"), ("d2", "rel"), ("d4", "rel"), ("d5", "rel"),
    ]  # fmt: skip
    rescored = Pipeline([FieldScorer("relevance", name="rel"), Cap(), BM25Scorer()])
    assert {r.ranked_by for r in rescored.rerank("x", DOCS)} == {"bm25"}


def test_a_rule_that_keeps_the_order_moves_nothing_and_one_left_behind_keeps_its_mark():
    kept = Pipeline([FieldScorer("relevance", name="rel"), Pin(pin={"other": ["d5"]})])
    assert {r.ranked_by for r in kept.rerank("q", DOCS)} == {"rel"}
    behind = Pipeline(
        [FieldScorer("relevance", name="rel"), Stage(Pin(bury={"q": ["d0"]}), keep=3), BM25Scorer()]
    )
    result = behind.rerank("q", DOCS)
    assert result[-1].id == "d0" and result[-1].ranked_by == "pin"  # never rescored


@settings(max_examples=200, deadline=None)
@given(st.permutations(range(12)), st.integers(0, 11), st.integers(0, 11))
def test_moved_is_the_fewest_documents_whose_removal_leaves_the_order(previous, src, dst):
    previous = list(previous)
    assert moved(previous, previous) == set()
    new = list(previous)
    doc = new.pop(src)
    new.insert(dst, doc)  # one document moved elsewhere: it alone (or none, where it stays)
    assert moved(previous, new) == (set() if src == dst else {doc}) or (
        abs(src - dst) == 1 and len(moved(previous, new)) == 1  # a swap: either of the two
    )
    left = [d for d in new if d not in moved(previous, new)]
    assert left == [d for d in previous if d in left]
