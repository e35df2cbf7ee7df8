"""split_passages: how a long document is cut for a bi-encoder to read by passages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.text import split_passages

WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
SENTENCE = st.lists(WORD, min_size=1, max_size=30).map(lambda ws: " ".join(ws).capitalize() + ".")


def test_sentences_are_packed_whole_and_the_title_starts_every_passage():
    body = " ".join(f"Sentence {i} has exactly six words." for i in range(10))
    for text in ("A short title\n" + body, "A short title " + body, "A short title. " + body):
        passages = split_passages(text, 20, title="A short title")
        assert len(passages) == 4  # three sentences (18 words) per passage, then one
        for p in passages:
            title, _, rest = p.partition("\n")
            assert title == "A short title"
            assert rest.endswith("words.") and len(rest.split()) <= 20
        assert " ".join(p.partition("\n")[2] for p in passages) == body


def test_a_title_is_never_guessed_from_the_text():
    """The same document laid out with a newline or a space gives the same passages."""
    body = " ".join(f"Sentence {i} has exactly six words." for i in range(10))
    by_line = split_passages("A short title\n" + body, 20)
    assert by_line == split_passages("A short title " + body, 20)
    assert by_line[0].startswith("A short title Sentence 0")
    assert not any("A short title" in p for p in by_line[1:])


def test_a_title_line_in_rank_fields_form_and_a_title_not_in_the_text():
    body = " ".join(f"Sentence {i} has exactly six words." for i in range(10))
    framed = split_passages("title: Solar\ntext: " + body, 20, title="Solar")
    assert all(p.startswith("title: Solar\n") for p in framed)
    apart = split_passages(body, 20, title="Solar")
    assert all(p.startswith("Solar\nSentence") for p in apart)
    assert " ".join(p.partition("\n")[2] for p in apart) == body


def test_a_text_that_fits_comes_back_unchanged():
    for text in ("", "one line", "Title\nA body of five words.", "  spaced \n\n text  "):
        assert split_passages(text, 80) == [text]
        assert split_passages(text, 80, title="Title") == [text]


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
@given(
    st.lists(SENTENCE, min_size=1, max_size=25),
    st.integers(3, 40),
    st.booleans(),
    st.sampled_from(["\n", " ", ". "]),
)
def test_passages_keep_every_word_in_order_within_the_size(sentences, words, titled, joint):
    body = " ".join(sentences)
    text = f"The title{joint}{body}" if titled else body
    passages = split_passages(text, words, max_passages=1000, title="The title" if titled else None)
    if passages == [text]:
        return
    bodies = [p.partition("\n")[2] if titled else p for p in passages]
    if titled:
        assert all(p.startswith("The title\n") for p in passages)
    assert " ".join(bodies).split() == body.split()
    assert all(1 <= len(b.split()) <= words for b in bodies)
