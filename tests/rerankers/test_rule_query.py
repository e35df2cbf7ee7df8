"""Rules are given the query when they ask for it (``decide(self, items, *, query=None)``),
and a rule written as ``decide(self, items)`` runs as it did; the built-in ``pin`` rule pins
and buries documents by id for the queries it names, in Python and in a pipeline file."""

from __future__ import annotations

import pytest

import rerankit
from rerankit import Pipeline
from rerankit.errors import ConfigError
from rerankit.ordering import Outcome, Pin, Rule
from rerankit.scorers import BM25Scorer

DOCS = [
    {"id": "d0", "text": "solar panels on the roof"},
    {"id": "d1", "text": "solar power plants"},
    {"id": "d2", "text": "wind farms at sea"},
    {"id": "d3", "text": "solar panels and solar panels"},
    {"id": "d4", "text": "the grid"},
]


class ItemsOnly(Rule):
    """A rule written before rules were given the query: reverses."""

    name = "reverse"

    def decide(self, items):
        return Outcome(order=list(range(len(items)))[::-1], dropped=[])


class SeesQuery(Rule):
    """Records the query it is given."""

    name = "sees"

    def __init__(self):
        self.seen = []

    def decide(self, items, *, query=None):
        self.seen.append(query)
        return Outcome(order=list(range(len(items))), dropped=[])


class TakesContext(SeesQuery):
    def decide(self, items, **context):
        self.seen.append(context.get("query"))
        return Outcome(order=list(range(len(items))), dropped=[])


@pytest.mark.parametrize("rule", [SeesQuery(), TakesContext()])
def test_a_rule_that_declares_the_query_is_given_it_everywhere(rule):
    Pipeline([BM25Scorer(), rule]).rerank("solar panels", DOCS)
    rule(rerankit.rerank("wind", DOCS, reranker="bm25"))  # on a result: its query
    rule(DOCS, query="grid")  # on a plain list: the query given
    rule(DOCS)  # none given
    assert rule.seen == ["solar panels", "wind", "grid", None]


def test_a_rule_that_takes_only_the_items_runs_as_before():
    bm25 = [r.id for r in rerankit.rerank("solar panels", DOCS, reranker="bm25")]
    result = Pipeline([BM25Scorer(), ItemsOnly()]).rerank("solar panels", DOCS)
    assert [r.id for r in result] == bm25[::-1] and not result.degraded
    assert [d["id"] for d in ItemsOnly()(DOCS, query="ignored")] == ["d4", "d3", "d2", "d1", "d0"]


def test_pin_puts_the_listed_ids_first_in_order_and_buries_last_for_its_query_only():
    pins = Pin(pin={"Solar  Panels": ["d4", "d2"]}, bury={"solar panels": ["d3"]})
    bm25 = [r.id for r in rerankit.rerank("solar panels", DOCS, reranker="bm25")]
    got = [r.id for r in Pipeline([BM25Scorer(), pins]).rerank("  SOLAR panels ", DOCS)]
    rest = [i for i in bm25 if i not in ("d4", "d2", "d3")]
    assert got == ["d4", "d2", *rest, "d3"]
    other = [r.id for r in Pipeline([BM25Scorer(), pins]).rerank("wind", DOCS)]
    assert other == [r.id for r in rerankit.rerank("wind", DOCS, reranker="bm25")]
    # ids compare as text; an id not among the documents is skipped; a plain list needs query=
    hits = [{"id": 7, "text": "a"}, {"id": 1, "text": "b"}]
    assert Pin(pin={"q": ["7", "99"]})(hits[::-1], query="q") == hits
    assert Pin(pin={"q": ["7"]})(hits[::-1]) == hits[::-1]


def test_a_pipeline_file_pins_per_query(tmp_path):
    path = tmp_path / "pinned.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n[[stages]]\n'
        'rule = { type = "pin", pin = { "wind" = ["d4"] }, bury = { "wind" = ["d2"] } }\n'
    )
    pipeline = rerankit.load(str(path))
    ids = [r.id for r in pipeline.rerank("wind", DOCS)]
    assert ids[0] == "d4" and ids[-1] == "d2"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"pin": ["d1"]}, "pin must map each query to a list of document ids"),
        ({"pin": {"q": "d1"}}, "pin['q'] must be a list of document ids"),
        ({"bury": {"q": [1.5]}}, "a document id is a string or an integer, got 1.5"),
        ({"pin": {"q": ["a"], "Q ": ["b"]}}, "'q' and 'Q ' are the same query"),
        ({"pin": {"q": ["a"]}, "bury": {"q": ["a"]}}, "'a' is both pinned and buried"),
    ],
)
def test_a_bad_pin_table_is_an_error_naming_it(options, said):
    spec = {"stages": [{"scorer": {"type": "bm25"}}, {"rule": {"type": "pin", **options}}]}
    with pytest.raises(ConfigError, match=r"stages\[1\]\.rule: pin: ") as err:
        rerankit.load(spec)
    assert said in str(err.value)
