from __future__ import annotations

import copy

import numpy as np
import pytest

import rerankit
from rerankit import Document, RerankResult
from rerankit.documents import document_title, output_for, to_documents
from rerankit.errors import InvalidDocumentError


def test_document_requires_string_text():
    with pytest.raises(TypeError, match="text must be a str"):
        Document(text=3)  # type: ignore[arg-type]


def test_adapters_accept_strings_documents_and_dicts():
    doc = Document("third", id="c", metadata={"k": 1})
    docs = to_documents(["first", {"id": "b", "text": "second", "year": 2020}, doc])
    assert [d.text for d in docs] == ["first", "second", "third"]
    assert docs[1].id == "b"
    assert dict(docs[1].metadata) == {"year": 2020}
    assert docs[2] == doc and docs[2].source is doc


def test_custom_text_and_id_fields():
    docs = to_documents([{"key": 7, "body": "hello"}], text_field="body", id_field="key")
    assert docs[0].text == "hello" and docs[0].id == 7


@pytest.mark.parametrize(
    ("items", "pattern"),
    [
        ([{"text": "ok"}, {"body": "x"}], r"document 1: missing text field 'text'"),
        (
            [{"text": "ok"}, {"text": None}],
            r"document 1: field 'text' must be a string, got NoneType",
        ),
        (["a", "b", {"text": 5}], r"document 2: field 'text' must be a string, got int"),
        (["a", 42], r"document 1: unsupported type int"),
    ],
)
def test_bad_documents_name_index_and_field(items, pattern):
    with pytest.raises(InvalidDocumentError, match=pattern) as info:
        to_documents(items)
    assert isinstance(info.value, ValueError)
    assert info.value.index == int(pattern.split("document ")[1].split(":")[0])


def test_single_string_instead_of_list_is_rejected():
    with pytest.raises(TypeError, match="wrap it in a list"):
        to_documents("just one string")


def test_dict_output_is_a_new_dict_with_every_field_and_the_score():
    original = {"id": 1, "text": "t", "nested": {"a": [1, 2]}, "rerank_score": "old"}
    snapshot = copy.deepcopy(original)
    out = output_for(to_documents([original])[0], 0.5)
    assert out is not original
    assert out == {**snapshot, "rerank_score": 0.5}
    assert original == snapshot


def test_result_container_behaviour():
    result = rerankit.rerank(
        "apple pie", ["banana bread", "apple pie recipe", "apple"], reranker="bm25"
    )
    assert isinstance(result, RerankResult)
    assert len(result) == 3
    assert [r.rank for r in result] == [1, 2, 3]
    assert result[0].text == "apple pie recipe"
    top = result.top_k(2)
    assert [r.index for r in top] == [r.index for r in result][:2]
    assert result.top_k(10).results == result.results
    records = result.to_dicts()
    assert records[0]["index"] == 1 and records[0]["rank"] == 1
    assert set(records[0]) == {"index", "rank", "score", "id", "text", "scores", "flags"}
    assert records[0]["scores"] == {"bm25": result[0].score}
    with pytest.raises(ValueError, match="positive integer"):
        result.top_k(0)


def test_empty_query_and_empty_list_keep_input_order_with_warning():
    docs = ["b", "a", "c"]
    result = rerankit.rerank("   ", docs, reranker="bm25")
    assert [r.text for r in result] == docs
    assert result.warnings and "query is empty" in result.warnings[0]
    assert not result.degraded
    empty = rerankit.rerank("query", [], reranker="bm25")
    assert len(empty) == 0 and "empty" in empty.warnings[0]


def test_non_string_query_and_bad_top_k_are_errors():
    with pytest.raises(TypeError, match="query must be a str"):
        rerankit.rerank(None, ["a"])  # type: ignore[arg-type]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="top_k"):
            rerankit.rerank("q", ["a"], top_k=bad)


def test_documents_and_results_survive_deepcopy():
    doc = Document("t", id=1)
    assert copy.deepcopy(doc) == doc
    result = rerankit.rerank("t", [doc, "u"])
    assert copy.deepcopy(result).to_dicts() == result.to_dicts()


def test_objects_are_read_as_dicts_are():
    """A dataclass, a slotted object and a dict with the same fields give the same
    Document: the title on the line before the text, the id, the rest as metadata."""
    import dataclasses

    @dataclasses.dataclass
    class Article:
        id: str
        title: str
        text: str
        year: int

    class Slotted:
        __slots__ = ("_cache", "id", "text", "title", "year")

        def __init__(self, **values):
            for name, value in values.items():
                setattr(self, name, value)

    fields = {"id": "d1", "title": "Solar", "text": "Panels on the roof.", "year": 2020}
    from_dict, from_dataclass, from_slots = to_documents(
        [fields, Article(**fields), Slotted(**fields, _cache=None)]
    )
    for doc in (from_dataclass, from_slots):
        assert (
            (doc.text, doc.id)
            == (from_dict.text, from_dict.id)
            == ("Solar\nPanels on the roof.", "d1")
        )
        assert dict(doc.metadata) == dict(from_dict.metadata) == {"title": "Solar", "year": 2020}

    class Keyed(Slotted):
        __slots__ = ("body", "key")

    assert to_documents([Keyed(key=7, body="x")], text_field="body", id_field="key")[0].id == 7


def test_blank_texts_are_flagged_empty_content_by_every_reranker():
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers import BM25Scorer

    pipeline = rerankit.load({"stages": [{"scorer": {"type": "bm25"}, "keep": 3}]})
    for reranker in (ScorerReranker(BM25Scorer()), pipeline):
        result = reranker.rerank("solar panels", ["solar panels", "", "   ", "wind"])
        flagged = {r.index for r in result if "empty_content" in r.flags}
        assert flagged == {1, 2}
        assert all(r.flags.count("empty_content") <= 1 for r in result)


def test_a_score_field_the_input_already_has_is_overwritten_with_one_warning(caplog):
    pipeline = rerankit.load(
        {"stages": [{"scorer": {"type": "bm25"}}, {"scorer": {"type": "jaccard"}}]}
    )
    docs = [{"text": "solar panels", "score": 3.0}, {"text": "wind", "score": 9.0}]
    with caplog.at_level("WARNING", logger="rerankit"):
        result = pipeline.rerank("solar", (d for d in docs), score_field="score")
    said = [w for w in result.warnings if "'score'" in w]
    assert len(said) == 1 and "2 input dicts already had a 'score' field" in said[0]
    assert [r.message for r in caplog.records].count(said[0]) == 1
    assert docs[0]["score"] == 3.0  # the input is not touched; the output holds the new score
    assert result[0].document["score"] == result[0].score
    assert not [w for w in rerankit.load("bm25").rerank("solar", docs).warnings if "field" in w]


def test_a_title_is_a_string_or_a_number_none_and_nan_are_none_else_an_error():
    docs = [
        {"id": "a", "title": 42, "text": "solar power"},
        {"id": "b", "title": float("nan"), "text": "solar"},  # an empty pandas cell
        {"id": "c", "title": np.float64("nan"), "text": "wind"},
        {"id": "d", "title": None, "text": "sun"},
        {"id": "e", "title": 2.5, "text": ""},
    ]
    before = copy.deepcopy(docs)
    read = rerankit.InputFields().read(docs)
    assert [d.text for d in read] == ["42\nsolar power", "solar", "wind", "sun", "2.5"]
    assert [document_title(d) for d in read] == ["42", None, None, None, "2.5"]
    assert docs[0] == before[0] and docs[3] == before[3] and docs[4] == before[4]
    for bad in (["a"], {"x": 1}, True):
        with pytest.raises(InvalidDocumentError) as caught:
            rerankit.InputFields().read([{"text": "ok"}, {"title": bad, "text": "b"}])
        assert (caught.value.index, caught.value.field) == (1, "title")
        assert str(caught.value).startswith("document 1: field 'title' must be a string, a number")
        assert type(bad).__name__ in str(caught.value)


@pytest.mark.parametrize("pair", [("vaccines", "A vaccine trains cells."), ["q", "d"]])
def test_a_query_document_pair_is_refused_with_how_to_pass_them(pair):
    """CrossEncoder.predict takes (query, document) pairs; rerank takes the query once."""
    with pytest.raises(InvalidDocumentError) as info:
        rerankit.rerank("vaccines", [pair, pair], reranker="bm25")
    message = str(info.value)
    assert message.startswith(f"document 0: unsupported type {type(pair).__name__}")
    assert "(query, document) pair? pass the query once" in message
    assert "rerank(query, [document, ...])" in message


def test_other_lists_get_no_pair_hint():
    for item in ([1, 2], ["a", "b", "c"]):
        with pytest.raises(InvalidDocumentError) as info:
            to_documents([item])
        assert "pair" not in str(info.value)
