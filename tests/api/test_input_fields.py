"""Per-call options as one object: InputFields (how documents are read and results written)
and RayOptions (how the ray engine runs) mean the same as their keywords."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import rerankit
from rerankit import InputFields, load
from rerankit.batch import RayOptions
from rerankit.documents import document_title
from rerankit.errors import InputError, InvalidDocumentError
from rerankit.scorers import FunctionScorer

DOCS = [
    {"body": "wind turbines at sea", "key": "w", "retriever": 0.9},
    {"body": "solar panels make power", "key": "s", "retriever": 0.2},
    {"body": "a bread recipe", "key": "b", "retriever": 0.5},
]


def test_fields_and_their_keywords_give_the_same_result():
    fields = InputFields(
        text_field="body", id_field="key", score_field="points", first_stage_field="retriever"
    )
    reranker = load("bm25")
    by_object = reranker.rerank("solar power", DOCS, fields=fields)
    by_keywords = reranker.rerank(
        "solar power",
        DOCS,
        text_field="body",
        id_field="key",
        score_field="points",
        first_stage_field="retriever",
    )
    by_function = rerankit.rerank(
        "solar power",
        DOCS,
        reranker="bm25",
        text_field="body",
        id_field="key",
        score_field="points",
        first_stage_field="retriever",
    )
    for result in (by_keywords, by_function):
        assert [r.id for r in result] == [r.id for r in by_object]
        assert [r.score for r in result] == [r.score for r in by_object]
    assert by_object[0].id == "s" and "points" in by_object[0].document
    assert "points" not in DOCS[1]  # the caller's dicts are not touched


def test_a_keyword_refines_the_fields_object_without_changing_it():
    fields = InputFields(text_field="body")
    result = load("bm25").rerank("solar", DOCS, fields=fields, score_field="s")
    assert "s" in result[0].document and fields.score_field == "rerank_score"
    lower = load("bm25").rerank(
        "solar",
        DOCS,
        fields=fields,
        first_stage_field="retriever",
        first_stage_higher_is_better=False,
    )
    assert lower  # the distance flag reaches the reader without error
    with pytest.raises(TypeError, match="'txt_field'"):
        load("bm25").rerank("solar", DOCS, fields=fields, txt_field="body")


def test_ray_options_split_the_engine_from_the_rerank():
    ray, rest = RayOptions.split(None, {"workers": 3, "num_gpus": 1.0, "top_k": 5})
    assert ray == RayOptions(workers=3, num_gpus=1.0)
    assert rest == {"top_k": 5}
    ray, rest = RayOptions.split(RayOptions(batch_size=4), {"concurrency": 2})
    assert (ray.batch_size, ray.concurrency, rest) == (4, 2, {})
    with pytest.raises(InputError, match="must be >= 1"):
        RayOptions(workers=0)


def test_text_fields_join_field_lines_with_no_title_reading():
    doc = {"id": "d", "title": "Solar", "body": "Panels.", "views": 42}
    other = {"id": "e", "body": "Wind.", "summary": "Turbines"}  # the only one with a summary
    joined, second = InputFields(text_fields=("title", "body", "views", "summary")).read(
        [doc, other]
    )
    assert joined.text == "title: Solar\nbody: Panels.\nviews: 42"
    assert second.text == "body: Wind.\nsummary: Turbines"
    assert InputFields(text_field="body").read([doc])[0].text == "Solar\nPanels."
    with pytest.raises(InvalidDocumentError, match="none of the text fields"):
        InputFields(text_fields=("summary",)).read([doc])
    assert doc == {"id": "d", "title": "Solar", "body": "Panels.", "views": 42}
    assert np.isfinite(
        rerankit.rerank("solar", [doc], reranker="bm25", text_fields=("body",))[0].score
    )


def test_a_first_stage_field_no_document_has_is_refused_one_some_lack_is_not():
    docs = [
        {"id": "a", "text": "vaccines train the immune system", "retrieval": {"score": 2.0}},
        {"id": "b", "text": "fridges keep vaccines cold", "distance": 0.4},
    ]
    with pytest.raises(InvalidDocumentError, match=r"'retriever' is in none of the 2") as err:
        rerankit.rerank("vaccines", docs, reranker="bm25", first_stage_field="retriever")
    assert "['id', 'retrieval', 'text']" in str(err.value) and err.value.field == "retriever"
    # a field some documents have (here one, by a dotted path) is read where it is
    result = rerankit.rerank("vaccines", docs, reranker="bm25", first_stage_field="retrieval.score")
    assert sorted(d.id for d in result) == ["a", "b"]
    assert docs[0] == {
        "id": "a",
        "text": "vaccines train the immune system",
        "retrieval": {"score": 2.0},
    }
    # no documents: nothing to check, an empty answer
    assert list(rerankit.rerank("q", [], reranker="bm25", first_stage_field="retriever")) == []


def test_an_error_from_the_blocking_rerank_carries_no_event_loop_error_in_its_chain():
    """rerank() checks for a running event loop first: its "no running event loop" is no
    part of an error the rerank itself raises (a traceback would show it first)."""
    with pytest.raises(InvalidDocumentError, match="missing text field 'text'") as err:
        rerankit.rerank("vaccines", [{"content": "vaccines train cells"}], reranker="bm25")
    # the fix in Python's words (the command line names --text-field)
    assert str(err.value).endswith(
        "; name yours with text_field='NAME' (or several: text_fields=[...])"
    )
    chain, exc = [], err.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert [type(e).__name__ for e in chain] == ["InvalidDocumentError"]


def test_a_text_field_of_several_that_no_document_has_is_refused_as_a_misspelt_name():
    """text_fields=("title", "bodyy") ranked by the titles alone, silently; a name in none
    of the documents is refused, as an id, title or first-stage field is."""
    docs = [
        {"id": "a", "title": "Vaccines", "body": "They train B and T cells."},
        {"id": "b", "title": "Storage", "body": "Keep them cold."},
    ]
    refused = r"text field 'bodyy' is in none of the 2"
    with pytest.raises(InvalidDocumentError, match=refused) as err:
        rerankit.rerank("vaccines", docs, reranker="bm25", text_fields=("title", "bodyy"))
    message = str(err.value)
    assert "['body', 'id', 'title']" in message and "leave it out of text_fields" in message
    assert err.value.field == "bodyy"
    with pytest.raises(InvalidDocumentError, match="'bodyy' is in none"):  # the object form
        InputFields(text_fields=("title", "bodyy")).read(docs)
    # a LangChain-like document's metadata is checked the same way
    langchain = pytest.importorskip("langchain_core.documents")
    chunks = [langchain.Document(page_content="It trains cells.", metadata={"section": "How"})]
    with pytest.raises(InvalidDocumentError, match="'sektion' is in none of the 1"):
        InputFields(text_fields=("sektion", "page_content")).read(chunks)


def test_a_document_lacking_the_text_field_others_have_is_not_told_to_name_the_field():
    """The hint to name the field (text_field=) is for a list where the field is wrong; when
    earlier documents have it, this document lacks its text, and the error says so."""
    docs = [{"id": "a", "body": "vaccines train cells"}, {"id": "b", "summary": "cold storage"}]
    with pytest.raises(InvalidDocumentError, match="document 1: missing text field 'body'") as err:
        rerankit.rerank("vaccines", docs, reranker="bm25", text_field="body")
    message = str(err.value)
    assert "text_field='NAME'" not in message
    assert "an earlier document has it" in message and err.value.index == 1
    # the field missing from the first document on: the hint to name it stays
    with pytest.raises(InvalidDocumentError, match="name yours with text_field='NAME'"):
        rerankit.rerank("vaccines", docs[::-1], reranker="bm25", text_field="body")


def test_a_misspelt_field_option_is_a_type_error_naming_the_option_meant():
    docs = [{"body": "vaccines train cells"}]
    for call in (rerankit.rerank, load("bm25").rerank):
        with pytest.raises(TypeError, match=r"'text_feild' \(did you mean 'text_field'\?\)"):
            call("vaccines", docs, text_feild="body")
    with pytest.raises(TypeError, match=r"'top_n' \(use top_k\)") as one:  # another API's
        rerankit.rerank("vaccines", docs, reranker="bm25", top_n=1)
    # in its number, as Python says it
    assert "rerank() got an unexpected keyword argument: 'top_n' (use top_k)" in str(one.value)
    with pytest.raises(TypeError) as two:
        load("bm25").rerank("vaccines", docs, top_n=1, text_feild="body")
    assert "rerank() got unexpected keyword arguments: 'top_n' (use top_k), 'text_feild' (" in (
        str(two.value)
    )


def test_an_id_field_named_that_no_document_has_is_refused_the_default_is_not():
    docs = [
        {"url": "u1", "content": "vaccines train the immune system"},
        {"url": "u2", "content": "fridges keep vaccines cold"},
    ]
    with pytest.raises(InvalidDocumentError, match=r"id field 'uri' is in none of the 2") as err:
        rerankit.rerank("vaccines", docs, reranker="bm25", text_field="content", id_field="uri")
    assert "['content', 'url']" in str(err.value) and err.value.field == "uri"
    with pytest.raises(InvalidDocumentError, match="'uri' is in none"):  # the object form
        InputFields(text_field="content", id_field="uri").read(docs)
    # named and present in some documents: read where it is
    some = [docs[0], {"content": "no url here"}]
    result = rerankit.rerank(
        "vaccines", some, reranker="bm25", text_field="content", id_field="url"
    )
    assert sorted(str(d.id) for d in result) == ["None", "u1"]
    # the default "id" that no document has: no ids, no error; strings carry no fields
    default = rerankit.rerank("vaccines", docs, reranker="bm25", text_field="content")
    assert [d.id for d in default] == [None, None]
    assert rerankit.rerank("vaccines", ["a", "b"], reranker="bm25", id_field="uri")[0].id is None


def _title_reader(query, doc):
    """A score from what scorers read: the text (title line first) and the title alone."""
    title = document_title(doc) or ""
    return 10 * (query in title) + len(doc.text) / 100


HEADLINED = [
    {"doc_id": "a", "headline": "Solar", "body": "panels on roofs"},
    {"doc_id": "b", "headline": 1999, "body": "solar power in a year"},
    {"doc_id": "c", "headline": None, "body": "wind at sea"},
    {"doc_id": "d", "body": "a bread recipe"},
]


@pytest.mark.parametrize("how", ["keyword", "object"])
def test_a_title_field_is_read_exactly_as_a_title_field(how):
    renamed = [{"title" if k == "headline" else k: v for k, v in d.items()} for d in HEADLINED]
    scorer = FunctionScorer(_title_reader)
    as_title = rerankit.rerank("Solar", renamed, reranker=scorer, text_field="body")
    options = {"text_field": "body", "title_field": "headline"}
    named = (
        rerankit.rerank("Solar", HEADLINED, reranker=scorer, **options)
        if how == "keyword"
        else load(scorer).rerank("Solar", HEADLINED, fields=InputFields(**options))
    )
    assert [(r.index, r.score, r.text) for r in named] == [
        (r.index, r.score, r.text) for r in as_title
    ]
    assert named[0].text == "Solar\npanels on roofs" and named[0].score > 10
    assert "title" not in HEADLINED[0]  # the caller's dicts are not touched
    # a LangChain-like object's metadata key and an object's attribute are read the same way
    assert (
        InputFields(text_field="body", title_field="headline")
        .read([SimpleNamespace(body="panels", headline="Solar")])[0]
        .text
        == "Solar\npanels"
    )


def test_a_title_field_no_document_has_or_with_text_fields_is_refused():
    with pytest.raises(InvalidDocumentError, match=r"title field 'heading' is in none of the 4"):
        rerankit.rerank("x", HEADLINED, reranker="bm25", text_field="body", title_field="heading")
    with pytest.raises(InvalidDocumentError, match=r"field 'headline' must be a string, a number"):
        InputFields(text_field="body", title_field="headline").read(
            [{"body": "b", "headline": ["a list"]}]
        )
    with pytest.raises(InputError, match="title_field='headline' does not apply with text_fields"):
        InputFields(text_fields=("body",), title_field="headline").read(HEADLINED)


def test_a_pandas_dataframe_is_read_as_its_rows_and_left_unchanged():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "doc_id": ["w", "s", "b", "n"],
            "title": ["Wind", "Solar", None, float("nan")],  # empty cells read as no title
            "text": ["turbines at sea", "panels make solar power", "a bread recipe", "power"],
            "score": [0.9, 0.2, 0.5, 0.1],
            "rerank_score": [1.0, 2.0, 3.0, 4.0],
        },
        index=[10, 11, 12, 13],
    )
    before = frame.copy(deep=True)
    records = frame.to_dict("records")
    keywords = {"reranker": "bm25", "id_field": "doc_id", "first_stage_field": "score"}
    from_frame = rerankit.rerank("solar power", frame, **keywords)
    from_records = rerankit.rerank("solar power", records, **keywords)
    assert frame.equals(before) and list(frame.index) == [10, 11, 12, 13]
    assert [(d.id, d.index, d.score) for d in from_frame] == [
        (d.id, d.index, d.score) for d in from_records
    ]
    assert [d.document for d in from_frame] == [d.document for d in from_records]
    assert from_frame.warnings == from_records.warnings
    assert any("already had a 'rerank_score' field" in w for w in from_frame.warnings)
    top = from_frame[0]
    assert top.id == "s" and frame.iloc[top.index]["doc_id"] == "s"
    read = InputFields(id_field="doc_id").read(frame)
    assert [(d.id, document_title(d)) for d in read] == [
        ("w", "Wind"),
        ("s", "Solar"),
        ("b", None),
        ("n", None),
    ]


def test_a_beir_corpus_line_gives_its_id_from_underscore_id():
    # BEIR's corpus.jsonl: {"_id", "title", "text"}; read without naming a field
    docs = [
        {"_id": "d1", "title": "Vaccines", "text": "vaccines train the immune system"},
        {"_id": "d2", "title": "Fridges", "text": "fridges keep food cold"},
    ]
    before = [dict(d) for d in docs]
    result = rerankit.rerank("vaccines", docs, reranker="bm25")
    assert [d.id for d in result] == ["d1", "d2"]
    read = InputFields().read(docs)
    assert [d.id for d in read] == ["d1", "d2"]
    assert all("_id" not in d.metadata for d in read)  # the id, not also metadata
    assert docs == before
    # an "id" wins over "_id"; a named id field reads only that field
    both = [{"id": "a", "_id": "b", "text": "vaccines"}]
    assert rerankit.rerank("vaccines", both, reranker="bm25")[0].id == "a"
    named = InputFields(id_field="_id").read(both)
    assert named[0].id == "b" and named[0].metadata["id"] == "a"


@pytest.mark.parametrize(
    "options",
    [
        {"title_field": "headline"},
        {"first_stage_field": "score"},
        {"text_fields": ("title", "bdy")},
        {"id_field": "doc_id"},
    ],
)
def test_a_field_no_document_has_is_refused_listing_every_field_the_document_has(options):
    """The list shows the caller's own fields, the text, id and title among them (it showed
    ['date', 'source'] beside a title it had read, as if the document had no title)."""
    doc = {"id": "n1", "title": "Rooftop solar", "body": "Panels.", "date": "2025-06-01"}
    if "text_fields" not in options:
        options = {"text_field": "body", **options}
    with pytest.raises(InvalidDocumentError) as err:
        InputFields(**options).read([doc])
    assert "document 0 has the fields ['body', 'date', 'id', 'title']" in str(err.value)


def test_a_text_field_no_document_has_is_named_by_the_flag_on_the_command_line():
    from rerankit.errors import flags_first

    doc = {"title": "Rooftop solar", "body": "Panels."}
    with flags_first("rank"), pytest.raises(InvalidDocumentError) as err:
        InputFields(text_fields=("title", "bdy")).read([doc])
    assert str(err.value).endswith("leave it out of --text-fields")
    with pytest.raises(InvalidDocumentError, match=r"leave it out of text_fields$"):
        InputFields(text_fields=("title", "bdy")).read([doc])
