"""Query-document pairs as a cross-encoder reads them, the same on torch and ONNX Runtime.

The query is tokenised once per call and kept whole; each document is tokenised once and
cut to the room the query and the model's special tokens leave. Only a query so long that
the document would get less than a quarter of the input is cut (to three quarters), and
that is reported. Pairs are then padded in batches of similar length.

Other wrappers truncate "longest first", which shortens the query too when a document is
long; here the query always reaches the model as it was asked when it reasonably can.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._optional import require
from .._threads import stop_if_abandoned

__all__ = ["EncodedPairs", "PairEncoder", "lengths", "offsets", "padded_batches", "unpadded"]


def unpadded(tokenizer: Any) -> Any:
    """A private copy of a ``tokenizers.Tokenizer`` without padding or truncation. Nothing
    changes its state afterwards, so threads encode with it at once, without a lock and
    without waiting for a model call that holds one (the service counts a request's tokens
    this way while another request is being scored)."""
    tokenizers = require("tokenizers", "encoding text for a local model")
    copy = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    copy.no_padding()
    copy.no_truncation()
    return copy


def offsets(tokenizer: Any, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """Each text's tokens (no special tokens) as ``(start, end)`` character offsets."""
    return [
        [(int(a), int(b)) for a, b in e.offsets]
        for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)
    ]


def lengths(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """How many tokens (no special tokens) each text takes: :func:`offsets` without building
    the offsets, a fraction of the Python work (what a bill needs)."""
    return [len(e) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


@dataclass
class EncodedPairs:
    """Each pair's encoding (special tokens included, unpadded), the positions of the
    documents that were cut, and how many of the query's tokens were cut (0: none)."""

    encodings: list[Any]
    truncated: list[int] = field(default_factory=list)
    query_cut: int = 0


class PairEncoder:
    """Encodes ``(query, document)`` pairs with a ``tokenizers.Tokenizer`` (a private copy
    without padding or truncation, so a shared tokenizer's state never leaks in) for a
    model reading at most ``max_length`` tokens."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self._tokenizer = unpadded(tokenizer)
        processor = self._tokenizer.post_processor
        self.special = processor.num_special_tokens_to_add(True) if processor is not None else 0
        self.max_length = int(max_length)
        budget = self.max_length - self.special
        if budget < 2:
            raise ValueError(f"max_length={max_length} leaves no room for a query and a document")
        self.max_query = budget - max(1, budget // 4)

    def encode(self, query: str, texts: Sequence[str]) -> EncodedPairs:
        """The pairs of ``query`` with each text, documents cut to fit (see the module)."""
        q = self._tokenizer.encode(query, add_special_tokens=False)
        query_cut = max(0, len(q.ids) - self.max_query)
        if query_cut:
            q.truncate(self.max_query)
        room = self.max_length - self.special - len(q.ids)
        docs = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        truncated = []
        for i, d in enumerate(docs):
            if len(d.ids) > room:
                d.truncate(room)
                truncated.append(i)
        pairs = [self._tokenizer.post_process(q, d, add_special_tokens=True) for d in docs]
        return EncodedPairs(pairs, truncated, query_cut)


def padded_batches(
    encodings: Sequence[Any], batch_size: int, pad_id: int
) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Batches of encodings sorted by length, each padded (on the right) to its longest:
    ``(positions, {"input_ids", "attention_mask", "token_type_ids"})`` as int64 arrays.
    Work whose request was abandoned meanwhile gets no further batch
    (:func:`~rerankit._threads.stop_if_abandoned`)."""
    order = np.argsort([len(e.ids) for e in encodings], kind="stable")
    for start in range(0, len(order), batch_size):
        stop_if_abandoned()
        positions = order[start : start + batch_size]
        chunk = [encodings[i] for i in positions]
        width = max(len(e.ids) for e in chunk)
        ids = np.full((len(chunk), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        types = np.zeros((len(chunk), width), dtype=np.int64)
        for row, e in enumerate(chunk):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
        yield positions, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
