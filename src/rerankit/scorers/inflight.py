"""What embedding scorers share while they encode: the texts being encoded now (so a
text two readings ask for at once is encoded once) and the vectors of recent queries."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

__all__ = ["RECENT_QUERIES", "Pending", "RecentQueries"]


class Pending:
    """Texts being encoded now, by (cache key, text), each with the future of the call
    encoding it (shared by a scorer and its passage twins)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[tuple[str, str], Future] = {}

    def claim(self, key: str, texts: list[str]) -> tuple[list[str], dict[str, Future], Future]:
        """The texts this caller encodes (no one else is), the futures of those another
        caller is encoding, and this caller's future (to resolve, then :meth:`release`)."""
        done: Future = Future()
        mine: list[str] = []
        others: dict[str, Future] = {}
        with self._lock:
            for text in texts:
                found = self._futures.get((key, text))
                if found is None:
                    self._futures[(key, text)] = done
                    mine.append(text)
                else:
                    others[text] = found
        return mine, others, done

    def release(self, key: str, texts: list[str]) -> None:
        with self._lock:
            for text in texts:
                self._futures.pop((key, text), None)


class RecentQueries:
    """The vectors of the last :data:`RECENT_QUERIES` queries, by (key, query): a query
    the hybrid's whole-document and passage readings both ask for is encoded once. Kept in
    memory only (queries are not written to the document cache)."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._rows: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def get_many(self, key: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        with self._lock:
            out = [self._rows.get((key, t)) for t in texts]
            for t, v in zip(texts, out, strict=True):
                if v is not None:
                    self._rows.move_to_end((key, t))
            return out

    def put_many(self, key: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                self._rows[(key, t)] = v
                self._rows.move_to_end((key, t))
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)


#: how many recent query vectors a scorer and its passage twins remember
RECENT_QUERIES = 256
