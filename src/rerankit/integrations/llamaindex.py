"""A LlamaIndex node postprocessor over any rerankit reranker (extra ``llamaindex``)."""

from __future__ import annotations

from typing import Any

from .._optional import require

require("llama_index.core", "rerankit.integrations.llamaindex")

from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle  # noqa: E402

from ..api import load  # noqa: E402

__all__ = ["RerankitPostprocessor"]


class RerankitPostprocessor(BaseNodePostprocessor):
    """Reorders retrieved nodes with ``reranker`` (a rerankit reranker, scorer, registered
    name such as ``"hybrid"``, or pipeline file), keeps the best ``top_n`` (None: all) and
    sets each node's score to rerankit's. The retriever's node scores reach the reranker as
    each document's ``first_stage_score``; the default ``hybrid`` ranks by the texts alone
    and fuses them only when given a weight (``HybridReranker(first_stage_weight=0.1)``;
    ``hybrid-relative`` fuses them with 0.3)."""

    reranker: Any = "hybrid"
    top_n: int | None = None

    @classmethod
    def class_name(cls) -> str:
        return "RerankitPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("RerankitPostprocessor needs the query (a QueryBundle)")
        if not nodes:
            return []
        result = load(self.reranker).rerank(query_bundle.query_str, nodes, top_k=self.top_n)
        return result.documents()
