"""LangChain and LlamaIndex adapters, with the frameworks' real base classes."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

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


# --- the how-to page's examples print what it shows ----------------------------------------

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def _shown(block: str) -> list[str]:
    """What a block's comments say its prints print: a ``# [...]`` after a print or on the
    line below it."""
    return re.findall(r"^.*print\(.*\)(?:  # |\n# )(\[.*\])$", block, flags=re.M)


def test_the_pages_in_process_examples_print_what_it_shows(tmp_path):
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    pytest.importorskip("sentence_transformers", reason="the default needs the 'torch' extra")
    blocks = re.findall(r"(?<!-->\n)```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    shown = [(block, _shown(block)) for block in blocks if _shown(block)]
    assert len(shown) == 2  # LangChain's, LlamaIndex's
    for block, lines in shown:
        done = subprocess.run(
            [sys.executable, "-c", block],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(PAGE.parents[1] / "src")},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        assert done.stdout.splitlines() == lines
