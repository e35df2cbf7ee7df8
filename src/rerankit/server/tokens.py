"""Token caps, chunks and billing of a request, counted with the pipeline's own tokenizer.

Cohere's ``max_tokens_per_doc`` (v2) and TEI's ``truncate`` cut each document to a number of
tokens; Cohere's ``max_chunks_per_doc`` (v1) splits a long document into chunks that each
fit the model with the query, scores the first N and keeps a document's best; its
``billed_units.search_units`` count a query with up to 100 documents as one unit, a
document longer than 500 tokens with the query counting once per such chunk. Tokens are the
tokenizer's of the first local model in the pipeline (the hybrid's embedding model, a
cross-encoder, ...); a pipeline without one (``bm25``) counts words, and says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..rerankers.base import note_duplicate_ids
from ..scorers.local import LocalModelScorer
from ..types import Document, RankedDocument, RerankResult

if TYPE_CHECKING:
    from .formats.base import Call

__all__ = ["Fitted", "Tokens", "by_tokens", "chunk", "fit", "gather", "tokens_of", "usage"]

#: tokens of a document with the query that Cohere bills as one document
BILLED_CHUNK_TOKENS = 500
#: documents per search unit
BILLED_DOCUMENTS = 100
#: the fewest document tokens a chunk holds, whatever the query's length
MIN_CHUNK_TOKENS = 32
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Tokens:
    """How a pipeline counts tokens: ``spans(texts)`` gives each text's tokens as character
    offsets; ``unit`` names them in messages (``tokens``, or ``words`` for a pipeline
    without a model tokenizer); ``max_tokens`` is the model's input limit."""

    spans: Callable[[Sequence[str]], list[list[tuple[int, int]]]]
    unit: str
    max_tokens: int | None
    #: how many tokens each text takes (``spans`` counted, without the offsets: a bill)
    lengths: Callable[[Sequence[str]], list[int]] | None = None

    def count(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each of ``texts`` takes."""
        if self.lengths is not None:
            return self.lengths(texts)
        return [len(found) for found in self.spans(texts)]


def _word_spans(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    return [[m.span() for m in _WORD.finditer(t)] for t in texts]


def tokens_of(reranker: Any) -> Tokens:
    """The tokens of ``reranker``'s first local model that reports offsets, else words."""

    for scorer in reranker.scorers() if hasattr(reranker, "scorers") else ():
        if isinstance(scorer, LocalModelScorer) and scorer.token_spans(["probe"]) is not None:
            return Tokens(scorer.token_spans, "tokens", scorer.max_tokens, scorer.token_lengths)
    return Tokens(_word_spans, "words", None)


def usage(query_tokens: int, document_tokens: Sequence[int]) -> dict[str, int]:
    """What a request bills (see the module): ``search_units`` and ``input_tokens`` (the
    query's tokens once per document, and the documents' tokens as scored)."""
    room = max(BILLED_CHUNK_TOKENS - query_tokens, 1)
    billed = sum(max(1, math.ceil(n / room)) for n in document_tokens)
    return {
        "search_units": max(1, math.ceil(billed / BILLED_DOCUMENTS)),
        "input_tokens": query_tokens * len(document_tokens) + sum(document_tokens),
    }


def _cut(text: str, spans: list[tuple[int, int]], keep: int, left: bool) -> str:
    if left:
        return text[spans[-keep][0] :]
    return text[: spans[keep - 1][1]]


@dataclass(frozen=True)
class Fitted:
    """What :func:`fit` gives: the documents to score, the tokens of the query and of each
    document as scored (character offsets into the documents given), and the billed units
    (``search_units``, ``input_tokens``)."""

    documents: list[Document]
    query_spans: list[tuple[int, int]]
    spans: list[list[tuple[int, int]]]
    usage: dict[str, int]


def fit(
    query: str,
    docs: Sequence[Document],
    tokens: Tokens,
    *,
    max_tokens: int | None,
    left: bool = False,
    reason: str = "max_tokens_per_doc",
    cuts: dict[int, str],
) -> Fitted:
    """``docs`` cut to ``max_tokens`` tokens each (from the end with ``left``), every cut
    said in ``cuts`` by input index; their tokens, tokenised once; and what the request
    bills: ``search_units`` and ``input_tokens`` (the query's and the documents' tokens as
    scored)."""
    spans = tokens.spans([query, *(d.text for d in docs)])
    query_spans, out, kept = spans[0], [], []
    for i, (doc, found) in enumerate(zip(docs, spans[1:], strict=True)):
        if max_tokens is not None and len(found) > max_tokens:
            part = "last" if left else "first"
            why = reason if tokens.unit == "tokens" else f"{reason}; no model tokenizer here"
            note = f"scored on its {part} {max_tokens} of {len(found)} {tokens.unit} ({why})"
            cuts[i] = f"{cuts[i]}; {note}" if i in cuts else note
            doc = replace(doc, text=_cut(doc.text, found, max_tokens, left))
            found = found[-max_tokens:] if left else found[:max_tokens]
            if left:  # offsets into the cut text
                start = found[0][0]
                found = [(a - start, b - start) for a, b in found]
        out.append(doc)
        kept.append(found)
    return Fitted(out, query_spans, kept, usage(len(query_spans), [len(f) for f in kept]))


def chunk(
    fitted: Fitted, tokens: Tokens, max_chunks: int, notes: dict[int, str]
) -> tuple[list[Document], list[int]]:
    """Each document of ``fitted`` split into chunks that fit the model's input with the
    query (by its tokens, at most ``max_chunks`` of them, from the start); the chunks, and
    the input index each came from. A document split is said in ``notes``."""
    limit = tokens.max_tokens or BILLED_CHUNK_TOKENS
    size = max(limit - len(fitted.query_spans) - 3, MIN_CHUNK_TOKENS)  # 3: special tokens
    out: list[Document] = []
    owners: list[int] = []
    for i, (doc, found) in enumerate(zip(fitted.documents, fitted.spans, strict=True)):
        n = max(1, math.ceil(len(found) / size))
        if n == 1:
            out.append(doc)
            owners.append(i)
            continue
        kept = min(n, max_chunks)
        for c in range(kept):
            piece = found[c * size : (c + 1) * size]
            out.append(replace(doc, text=doc.text[piece[0][0] : piece[-1][1]]))
            owners.append(i)
        notes[i] = (
            f"split into {n} chunks of up to {size} {tokens.unit}; scored by the best of "
            f"the first {kept} (max_chunks_per_doc)"
        )
    return out, owners


def gather(
    result: RerankResult, owners: Sequence[int], docs: Sequence[Document], top_n: int | None
) -> RerankResult:
    """A rerank of chunks (``owners[i]``: the input index of chunk ``i``) as a rerank of
    the documents: each scored by its best chunk, best first, ``top_n`` of them, with the
    documents' repeated ids noted (:func:`~rerankit.rerankers.base.note_duplicate_ids`)."""
    best: dict[int, RankedDocument] = {}
    for r in result:  # best first: the first chunk seen of a document is its best
        best.setdefault(owners[r.index], r)
    ranked = sorted(best.items(), key=lambda item: item[1].rank)
    results = tuple(
        replace(
            r,
            document=docs[i].source if docs[i].source is not None else docs[i].text,
            index=i,
            rank=rank,
            text=docs[i].text,
            id=docs[i].id,
        )
        for rank, (i, r) in enumerate(ranked, start=1)
    )
    dropped = tuple(sorted({owners[i] for i in result.dropped} - set(best)))
    if top_n is not None:
        results = results[:top_n]
    # the chunks were ranked with the check of their ids left to this
    return note_duplicate_ids(replace(result, results=results, dropped=dropped), docs)


def by_tokens(call: Call, tokens: Tokens) -> tuple[list[Document], list[int] | None]:
    """``call``'s documents cut to its token cap and (``max_chunks``) split into chunks,
    counted with ``tokens``; the cuts, splits and billed units are recorded on ``call``.
    Returns the documents to score and, for chunks, the input index of each."""
    limit = tokens.max_tokens if call.max_tokens == "model" else call.max_tokens
    assert limit is None or isinstance(limit, int)
    if limit is None and call.max_chunks is None:  # a bill only: counts, no offsets
        if call.bill:
            counted = tokens.count([call.query, *(d.text for d in call.documents)])
            call.usage.update(usage(counted[0], counted[1:]))
        return list(call.documents), None
    fitted = fit(
        call.query,
        call.documents,
        tokens,
        max_tokens=limit,
        left=call.left,
        reason=call.cut_by,
        cuts=call.cuts,
    )
    if call.bill:
        call.usage.update(fitted.usage)
    if call.max_chunks is None:
        return fitted.documents, None
    chunks, owners = chunk(fitted, tokens, call.max_chunks, call.splits)
    return (chunks, owners) if call.splits else (fitted.documents, None)
