"""A pipeline's later stage sees the documents the earlier ones reordered: what it says of
a document (an ``InvalidDocumentError``'s index, a warning's ``document 0`` or
``documents [0]``) is told by the caller's input index, in Python, on the command line
and over HTTP, so that it names the document the flags name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

import rerankit
from rerankit import register_reranker
from rerankit.cli import main
from rerankit.errors import InvalidDocumentError
from rerankit.registry import register
from rerankit.rerankers import Pipeline
from rerankit.scorers import BM25Scorer, ScoreBatch
from rerankit.scorers.base import which_document
from rerankit.server import ServerSettings, create_app

# bm25 puts the last document (no 'boost' field) first: position 0 of the second stage
DOCS = [
    {"id": "w", "text": "wind turbines", "boost": 1},
    {"id": "s", "text": "solar power", "boost": 2},
    {"id": "x", "text": "solar power, solar power"},
]
QUERY = "solar power"


class Strict:
    """Refuses a document without a 'boost' field, by its position in the docs it got."""

    name = "strict_boost"

    async def score(self, query, docs, **context):
        for i, d in enumerate(docs):
            if "boost" not in d.metadata:
                raise InvalidDocumentError("document has no 'boost' field", index=i, field="boost")
        return np.array([float(d.metadata["boost"]) for d in docs])


class Unlocated:
    """Refuses the whole list, naming no document."""

    name = "unlocated"

    async def score(self, query, docs, **context):
        raise InvalidDocumentError("documents without a 'boost' field")


class FirstIsNaN:
    """NaN for the first document it gets."""

    name = "first_nan"

    async def score(self, query, docs, **context):
        return np.array([np.nan] + [1.0] * (len(docs) - 1))


class FlagsFirst:
    """Flags the first document it gets, with a warning naming it as scorers do."""

    name = "flags_first"

    async def score(self, query, docs, **context):
        return ScoreBatch(
            values=np.ones(len(docs)),
            flags={0: ["odd"]},
            warnings=[f"{which_document(0, docs[0].id)}: odd; scored 1.0"],
        )


register("scorer", "idx_strict_boost", Strict)
register_reranker("idx-strict", lambda: Pipeline([BM25Scorer(), Strict()]))


def test_an_invalid_document_error_needs_no_index():
    with pytest.raises(InvalidDocumentError, match="without a 'boost' field") as err:
        rerankit.rerank(QUERY, DOCS, reranker=Pipeline([BM25Scorer(), Unlocated()]))
    assert err.value.index is None


def test_a_later_stage_s_document_error_names_the_caller_s_index():
    with pytest.raises(InvalidDocumentError) as err:
        rerankit.rerank(QUERY, DOCS, reranker=Pipeline([BM25Scorer(), Strict()]))
    assert (err.value.index, err.value.field) == (2, "boost")
    assert str(err.value) == "document 2: document has no 'boost' field"


def test_a_later_stage_s_non_finite_warning_names_the_flagged_document():
    result = rerankit.rerank(QUERY, DOCS, reranker=Pipeline([BM25Scorer(), FirstIsNaN()]))
    flagged = [r.index for r in result if "non_finite:first_nan" in r.flags]
    assert flagged == [2]
    said = [w for w in result.warnings if "non-finite" in w]
    assert len(said) == 1 and "(documents [2])" in said[0], result.warnings


def test_a_later_stage_s_per_document_warning_names_the_flagged_document():
    result = rerankit.rerank(QUERY, DOCS, reranker=Pipeline([BM25Scorer(), FlagsFirst()]))
    assert [r.index for r in result if "odd" in r.flags] == [2]
    assert "stage 'flags_first': document 2 (id 'x'): odd; scored 1.0" in result.warnings


def test_the_command_line_names_the_line_of_the_document_a_later_stage_refused(tmp_path, capsys):
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    spec = tmp_path / "strict.toml"
    spec.write_text(
        '[[stages]]\nreranker = "bm25"\n\n[[stages]]\n[stages.scorer]\ntype = "idx_strict_boost"\n'
    )
    code = main(["rank", "-q", QUERY, "-i", str(docs), "-r", str(spec)])
    err = capsys.readouterr().err
    assert code != 0
    assert f"{docs}:3: document has no 'boost' field" in err, err


def test_the_service_s_400_names_the_document_and_its_field():
    settings = ServerSettings(pipelines={"strict": "idx-strict"}, default="strict")
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/rerank", json={"query": QUERY, "documents": DOCS})
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == "document 2: document has no 'boost' field"


def test_a_document_error_s_message_for_a_client_names_what_it_knows():
    assert InvalidDocumentError("no boost", index=3, field="b").located() == (
        "document 3: no boost (field 'b')"
    )
    assert InvalidDocumentError("document 3: no 'b'", index=3, field="b").located() == (
        "document 3: no 'b'"
    )
    assert InvalidDocumentError("no boost").located() == "no boost"
