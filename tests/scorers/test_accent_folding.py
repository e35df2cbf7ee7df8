"""Accents are folded in lexical matching for every language but English: a French reader
typing ``etiquette`` finds ``étiquette`` (and the other way round); English analysis keeps
its accents, so every English figure stays as it was."""

from __future__ import annotations

import numpy as np
import pytest

from rerankit.scorers import BM25Scorer
from rerankit.text import Analyzer
from rerankit.text.words import fold_accents

DOCS = ["Imprimez l'étiquette de retour.", "ÉTIQUETTE collée", "Horaires du magasin"]


@pytest.mark.parametrize("query", ["etiquette", "Etiquette", "étiquette", "ETIQUETTE"])
def test_french_matches_with_or_without_accents_both_ways(query):
    scores = BM25Scorer(language="fr").score_texts(query, DOCS)
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0
    accented = BM25Scorer(language="fr").score_texts("étiquette", DOCS)
    np.testing.assert_array_equal(scores, accented)


def test_documents_without_accents_match_an_accented_query():
    scores = BM25Scorer(language="de").score_texts("Größe Lieferzeit", ["Grosse Lieferzeit", "x"])
    assert scores[0] > 0 and scores[1] == 0


def test_english_keeps_its_accents_as_before():
    # the English analysis of accented words, exactly as it was before folding existed
    assert Analyzer(language="en").terms("étiquette café Rücksendung naïve") == [
        "étiquett",
        "café",
        "rücksendung",
        "naïv",
    ]
    assert BM25Scorer().score_texts("etiquette", ["l'étiquette", "other"]).tolist() == [0, 0]


def test_fold_accents_can_be_set_either_way():
    assert Analyzer(language="fr", fold_accents=False).terms("étiquette") == ["étiquet"]
    assert Analyzer(language="en", fold_accents=True).terms("café") == ["cafe"]
    with pytest.raises(ValueError, match="fold_accents"):
        Analyzer(fold_accents="yes")


@pytest.mark.parametrize("cache_words", [0, 500_000])
def test_batch_paths_fold_the_same(cache_words):
    analyzer = Analyzer(language="fr", cache_words=cache_words)
    batch = analyzer.analyze(["étiquette", "etiquette", "ÉTIQUETTES"])
    assert set(batch.vocab) == {"etiquet"}
    assert batch.term_ids.tolist() == [batch.vocab["etiquet"]] * 3


def test_what_is_folded_and_what_is_kept():
    assert fold_accents("àéîõüñçåőşřž") == "aeiounc" + "aosrz"
    assert fold_accents("cœur Æsir søster łódź đ") == "coeur AEsir soster lodz d"
    # other scripts keep their marks: Cyrillic й, Greek tonos, kana voicing, Han
    for kept in ("й", "ё", "ά", "が", "パ", "返品", "ß"):
        assert fold_accents(kept) == kept


def test_stopwords_match_with_or_without_accents_and_surfaces_keep_theirs():
    analyzer = Analyzer(language="fr", stopwords=["été"])
    assert analyzer.terms("ete été étiquette") == ["etiquet"]
    terms, surfaces = analyzer.query_terms("étiquette")
    assert terms == ["etiquet"] and surfaces == {"etiquet": {"étiquette"}}
