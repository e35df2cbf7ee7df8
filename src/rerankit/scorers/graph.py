"""Structural scoring: a document's importance in a graph (extra ``graph``: networkx).

Documents are graph nodes, matched by their ``id`` (or a metadata field). Modes:

* ``"pagerank"``: global PageRank (edge ``weight`` used when present);
* ``"degree"``: degree centrality;
* ``"personalized"``: PageRank personalised on the candidates that best match the query
  (BM25 over the candidates' texts, the best ``seeds`` with a positive score), so nodes
  close to the query's best matches rise. Without any matching seed it falls back to global
  PageRank and says so.

Scores are >= 0; a document whose node is not in the graph scores 0, flagged
``not_in_graph``. Global scores are computed once per scorer.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._optional import require
from .._threads import in_thread
from ..types import Document
from .base import ScoreBatch
from .lexical import BM25Scorer

__all__ = ["GraphScorer", "GraphStore", "NetworkXGraphStore", "to_networkx"]

MODES = ("pagerank", "degree", "personalized")


@runtime_checkable
class GraphStore(Protocol):
    """The least a graph needs to offer: its nodes and its edges, ``(u, v)`` or
    ``(u, v, weight)``. A ``directed`` attribute (default False) says how to read edges."""

    def nodes(self) -> Iterable[Hashable]: ...

    def edges(self) -> Iterable[tuple[Any, ...]]: ...


class NetworkXGraphStore:
    """A networkx graph as a :class:`GraphStore`."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.directed = bool(graph.is_directed())

    def nodes(self) -> Iterable[Hashable]:
        return self.graph.nodes()

    def edges(self) -> Iterable[tuple[Any, ...]]:
        return self.graph.edges(data="weight", default=1.0)


def to_networkx(graph: Any) -> Any:
    """A networkx graph from a networkx graph, a NetworkXGraphStore or any GraphStore."""
    nx = require("networkx", "GraphScorer")
    if isinstance(graph, nx.Graph):
        return graph
    if isinstance(graph, NetworkXGraphStore):
        return graph.graph
    if not isinstance(graph, GraphStore):
        raise TypeError(f"{graph!r} is neither a networkx graph nor a graph store")
    g = nx.DiGraph() if getattr(graph, "directed", False) else nx.Graph()
    g.add_nodes_from(graph.nodes())
    for edge in graph.edges():
        u, v, *rest = edge
        g.add_edge(u, v, weight=float(rest[0]) if rest and rest[0] is not None else 1.0)
    return g


class GraphScorer:
    """Scores documents by their node's importance in ``graph`` (see the module doc).

    ``node_field``: the metadata field holding a document's node id (default: its ``id``).
    ``alpha``: PageRank's damping factor. ``seeds``: how many best-matching candidates seed
    the personalised PageRank.
    """

    def __init__(
        self,
        graph: Any,
        *,
        mode: str = "pagerank",
        node_field: str | None = None,
        alpha: float = 0.85,
        seeds: int = 3,
        name: str = "graph",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.graph = to_networkx(graph)
        self.mode, self.node_field, self.alpha, self.seeds = mode, node_field, alpha, seeds
        self.name = name
        self._global: dict[Hashable, float] | None = None

    def _node(self, doc: Document) -> Any:
        return doc.id if self.node_field is None else doc.metadata.get(self.node_field)

    def _global_scores(self) -> dict[Hashable, float]:
        if self._global is None:
            nx = require("networkx", "GraphScorer")
            if self.mode == "degree":
                self._global = nx.degree_centrality(self.graph)
            else:
                self._global = nx.pagerank(self.graph, alpha=self.alpha, weight="weight")
        return self._global

    def _personalized(self, query: str, docs: Sequence[Document], nodes: list[Any]):

        nx = require("networkx", "GraphScorer")
        match = BM25Scorer().score_texts(query, [d.text for d in docs])
        ranked = [i for i in np.argsort(-match, kind="stable") if match[i] > 0]
        seeds = {}
        for i in ranked:
            if nodes[i] in self.graph and len(seeds) < self.seeds:
                seeds[nodes[i]] = seeds.get(nodes[i], 0.0) + float(match[i])
        if not seeds:
            return (
                self._global_scores(),
                "no candidate in the graph matches the query; global PageRank used",
            )
        scores = nx.pagerank(self.graph, alpha=self.alpha, personalization=seeds, weight="weight")
        return scores, None

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        return await in_thread(self.score_documents, query, docs)  # PageRank is CPU work

    def score_documents(self, query: str, docs: Sequence[Document]) -> ScoreBatch:
        """Blocking :meth:`score`."""
        nodes = [self._node(d) for d in docs]
        warnings: list[str] = []
        if self.mode == "personalized":
            table, note = self._personalized(query, docs, nodes)
            if note:
                warnings.append(note)
        else:
            table = self._global_scores()
        values = np.zeros(len(docs))
        flags: dict[int, list[str]] = {}
        for i, node in enumerate(nodes):
            if node is not None and node in table:
                values[i] = float(table[node])
            else:
                flags[i] = ["not_in_graph"]
        return ScoreBatch(values=values, flags=flags, warnings=warnings)
