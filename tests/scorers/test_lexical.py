from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from rerankit.scorers import BM25Scorer, JaccardScorer, TextSimilarity
from rerankit.text import ENGLISH_STOPWORDS, Analyzer, split_words

PLAIN = {"stopwords": None, "stemmer": None}

VOCABULARY = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
WORDS = st.sampled_from(VOCABULARY)
CORPORA = st.lists(st.lists(WORDS, min_size=0, max_size=12), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(
    corpus=CORPORA,
    query=st.lists(WORDS, min_size=1, max_size=5),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_bm25_okapi_matches_rank_bm25(corpus, query, k1, b):
    # The small vocabulary makes many terms appear in over half the documents, so the
    # negative-idf floor of rank_bm25 is exercised too.
    if sum(map(len, corpus)) == 0:
        return  # rank_bm25 divides by zero on an all-empty corpus
    with np.errstate(invalid="ignore", divide="ignore"):  # rank_bm25's own 0/0, see below
        reference = BM25Okapi(corpus, k1=k1, b=b).get_scores(query)
    ours = BM25Scorer(k1=k1, b=b, idf="okapi", **PLAIN).score_texts(
        " ".join(query), [" ".join(d) for d in corpus]
    )
    # rank_bm25 divides 0 by 0 for an empty document when b = 1; ours scores it 0.
    undefined = np.isnan(reference)
    np.testing.assert_allclose(ours[~undefined], reference[~undefined], rtol=0, atol=1e-6)
    assert (ours[undefined] == 0).all()


def test_bm25_okapi_matches_rank_bm25_on_prose():
    texts = [
        "The quick brown fox jumps over the lazy dog.",
        "A fox is a small omnivorous mammal; the red fox is the largest of the true foxes.",
        "Dogs were domesticated from wolves, and dogs are loyal.",
        "",
        "Quick quick quick: a fox, a dog and a brown bear.",
    ]
    query = "quick brown fox"
    tokens = [re.findall(r"[^\W_]+", t.lower()) for t in texts]
    reference = BM25Okapi(tokens).get_scores(re.findall(r"[^\W_]+", query.lower()))
    ours = BM25Scorer(idf="okapi", **PLAIN).score_texts(query, texts)
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-6)


def _lucene_reference(corpus, query, k1, b):
    """BM25 with Lucene's idf, written out term by term."""
    n = len(corpus)
    avgdl = sum(map(len, corpus)) / n
    scores = []
    for doc in corpus:
        s = 0.0
        for q in query:
            df = sum(1 for d in corpus if q in d)
            if df == 0:
                continue
            tf = doc.count(q)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(s)
    return scores


@settings(max_examples=100, deadline=None)
@given(corpus=CORPORA, query=st.lists(WORDS, min_size=1, max_size=5))
def test_bm25_lucene_matches_written_out_formula(corpus, query):
    if sum(map(len, corpus)) == 0:
        return
    ours = BM25Scorer(k1=1.2, b=0.75, **PLAIN).score_texts(
        " ".join(query), [" ".join(d) for d in corpus]
    )
    np.testing.assert_allclose(ours, _lucene_reference(corpus, query, 1.2, 0.75), atol=1e-9)
    assert (ours >= 0).all()


TEXT = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 _-.,;:'\"!?\n\té\u00fc\u4e2d\u2014")), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=6), lowercase=st.booleans())
def test_split_words_fast_path_equals_regex_path(texts, lowercase):
    expected = [re.findall(r"[^\W_]+", t.lower() if lowercase else t) for t in texts]
    assert split_words(texts, lowercase=lowercase) == expected
    # Each text alone takes the path its own characters allow; results must agree.
    assert [split_words([t], lowercase=lowercase)[0] for t in texts] == expected


def test_split_words_handles_embedded_separator_and_unicode():
    assert split_words(["a\x00b", "c"]) == [["a", "b"], ["c"]]
    assert split_words(["Café crème", "naïve_user"]) == [["café", "crème"], ["naïve", "user"]]


def test_analyzer_stopwords_and_stemming():
    analyzer = Analyzer()
    assert analyzer.terms("The runners were running to the race") == [
        "runner",
        "were",
        "run",
        "race",
    ]
    assert "the" in ENGLISH_STOPWORDS
    assert Analyzer(stopwords=None, stemmer=None).terms("The Runs") == ["the", "runs"]
    assert Analyzer(stopwords={"runs"}, stemmer=None).terms("The Runs") == ["the"]
    assert Analyzer(stemmer=str.upper, stopwords=None).terms("ab cd") == ["AB", "CD"]
    with pytest.raises(ValueError, match="unknown stemmer language"):
        Analyzer(stemmer="klingon")
    with pytest.raises(ValueError, match="unknown stopword list"):
        Analyzer(stopwords="xx")


def test_stemming_lets_inflections_match_and_stopwords_do_not_score():
    texts = ["she runs every morning", "the the the the", "a quiet evening"]
    scores = BM25Scorer().score_texts("the running", texts)
    assert scores[0] > 0 and scores[1] == 0 and scores[2] == 0
    plain = BM25Scorer(**PLAIN).score_texts("the running", texts)
    assert plain[0] == 0 and plain[1] > 0


def test_stopwords_shorten_document_length_like_removing_them_by_hand():
    texts = ["the cat sat on the mat", "a dog and a cat"]
    with_stop = BM25Scorer(stemmer=None).score_texts("cat", texts)
    by_hand = BM25Scorer(**PLAIN).score_texts("cat", ["cat sat mat", "dog cat"])
    np.testing.assert_allclose(with_stop, by_hand)


def test_bm25_edge_cases():
    scorer = BM25Scorer()
    assert scorer.score_texts("anything", []).shape == (0,)
    np.testing.assert_array_equal(scorer.score_texts("unmatched", ["a b", "c"]), [0.0, 0.0])
    np.testing.assert_array_equal(scorer.score_texts("x", ["", ""]), [0.0, 0.0])
    with pytest.raises(ValueError, match="k1"):
        BM25Scorer(k1=-1)
    with pytest.raises(ValueError, match="b must be"):
        BM25Scorer(b=2)
    with pytest.raises(ValueError, match="idf"):
        BM25Scorer(idf="bogus")


@settings(max_examples=100, deadline=None)
@given(corpus=CORPORA, query=st.lists(WORDS, min_size=0, max_size=5))
def test_jaccard_matches_set_definition(corpus, query):
    ours = JaccardScorer(**PLAIN).score_texts(" ".join(query), [" ".join(d) for d in corpus])
    q = set(query)
    expected = [len(q & set(d)) / len(q | set(d)) if q | set(d) and q else 0.0 for d in corpus]
    np.testing.assert_allclose(ours, expected, atol=1e-12)


def test_text_similarity_is_the_documented_blend():
    texts = ["solar power plants", "solar", "wind turbines", "power of the sun and solar cells"]
    query = "solar power"
    bm25 = BM25Scorer(**PLAIN).score_texts(query, texts)
    jac = JaccardScorer(**PLAIN).score_texts(query, texts)
    blend = TextSimilarity(bm25_weight=0.7, jaccard_weight=0.3, **PLAIN).score_texts(query, texts)
    np.testing.assert_allclose(blend, 0.7 * bm25 / bm25.max() + 0.3 * jac)
    assert blend.min() >= 0 and blend.max() <= 1
    assert blend[2] == 0.0
    # weights that do not sum to 1 are rescaled
    np.testing.assert_allclose(
        TextSimilarity(bm25_weight=7, jaccard_weight=3, **PLAIN).score_texts(query, texts), blend
    )
    with pytest.raises(ValueError, match="not both 0"):
        TextSimilarity(bm25_weight=0, jaccard_weight=0)


@settings(max_examples=60, deadline=None)
@given(
    corpus=st.lists(
        st.lists(st.sampled_from(["café", "naïve", "alpha", "beta", "Ünïcode", "x_y"]), max_size=8),
        min_size=1,
        max_size=10,
    ),
    query=st.lists(st.sampled_from(["café", "alpha", "ünïcode", "y"]), min_size=1, max_size=3),
)
def test_bm25_on_non_ascii_batches_matches_the_formula(corpus, query):
    texts = [" ".join(d) for d in corpus]
    if not any(re.findall(r"[^\W_]+", t) for t in texts):
        return
    tokens = [re.findall(r"[^\W_]+", t.lower()) for t in texts]
    ours = BM25Scorer(k1=1.2, b=0.75, **PLAIN).score_texts(" ".join(query), texts)
    reference = _lucene_reference(tokens, [q.lower() for q in query], 1.2, 0.75)
    np.testing.assert_allclose(ours, reference, atol=1e-9)


def test_scoring_runs_off_the_event_loop_thread():
    """CPU work of a lexical scorer happens on a worker thread, not on the caller's loop."""
    import asyncio
    import threading

    from rerankit import Document

    seen: set[int] = set()

    def stem(word: str) -> str:
        seen.add(threading.get_ident())
        return word

    scorer = BM25Scorer(stemmer=stem, stopwords=None)
    docs = [Document("solar panels"), Document("wind farms")]

    async def main() -> int:
        await scorer.score("solar power", docs)
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert seen and loop_thread not in seen


def test_coverage_scorer_through_a_declared_pipeline():
    from rerankit import load, registry

    reranker = load({"scorer": {"type": "coverage"}, "name": "cov"})
    docs = ["solar panels on roofs", "wind power at sea", "solar power stations", "pasta"]
    result = reranker.rerank("solar power plants", docs)
    # query terms after stemming: solar, power, plant (3)
    by_text = {r.text: r.score for r in result}
    assert by_text == {
        "solar panels on roofs": 1 / 3,
        "wind power at sea": 1 / 3,
        "solar power stations": 2 / 3,
        "pasta": 0.0,
    }
    assert result[0].text == "solar power stations"
    assert "coverage" in registry.available("scorer")


def test_chinese_text_gets_bigram_terms_and_nonzero_scores():
    docs = ["东京大学的历史很长", "京都的寺庙很美", "今天天气很好"]
    analyzer = Analyzer(language="zh")
    assert analyzer.terms("东京大学") == ["东京", "京大", "大学"]
    assert Analyzer().terms("东 x") == ["东", "x"]  # a lone character stays a unigram
    for language in ("zh", "en"):  # CJK runs are bigrams whatever the language
        scores = BM25Scorer(language=language).score_texts("东京大学", docs)
        assert scores[0] > 0 and scores[0] > scores[1] >= 0 and scores[2] == 0


def test_no_matching_term_is_said_not_silent():
    batch = BM25Scorer().score_batch("quantum chromodynamics", ["solar panels", "wind farms"])
    assert not batch.values.any()
    assert batch.warnings and "no query term occurs in any candidate" in batch.warnings[0]
    assert not BM25Scorer().score_batch("solar", ["solar panels", "wind"]).warnings


def test_background_idf_follows_the_word_frequency_table():
    pytest.importorskip("wordfreq", reason="background idf needs the 'lexical' extra")
    import math

    from wordfreq import get_frequency_dict

    table = get_frequency_dict("en", wordlist="best")
    scorer = BM25Scorer(idf="background", stopwords=None, stemmer=None, k1=1.2, b=0.0)
    docs = ["the vaccine", "the system", "the vaccine system"]
    scores = scorer.score_texts("vaccine system", docs)

    def idf(word: str) -> float:
        p = -math.expm1(-table[word] * 1000.0)
        df = 1e7 * p
        return math.log1p((1e7 - df + 0.5) / (df + 0.5))

    # b = 0: each matching term adds tf (k1 + 1) / (tf + k1) * idf = idf for tf = 1
    assert scores == pytest.approx([idf("vaccine"), idf("system"), idf("vaccine") + idf("system")])
    assert idf("vaccine") > idf("system")  # the rarer word weighs more, whatever the candidates
    stemmed = BM25Scorer(idf="background").score_texts("vaccines", ["vaccine", "the system"])
    assert stemmed[0] > 0 and stemmed[1] == 0


def test_corpus_statistics_as_idf():
    from rerankit.eval.first_stage import BM25Index

    corpus = ["solar panels", "solar power", "wind power", "coal power", "hydro power"]
    index = BM25Index([str(i) for i in range(5)], corpus)
    stats = index.corpus_stats()
    assert stats.n_docs == 5 and stats.df["power"] == 4 and stats.df["solar"] == 2
    scorer = BM25Scorer(idf=stats, k1=1.2, b=0.0, stemmer=None)
    # two candidates: their own idf would weigh 'solar' and 'power' equally
    scores = scorer.score_texts("solar power", ["solar things", "power things"])
    assert scores[0] > scores[1] > 0


@settings(max_examples=100, deadline=None)
@given(
    corpus=CORPORA, query=st.lists(WORDS, min_size=1, max_size=5), seen=st.permutations(VOCABULARY)
)
def test_bm25_scores_do_not_depend_on_what_the_analyzer_met_before(corpus, query, seen):
    # a batch worker's analyzer has met other texts than the local one, so its vocabulary
    # numbers the words differently; the scores must still be the same bits, or exactly tied
    # documents could swap places between the two runs
    texts = [" ".join(doc) for doc in corpus]
    for idf in ("lucene", "okapi"):
        fresh = BM25Scorer(analyzer=Analyzer(**PLAIN), idf=idf)
        used = BM25Scorer(analyzer=Analyzer(**PLAIN), idf=idf)
        used.score_texts(" ".join(seen), [" ".join(seen)])
        expected = fresh.score_texts(" ".join(query), texts)
        np.testing.assert_array_equal(used.score_texts(" ".join(query), texts), expected)
