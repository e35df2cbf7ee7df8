"""One bad document stays one bad document: text a tokenizer cannot take (a lone surrogate,
valid JSON) is cleaned and flagged on that document only, and the others score as they
would without it."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("torch", reason="local models need the 'torch' extra")

from rerankit import Document, rerank
from rerankit.scorers import CausalLMScorer, CrossEncoderScorer, EmbeddingScorer

QUERY = "how do vaccines work"
GOOD = [
    "vaccines train the immune system to recognise pathogens",
    "the stock market fell sharply on tuesday",
    "immune cells",
]
BAD = "vaccines \ud800 and the immune system"  # a lone surrogate, as a bad decode leaves


def _score(scorer, query, texts):
    return asyncio.run(scorer.score(query, [Document(t) for t in texts]))


def _check_isolated(scorer, *, atol: float) -> None:
    alone = _score(scorer, QUERY, GOOD)
    mixed = _score(scorer, QUERY, [GOOD[0], BAD, *GOOD[1:]])
    values = np.asarray(getattr(mixed, "values", mixed))
    np.testing.assert_allclose(np.delete(values, 1), np.asarray(alone.values), atol=atol)
    assert np.isfinite(values[1])
    assert mixed.flags == {1: ["invalid_unicode"]} and not alone.flags
    assert any("document 1" in w for w in mixed.warnings)
    # the cleaned text scores as the same text with U+FFFD in place of the bad character
    cleaned = _score(scorer, QUERY, [BAD.replace("\ud800", "\ufffd")])
    np.testing.assert_allclose(values[1], cleaned.values[0], atol=atol)


def test_embedding_scorer_flags_only_the_bad_document():
    scorer = EmbeddingScorer(device="cpu", batch_size=1)  # one text per forward: exact
    _check_isolated(scorer, atol=0)
    _check_isolated(scorer.with_passages(48, lead=20), atol=0)


def test_cross_encoder_flags_only_the_bad_document(bert_dir):
    _check_isolated(CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=1), atol=0)
    # batched: padding changes the arithmetic only in the last float digits
    _check_isolated(CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=8), atol=1e-5)


def test_causal_lm_flags_only_the_bad_document(qwen_dir):
    _check_isolated(CausalLMScorer(str(qwen_dir), device="cpu", batch_size=1), atol=0)


def test_a_bad_query_is_cleaned_with_a_warning(bert_dir):
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=1)
    out = _score(scorer, "vaccines \udfff", GOOD)
    same = _score(scorer, "vaccines \ufffd", GOOD)
    np.testing.assert_array_equal(out.values, same.values)
    assert not out.flags and any("query" in w for w in out.warnings)


def test_the_default_pipeline_keeps_the_others_and_flags_the_bad_one():
    docs = [GOOD[0], BAD, *GOOD[1:]]
    before = list(docs)
    mixed = rerank(QUERY, docs)
    alone = rerank(QUERY, GOOD)
    assert docs == before  # nothing the caller passed is changed
    by_text = {r.document: r for r in mixed}
    flagged = [r for r in mixed if r.flags]
    assert [r.document for r in flagged] == [BAD] and "invalid_unicode" in flagged[0].flags
    # said once, though two of the default's signals (embedding, passage) read the text
    assert flagged[0].flags.count("invalid_unicode") == 1
    said = [w for w in mixed.warnings if "not valid Unicode" in w]
    assert said == ["document 1: text is not valid Unicode; bad characters replaced"]
    assert not mixed.degraded and mixed.score_scale == alone.score_scale == "probability"
    for r in alone:
        assert by_text[r.document].score == pytest.approx(r.score, abs=1e-5)
