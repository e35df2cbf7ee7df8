"""What served a click log, as :func:`~rerankit.training.clicks.deploy.served_pipeline`
reads it from ``served``: a Python caller is told of the keyword it passed, with the
command line's flag beside it (``rerankit tune --clicks --served``)."""

from __future__ import annotations

import pytest

from rerankit.errors import ConfigError
from rerankit.training.clicks import served_pipeline
from rerankit.training.clicks.sessions import CorpusTexts


def test_a_served_that_is_neither_a_file_nor_a_name_is_named_as_the_keyword():
    with pytest.raises(ConfigError) as refused:
        served_pipeline("no-such-ranker")
    said = str(refused.value)
    assert said.startswith("served='no-such-ranker' (--served): neither a pipeline file")
    assert "bm25" in said  # the registered names it could have been


def test_what_served_says_where_it_came_from_by_the_keyword():
    assert served_pipeline("bm25").what == (
        "the pipeline that served the log (bm25, as served='bm25' (--served) names it)"
    )
    unnamed = served_pipeline(None)
    assert not unnamed.served
    assert "with served= (--served) to write it" in unnamed.what


def test_a_document_without_a_text_asks_for_the_corpus_by_its_keyword():
    said = CorpusTexts(None).missing("a query", "d1", None)
    assert said.endswith("pass the corpus it came from (data= (--data))")
