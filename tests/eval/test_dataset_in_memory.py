"""A Dataset built in memory checks what it is given when it is built: each mistake is an
InputError naming the argument, the id and the field, and saying what is expected. A bare
string is read as a document's text, integer ids as strings; the caller's dicts are kept
as given."""

from __future__ import annotations

import copy
import logging
import re

import numpy as np
import pandas as pd
import pytest
from eval_tiny import CORPUS, QRELS, QUERIES
from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit.errors import InputError
from rerankit.eval import Dataset


def _make(corpus=None, queries=None, qrels=None):
    return Dataset(
        "mem",
        dict(CORPUS) if corpus is None else corpus,
        dict(QUERIES) if queries is None else queries,
        {q: dict(j) for q, j in QRELS.items()} if qrels is None else qrels,
    )


def test_a_bare_string_is_the_text_and_what_was_passed_is_kept():
    corpus = {d: doc["text"] for d, doc in CORPUS.items()}
    qrels = {"q1": {"d1": np.int64(2), "d3": 1.0}, "q2": {"d2": 1}, "q3": {"d4": 1}}
    given = copy.deepcopy((corpus, qrels))
    data = _make(corpus=corpus, qrels=qrels)
    assert data.document("d4") == {"id": "d4", "text": "how to cook pasta"}
    assert data.text("d1") == CORPUS["d1"]["text"]
    assert data.qrels["q1"] == {"d1": 2, "d3": 1}
    assert all(type(g) is int for j in data.qrels.values() for g in j.values())
    assert (corpus, qrels) == given  # nothing the caller passed is changed
    result = rerankit.evaluate(data, "bm25", candidates=4)
    assert result.rows[0]["ndcg@10"] > 0


def test_a_title_is_read_as_a_reranked_documents_title_is():
    corpus = {"d1": {"text": "pasta", "title": np.nan}, "d2": {"text": "solar", "title": 1984}}
    data = _make(corpus=corpus, qrels={})
    assert data.document("d1") == {"id": "d1", "text": "pasta"}  # NaN: an empty pandas cell
    assert data.text("d2") == "1984\nsolar"
    assert np.isnan(corpus["d1"]["title"])  # the caller's document is kept as given


def test_integer_ids_are_read_as_strings():
    data = _make(
        corpus={1: "solar panels", 2: {"text": "pasta"}},
        queries={7: "solar"},
        qrels={7: {1: 1, 2: 0}},
    )
    assert set(data.corpus) == {"1", "2"} and data.queries == {"7": "solar"}
    assert data.qrels == {"7": {"1": 1, "2": 0}}
    with pytest.raises(InputError, match=r"doc id '1' is given twice"):
        _make(corpus={1: "a", "1": "b"})


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"corpus": {}}, r"corpus: empty; expected a mapping doc id -> \{'title'"),
        ({"corpus": [("d1", "x")]}, r"corpus: expected a mapping .*, got list$"),
        (
            {"corpus": {"d1": {"body": "x", "title": "t"}}},
            r"document 'd1' has no 'text' field \(found 'body', 'title'\).*rename",
        ),
        ({"corpus": {"d1": {"text": 3}}}, r"document 'd1': field 'text' is 3 \(int\); expected"),
        (
            {"corpus": {"d1": {"text": float("nan")}}},
            r"document 'd1': field 'text' is nan \(float\).*fillna\(''\)",
        ),
        (
            {"corpus": {"d1": {"text": "x", "title": ["a"]}}},
            r"field 'title' is \['a'\] \(list\); expected a string, a number or None",
        ),
        ({"corpus": {"d1": 42}}, r"document 'd1' is a int; expected a mapping"),
        ({"corpus": {"d1": {"text": " ", "title": ""}}}, r"no document has any text"),
        ({"queries": {}}, r"queries: empty"),
        (
            {"queries": {"q1": {"text": "solar"}}},
            r"query 'q1' is \{'text': 'solar'\} \(dict\); expected its text.*q\['text'\]",
        ),
        ({"queries": {"q1": ""}}, r"query 'q1' has an empty text"),
        ({"queries": {("q", 1): "x"}}, r"queries: query id \('q', 1\) is a tuple; ids are"),
        ({"qrels": {"q1": ["d1"]}}, r"qrels: query 'q1' is \['d1'\] \(list\); expected a mapping"),
        (
            {"qrels": {"q1": {"d1": "2"}}},
            r"query 'q1', document 'd1': the grade must be an integer .*got '2' \(str\)",
        ),
        ({"qrels": {"q1": {"d1": 0.5}}}, r"document 'd1': the grade must be an integer"),
        ({"qrels": {"q1": {"d1": True}}}, r"document 'd1': the grade must be an integer"),
        (
            {"qrels": {"Q1": {"d1": 1}}},
            r"qrels: none of its 1 query ids is in queries \(it names 'Q1'",
        ),
        (
            {"qrels": {"q1": {"D1": 1}}},
            r"none of the 1 documents it judges is in the corpus \(it names 'D1'",
        ),
    ],
)
def test_each_mistake_is_an_input_error_naming_the_id_and_field(given, said):
    with pytest.raises(InputError, match=said):
        _make(**given)


def test_a_dataframe_is_refused_with_the_line_that_builds_the_mapping():
    frame = pd.DataFrame({"_id": ["d1"], "title": [""], "text": ["solar"]})
    with pytest.raises(InputError, match=r"got DataFrame; from a DataFrame: df\.set_index"):
        _make(corpus=frame)
    built = frame.set_index("_id")[["title", "text"]].to_dict("index")  # the line it gives
    assert _make(corpus=built, qrels={}).document("d1")["text"] == "solar"


def test_judgments_naming_missing_ids_are_said_once_and_kept(caplog):
    qrels = {"q1": {"d1": 1, "gone": 1}, "q2": {"d2": 1}, "lost": {"d1": 1}, "q3": {"d4": -1}}
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        data = _make(qrels=qrels)
        copied = data.sample(2, seed=0)
    said = "\n".join(data.notes)
    assert "1 of its 4 judged queries is not in queries and is left out ('lost')" in said
    assert "1 relevant judged document is not in the corpus ('gone')" in said
    assert "negative grade (query 'q3', document 'd4', -1)" in said and data.qrels["q3"] == {
        "d4": 0
    }
    assert len(data.notes) == 3 and copied.notes == data.notes  # a copy says them once
    assert len(caplog.records) == 3
    assert qrels["q3"] == {"d4": -1}  # read as 0 in the dataset, kept in the caller's


_BAD = st.one_of(
    st.integers(),
    st.none(),
    st.floats(),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.sampled_from(["body", "title", "contents"]), st.text(), max_size=2),
)


@settings(max_examples=40, deadline=None)
@given(
    good=st.dictionaries(st.text(min_size=1, max_size=5), st.text(min_size=1), min_size=1),
    bad_id=st.text(min_size=1, max_size=5),
    bad=_BAD,
)
def test_any_document_that_is_no_text_or_mapping_with_one_is_named(good, bad_id, bad):
    corpus = {**{k: v for k, v in good.items() if k != bad_id}, bad_id: bad}
    with pytest.raises(InputError, match=f"corpus: document {re.escape(repr(bad_id))}"):
        Dataset("mem", corpus, {"q": "x"}, {})
