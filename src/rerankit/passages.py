"""Splitting a document into passages a bi-encoder can read whole.

A bi-encoder reads a fixed window (256 word pieces for all-MiniLM-L6-v2) and squeezes
everything in it into one vector, so a long document's later sentences are lost and a
claim that matches one sentence is diluted by the rest. Scoring each passage and keeping
the best (as Cohere's rerank does with its chunks) avoids both.
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_MAX_PASSAGES", "split_passages"]

#: at most this many passages per document by default (the first ones are kept)
DEFAULT_MAX_PASSAGES = 16
#: a first line of at most this many words, followed by more text, reads as a title
_TITLE_WORDS = 40
# A sentence ends at . ! or ? followed by space and something that can start a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def split_passages(text: str, words: int, max_passages: int = DEFAULT_MAX_PASSAGES) -> list[str]:
    """``text`` as passages of about ``words`` words each.

    Sentences are packed in order into passages of at most ``words`` words (a longer
    sentence is cut every ``words`` words). When the first line is short (at most 40 words)
    and more text follows, it is taken for a title and starts every passage, so each
    passage keeps its context. At most ``max_passages`` passages are returned, the first
    ones. A text that fits in one passage comes back unchanged, as the only passage.
    """
    if words < 1 or max_passages < 1:
        raise ValueError(f"words and max_passages must be >= 1, got {words}, {max_passages}")
    head, sep, rest = text.partition("\n")
    title = ""
    body = text
    if sep and rest.strip() and len(head.split()) <= _TITLE_WORDS:
        title, body = head, rest
    passages: list[str] = []
    size = 0  # words in the last passage
    for sentence in _SENTENCE_END.split(body.replace("\n", " ")):
        tokens = sentence.split()
        if not tokens:
            continue
        # a sentence longer than a passage is cut every `words` words
        parts = (
            [(sentence.strip(), len(tokens))]
            if len(tokens) <= words
            else [
                (" ".join(tokens[i : i + words]), len(tokens[i : i + words]))
                for i in range(0, len(tokens), words)
            ]
        )
        for part, n in parts:
            if passages and size + n <= words:
                passages[-1] += " " + part
                size += n
            else:
                passages.append(part)
                size = n
    if len(passages) <= 1:
        return [text]
    passages = passages[:max_passages]
    return [f"{title}\n{p}" for p in passages] if title else passages
