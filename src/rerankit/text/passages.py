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
# A sentence ends at . ! or ? followed by space and something that can start a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def _title_and_body(text: str, title: str | None) -> tuple[str, str]:
    """The prefix every passage starts with, and the text left to split."""
    title = (title or "").strip()
    if not title:
        return "", text
    stripped = text.lstrip()
    if stripped.startswith(title):  # "Title\nbody", "Title body", "Title. body"
        return title, stripped[len(title) :].lstrip(" \t\n.:;-")
    head, sep, rest = text.partition("\n")
    if sep and title in head:  # a first line that holds the title ("title: Title")
        return head.strip(), rest
    return title, text


def split_passages(
    text: str,
    words: int,
    max_passages: int = DEFAULT_MAX_PASSAGES,
    *,
    lead: int = 0,
    title: str | None = None,
) -> list[str]:
    """``text`` as passages of about ``words`` words each.

    Sentences are packed in order into passages of at most ``words`` words (a longer
    sentence is cut every ``words`` words); line breaks count as spaces, so the passages do
    not depend on how the text was laid out. Each passage keeps its context in one of two
    ways: with ``lead=K``, every passage after the first starts with the document's first
    ``K`` words (its title and opening, wherever the title was put); with a ``title``, every
    passage starts with it (a text that begins with the title, or whose first line holds
    it, is split after it). Nothing is guessed from the text's layout. At most
    ``max_passages`` passages are returned, the first ones. A text that fits in one passage
    comes back unchanged, as the only passage.
    """
    if words < 1 or max_passages < 1:
        raise ValueError(f"words and max_passages must be >= 1, got {words}, {max_passages}")
    if lead < 0:
        raise ValueError(f"lead must be >= 0, got {lead}")
    prefix, body = _title_and_body(text, title)
    passages: list[str] = []
    size = 0  # words in the last passage
    for sentence in _SENTENCE_END.split(" ".join(body.split())):
        tokens = sentence.split()
        if not tokens:
            continue
        # a sentence longer than a passage is cut every `words` words
        parts = (
            [(sentence, len(tokens))]
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
    if prefix:
        return [f"{prefix}\n{p}" for p in passages]
    if lead:
        opening = " ".join(text.split()[:lead])
        return passages[:1] + [f"{opening} {p}" for p in passages[1:]]
    return passages
