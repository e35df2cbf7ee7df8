"""A LangChain document compressor over any rerankit reranker (extra ``langchain``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._optional import require

require("langchain_core", "rerankit.integrations.langchain")

from langchain_core.callbacks import Callbacks  # noqa: E402
from langchain_core.documents import BaseDocumentCompressor, Document  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from ..api import load as resolve  # noqa: E402

__all__ = ["RerankitCompressor"]


class RerankitCompressor(BaseDocumentCompressor):
    """Reorders retrieved LangChain Documents with ``reranker`` (a rerankit reranker,
    scorer, registered name such as ``"hybrid"``, or pipeline file) and keeps the best
    ``top_n`` (None: all). Each returned Document is a copy whose metadata gains
    ``relevance_score``; the originals are left alone."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reranker: Any = "hybrid"
    top_n: int | None = 3

    def _documents(self, documents: Sequence[Document], result: Any) -> list[Document]:
        out = []
        for r in result:
            original = documents[r.index]
            out.append(
                Document(
                    page_content=original.page_content,
                    metadata={**original.metadata, "relevance_score": r.score},
                    id=getattr(original, "id", None),
                )
            )
        return out

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if not documents:
            return []
        result = resolve(self.reranker).rerank(
            query, [d.page_content for d in documents], top_k=self.top_n
        )
        return self._documents(documents, result)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if not documents:
            return []
        result = await resolve(self.reranker).arerank(
            query, [d.page_content for d in documents], top_k=self.top_n
        )
        return self._documents(documents, result)
