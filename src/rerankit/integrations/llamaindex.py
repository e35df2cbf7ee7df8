"""A LlamaIndex node postprocessor over any rerankit reranker (extra ``llamaindex``)."""

from __future__ import annotations

from typing import Any

from .._optional import require

require("llama_index.core", "rerankit.integrations.llamaindex")

from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle  # noqa: E402
from pydantic import PrivateAttr, model_validator  # noqa: E402

from ..api import load  # noqa: E402
from ._options import documents_said, refuse_unknown_options  # noqa: E402

__all__ = ["RerankitPostprocessor"]


class RerankitPostprocessor(BaseNodePostprocessor):
    """Reorders retrieved nodes with ``reranker`` (a rerankit reranker, scorer, registered
    name such as ``"hybrid"``, or pipeline file), keeps the best ``top_n`` (None: all) and
    sets each node's score to rerankit's. The retriever's node scores reach the reranker as
    each document's ``first_stage_score``; the default ``hybrid`` ranks by the texts alone
    and fuses them only when given a weight (``HybridReranker(first_stage_weight=0.1)``;
    ``hybrid-relative`` fuses them with 0.3); ``first_stage_field`` names a metadata key to
    read instead (``first_stage_higher_is_better=False`` for a distance).

    Each node is read as ``rerank()`` reads it: its text without its metadata
    (``get_content()``), with a ``title`` key of its metadata (or the key ``title_field``
    names) as its title (on the line before the text, as a dict's ``title``).
    ``text_fields`` reads metadata keys (and ``text``, the node's text) as ``key: value``
    lines of the text instead, as for dicts. An option that does not apply to a node
    (``text_field``, ``id_field``) or that it does not take is a ``TypeError``."""

    reranker: Any = "hybrid"
    top_n: int | None = None
    text_fields: tuple[str, ...] | None = None
    title_field: str = "title"
    first_stage_field: str | None = None
    first_stage_higher_is_better: bool = True
    #: the notes on the pipeline's settings this adapter has logged (each once)
    _said: set[str] = PrivateAttr(default_factory=set)

    @model_validator(mode="before")
    @classmethod
    def _known_options(cls, data: Any) -> Any:
        refuse_unknown_options(
            cls.__name__, data, cls.model_fields, "LlamaIndex nodes", "text", "node_id"
        )
        return data

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
        result = load(self.reranker).rerank(
            query_bundle.query_str,
            nodes,
            top_k=self.top_n,
            text_fields=self.text_fields,
            title_field=self.title_field,
            first_stage_field=self.first_stage_field,
            first_stage_higher_is_better=self.first_stage_higher_is_better,
        )
        return documents_said("RerankitPostprocessor", result, self._said)
