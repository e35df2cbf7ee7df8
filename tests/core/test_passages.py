"""split_passages: how a long document is cut for a bi-encoder to read by passages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.passages import split_passages

WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
SENTENCE = st.lists(WORD, min_size=1, max_size=30).map(lambda ws: " ".join(ws).capitalize() + ".")


def test_sentences_are_packed_whole_and_the_title_starts_every_passage():
    body = " ".join(f"Sentence {i} has exactly six words." for i in range(10))
    text = "A short title\n" + body
    passages = split_passages(text, 20)
    assert len(passages) == 4  # three sentences (18 words) per passage, then one
    for p in passages:
        title, _, rest = p.partition("\n")
        assert title == "A short title"
        assert rest.endswith("words.") and len(rest.split()) <= 20
    assert " ".join(p.partition("\n")[2] for p in passages) == body


def test_a_text_that_fits_comes_back_unchanged():
    for text in ("", "one line", "Title\nA body of five words.", "  spaced \n\n text  "):
        assert split_passages(text, 80) == [text]


def test_a_long_first_paragraph_is_not_taken_for_a_title():
    first = " ".join(["word"] * 45) + "."
    passages = split_passages(first + "\nSecond paragraph here. " * 3, 20)
    assert not any(p.startswith(first) for p in passages[1:])
    assert all("\n" not in p for p in passages)


def test_an_overlong_sentence_is_cut_every_n_words():
    words = [f"w{i}" for i in range(25)]
    passages = split_passages(" ".join(words) + ". Next one.", 10)
    assert [len(p.split()) for p in passages] == [10, 10, 7]
    assert " ".join(passages).split() == [*words[:-1], "w24.", "Next", "one."]


def test_at_most_max_passages_the_first_ones():
    text = " ".join(f"Sentence {i} is here." for i in range(40))
    passages = split_passages(text, 4, max_passages=3)
    assert passages == ["Sentence 0 is here.", "Sentence 1 is here.", "Sentence 2 is here."]


@pytest.mark.parametrize("bad", [(0, 16), (80, 0), (-1, 1)])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ValueError, match="must be >= 1"):
        split_passages("text", *bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(SENTENCE, min_size=1, max_size=25), st.integers(3, 40), st.booleans())
def test_passages_keep_every_word_in_order_within_the_size(sentences, words, titled):
    body = " ".join(sentences)
    text = f"The title\n{body}" if titled else body
    passages = split_passages(text, words, max_passages=1000)
    if passages == [text]:
        return
    bodies = [p.partition("\n")[2] if titled else p for p in passages]
    if titled:
        assert all(p.startswith("The title\n") for p in passages)
    assert " ".join(bodies).split() == body.split()
    assert all(1 <= len(b.split()) <= words for b in bodies)
