"""The analyzer's vectorised batch path against the plain per-text path."""

from __future__ import annotations

import re
import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.scorers import BM25Scorer
from rerankit.text import Analyzer
from rerankit.text.words import WordTable, matching_form, split_batch


def batch_terms(batch) -> list[list[str]]:
    """Each document's terms, in order, from a TermBatch."""
    names = {i: t for t, i in batch.vocab.items()}
    out: list[list[str]] = [[] for _ in range(batch.n_docs)]
    for doc, term in zip(batch.doc_idx.tolist(), batch.term_ids.tolist(), strict=True):
        if term >= 0:  # -1: a dropped stopword
            out[doc].append(names[term])
    return out


# Letters of several scripts, digits, ASCII and Unicode punctuation, a combining accent,
# an emoji, the underscore, the capital sigma, characters whose lowercase has another
# UTF-8 length (İ, the Angstrom and Kelvin signs) and characters NFKC changes (full-width
# Latin, half-width kana and its voiced mark, a ligature, ΐ whose case folding decomposes).
CHARS = [
    *"aAbBzZ09 _-.,'\n\téÉßİΣσ中–·±\u0301😀\u212b\u212aＡｂｶﾞﬁ\u0390\u0308",
    "running",
    "Runners",
    "the",
    "THE",
]
TEXTS = st.lists(
    st.lists(st.sampled_from(CHARS) | st.sampled_from(["supercalifragilistic", "abcdefgh"])).map(
        "".join
    ),
    min_size=1,
    max_size=8,
)
SHARED = {
    "default": Analyzer(),
    "plain": Analyzer(stopwords=None, stemmer=None, lowercase=False),
    "tiny cache": Analyzer(cache_words=3),  # starts afresh almost every batch
}


@settings(max_examples=300, deadline=None)
@given(texts=TEXTS, which=st.sampled_from(sorted(SHARED)))
def test_batch_path_gives_the_per_text_terms(texts, which):
    analyzer = SHARED[which]  # shared across examples: its word table fills and is reused
    expected = [analyzer.terms(t) for t in texts]
    batch = analyzer.analyze(texts)
    assert batch_terms(batch) == expected
    np.testing.assert_array_equal(batch.lengths, [len(t) for t in expected])


@settings(max_examples=200, deadline=None)
@given(texts=TEXTS, lowercase=st.booleans())
def test_split_batch_equals_the_regex(texts, lowercase):
    words = split_batch(texts, lowercase)
    assert words is not None
    expected = [re.findall(r"[^\W_]+", matching_form(t, lowercase)) for t in texts]
    got: list[list[str]] = [[] for _ in texts]
    every = np.arange(words.starts.shape[0])
    for doc, word in zip(words.doc.tolist(), words.strings(every), strict=True):
        got[doc].append(word)
    assert got == expected


def test_equal_words_share_a_key_and_distinct_words_do_not():
    # Lengths around the 8-byte chunk size, shared prefixes, and repeats.
    vocab = ["abcdefg", "abcdefgh", "abcdefghi", "abcdefghij", "abcdefgh" * 2, "abcdefgh" * 2 + "x"]
    vocab += [f"w{i}" * (1 + i % 7) for i in range(500)]
    # Same length, one byte apart, at every position of a 3-chunk word.
    vocab += ["q" * 21] + ["q" * p + "z" + "q" * (20 - p) for p in range(21)]
    texts = [" ".join(vocab), " ".join(reversed(vocab))]
    words = split_batch(texts, True)
    n = len(vocab)
    first, second = words.hashes[:n], words.hashes[n:][::-1]
    np.testing.assert_array_equal(first, second)
    assert np.unique(first).shape[0] == len(set(vocab))


def test_batches_that_need_the_exact_path():
    assert split_batch(["a\x01b", "c"], True) is None  # the separator byte inside a text
    assert split_batch(["x" * 5000], True) is None  # a word longer than MAX_WORD
    analyzer = Analyzer()
    texts = ["a\x01b runs", "y" * 5000 + " running"]
    assert batch_terms(analyzer.analyze(texts)) == [analyzer.terms(t) for t in texts]


def test_word_table_grows_shrinks_and_keeps_every_word():
    rng = np.random.default_rng(0)
    table = WordTable()
    seen: dict[int, int] = {}
    for size in (10, 50_000, 3, 200_000, 1000):
        h = rng.integers(1, 2**63, size=size // 2, dtype=np.uint64)
        h = np.concatenate([h, rng.choice(h, size - size // 2)])  # with repeats
        if seen:  # and some words from earlier batches
            h = np.concatenate([h, np.array(list(seen)[:100], dtype=np.uint64)])
        slots, new_slots, first = table.lookup_or_insert(h)
        table.values[new_slots] = h[first].astype(np.int64)  # value: the key itself
        np.testing.assert_array_equal(table.keys[slots], h)
        np.testing.assert_array_equal(table.values[slots], h.astype(np.int64))
        seen.update(dict.fromkeys(h.tolist()))
        assert table.size == len(seen)
        assert table.size <= table.keys.shape[0] // 2
    # Every earlier word is still found after all the rebuilds.
    old = np.array(list(seen), dtype=np.uint64)
    slots, new_slots, _ = table.lookup_or_insert(old)
    assert new_slots.shape[0] == 0
    np.testing.assert_array_equal(table.values[slots], old.astype(np.int64))


def test_concurrent_batches_on_one_analyzer():
    analyzer = Analyzer()
    corpora = [[f"doc{t} word{t}x{i} running shared" for i in range(300)] for t in range(6)]
    expected = [[analyzer.terms(d) for d in c] for c in corpora]
    results: dict[int, list[list[str]]] = {}

    def work(t: int) -> None:
        for _ in range(5):
            results[t] = batch_terms(analyzer.analyze(corpora[t]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [results[t] for t in range(6)] == expected


def test_scores_do_not_depend_on_the_path_or_on_earlier_batches():
    texts = ["The α-helix of β-catenin – unfolding", "Running runners ran", "ΣΊΣΥΦΟΣ σίσυφος"]
    cold = BM25Scorer(idf="okapi").score_texts("catenin runner σίσυφος", texts)
    warm_analyzer = Analyzer()
    warm_analyzer.analyze(["unrelated words fill the table first"] * 3)
    warm = BM25Scorer(idf="okapi", analyzer=warm_analyzer).score_texts(
        "catenin runner σίσυφος", texts
    )
    exact = BM25Scorer(idf="okapi", analyzer=Analyzer(cache_words=0)).score_texts(
        "catenin runner σίσυφος", texts
    )
    np.testing.assert_allclose(cold, exact, atol=1e-12)
    np.testing.assert_allclose(warm, exact, atol=1e-12)
    assert (exact > 0).all()
