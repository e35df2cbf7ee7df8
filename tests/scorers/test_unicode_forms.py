"""Words are matched in NFKC, case-folded: the same text in another Unicode form (decomposed
accents, full-width Latin, half-width kana) scores the same, and the text handed back is
the caller's own."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit.scorers import BM25Scorer, ProximityScorer
from rerankit.text import Analyzer
from rerankit.text.words import split_words

NFC = "Rücksendungen sind innerhalb von 30 Tagen kostenlos möglich."
NFD = unicodedata.normalize("NFD", NFC)
OTHER = "Öffnungszeiten Montag bis Freitag."
QUERY = "Rücksendung möglich"


def test_the_pair_really_differs_in_code_points():
    assert NFD != NFC and len(NFD) == len(NFC) + 2


def test_a_decomposed_document_scores_as_its_composed_form_under_bm25():
    for language in ("en", "de"):
        scores = BM25Scorer(language=language).score_texts(QUERY, [NFC, NFD, OTHER])
        assert scores[0] > 0
        assert scores[1] == scores[0]
        decomposed_query = unicodedata.normalize("NFD", QUERY)
        again = BM25Scorer(language=language).score_texts(decomposed_query, [NFC, NFD, OTHER])
        np.testing.assert_allclose(again, scores)


@pytest.mark.slow  # loads the bundled model
def test_a_decomposed_document_scores_as_its_composed_form_under_the_default():
    result = rerankit.rerank(QUERY, [NFC, NFD, OTHER])
    by_index = {r.index: r for r in result}
    assert by_index[1].scores == by_index[0].scores
    assert by_index[1].score == by_index[0].score
    assert by_index[1].scores["bm25_background"] > 0
    # the text handed back is the caller's, decomposed as it came
    assert by_index[1].document == NFD and by_index[1].text == NFD
    assert by_index[0].document == NFC


def test_full_width_latin_and_half_width_kana_match_their_usual_forms():
    latin = BM25Scorer().score_texts("ＰＡＹＰＡＬ", ["Pay with PayPal", "Pay by card"])
    assert latin[0] > 0 and latin[1] == 0
    assert Analyzer().terms("ＰａｙＰａｌ") == Analyzer().terms("paypal")
    kana = BM25Scorer(language="ja").score_texts("ｷｬﾝｾﾙ", ["注文をキャンセルする", "配送について"])
    assert kana[0] > 0 and kana[1] == 0
    # a half-width voiced mark joins its kana (ｶﾞ is ガ)
    assert Analyzer(language="ja").terms("ｶﾞｲﾄﾞ") == Analyzer(language="ja").terms("ガイド")
    assert ProximityScorer().score_texts("ＲＥＴＵＲＮ ＰＯＬＩＣＹ", ["return policy"])[0] > 0


def test_case_folding_matches_sharp_s_and_final_sigma():
    assert split_words(["STRASSE Straße", "ΣΟΦΟΣ σοφος σοφοσ"]) == [
        ["strasse", "strasse"],
        ["σοφοσ", "σοφοσ", "σοφοσ"],
    ]


def test_the_texts_passed_are_not_changed():
    texts = [NFD, "ＰＡＹＰＡＬ", "ｷｬﾝｾﾙ"]
    before = list(texts)
    BM25Scorer().score_texts("ｷｬﾝｾﾙ", texts)
    Analyzer().analyze(texts)
    assert texts == before and texts[0] == NFD


WORDS = st.lists(
    st.sampled_from(
        ["Rücksendung", "möglich", "Café", "résumé", "ＰａｙＰａｌ", "ｷｬﾝｾﾙ", "Øl", "the"]
    ),
    min_size=1,
    max_size=6,
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    query=WORDS, docs=st.lists(WORDS, min_size=1, max_size=4), form=st.sampled_from(["NFD", "NFKD"])
)
def test_any_unicode_form_scores_as_nfc(query, docs, form):
    """The same words in any Unicode form give the same bm25 scores."""
    expected = BM25Scorer(language="de").score_texts(query, docs)
    other = [unicodedata.normalize(form, d) for d in docs]
    got = BM25Scorer(language="de").score_texts(unicodedata.normalize(form, query), other)
    np.testing.assert_allclose(got, expected)
