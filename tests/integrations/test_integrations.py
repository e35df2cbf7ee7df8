"""LangChain and LlamaIndex adapters, with the frameworks' real base classes."""

from __future__ import annotations

import asyncio

import pytest

from rerankit import rerank

DOCS = [
    "Solar panels turn sunlight into power.",
    "Wind farms at sea.",
    "Solar power stations and solar cells.",
    "Cooking pasta at home.",
]
QUERY = "solar power"
ORDER = [r.index for r in rerank(QUERY, DOCS, reranker="bm25")]


def test_langchain_compressor():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import BaseDocumentCompressor, Document

    from rerankit.integrations.langchain import RerankitCompressor

    docs = [Document(page_content=t, metadata={"n": i}) for i, t in enumerate(DOCS)]
    compressor = RerankitCompressor(reranker="bm25", top_n=2)
    assert isinstance(compressor, BaseDocumentCompressor)
    out = compressor.compress_documents(docs, QUERY)
    assert [d.metadata["n"] for d in out] == ORDER[:2]
    assert out[0].metadata["relevance_score"] >= out[1].metadata["relevance_score"]
    assert "relevance_score" not in docs[ORDER[0]].metadata  # originals untouched
    again = asyncio.run(compressor.acompress_documents(docs, QUERY))
    assert [d.page_content for d in again] == [d.page_content for d in out]
    assert compressor.compress_documents([], QUERY) == []


def test_llamaindex_postprocessor():
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from rerankit.integrations.llamaindex import RerankitPostprocessor
    from rerankit.scorers import BM25Scorer

    nodes = [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=0.0) for i, t in enumerate(DOCS)
    ]
    post = RerankitPostprocessor(reranker=BM25Scorer(), top_n=3)
    assert isinstance(post, BaseNodePostprocessor)
    out = post.postprocess_nodes(nodes, query_bundle=QueryBundle(QUERY))
    assert [n.node.id_ for n in out] == [f"n{i}" for i in ORDER[:3]]
    assert out[0].score >= out[1].score >= out[2].score
    out = post.postprocess_nodes(nodes, query_str=QUERY)
    assert len(out) == 3
    with pytest.raises(ValueError, match="QueryBundle"):
        post.postprocess_nodes(nodes)
