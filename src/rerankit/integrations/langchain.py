"""A LangChain document compressor over any rerankit reranker (extra ``langchain``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._optional import require

require("langchain_core", "rerankit.integrations.langchain")

from langchain_core.callbacks import Callbacks  # noqa: E402
from langchain_core.documents import BaseDocumentCompressor, Document  # noqa: E402
from pydantic import ConfigDict, PrivateAttr, model_validator  # noqa: E402

from ..api import load  # noqa: E402
from ._options import documents_said, refuse_unknown_options  # noqa: E402

__all__ = ["RerankitCompressor"]


class RerankitCompressor(BaseDocumentCompressor):
    """Reorders retrieved LangChain Documents with ``reranker`` (a rerankit reranker,
    scorer, registered name such as ``"hybrid"``, or pipeline file) and keeps the best
    ``top_n`` (None: all). Each returned Document is a copy whose metadata gains
    ``relevance_score``; the originals are left alone.

    Each Document is read as ``rerank()`` reads it: its ``page_content`` is the text, and a
    ``title`` key in its metadata (or the key ``title_field`` names) is its title (on the
    line before the text, as a dict's ``title``). ``text_fields`` reads metadata keys (and
    ``page_content``) as ``key: value`` lines of the text instead, as for dicts. An option
    that does not apply to a Document (``text_field``, ``id_field``) or that it does not
    take is a ``TypeError``.

    ``first_stage_field`` names the metadata key holding the retriever's score (e.g. the
    ``score`` you put there; ``first_stage_higher_is_better=False`` for distances); a
    ``first_stage_score`` key is read without naming it. Only a reranker that uses it
    changes its order: the default ``hybrid`` ranks by the texts alone, and fuses it when
    given a weight (``HybridReranker(first_stage_weight=0.1)``); ``hybrid-relative`` (0.3
    by default) and pipelines that fuse a ``field`` scorer use it as they are.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reranker: Any = "hybrid"
    top_n: int | None = 3
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
            cls.__name__, data, cls.model_fields, "LangChain Documents", "page_content", "id"
        )
        return data

    def _options(self) -> dict[str, Any]:
        return {
            "top_k": self.top_n,
            "score_field": "relevance_score",
            "text_fields": self.text_fields,
            "title_field": self.title_field,
            "first_stage_field": self.first_stage_field,
            "first_stage_higher_is_better": self.first_stage_higher_is_better,
        }

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if not documents:
            return []
        result = load(self.reranker).rerank(query, documents, **self._options())
        return documents_said("RerankitCompressor", result, self._said)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if not documents:
            return []
        result = await load(self.reranker).arerank(query, documents, **self._options())
        return documents_said("RerankitCompressor", result, self._said)
