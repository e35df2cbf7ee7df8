"""LangChain and LlamaIndex adapters, with the frameworks' real base classes."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rerankit
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


# --- what the adapters read: a title in the metadata, the field options ---------------------

TITLED = [  # the query's word is in the first one's title only
    ("Vaccines", "It trains B and T cells to recognise a pathogen."),
    (None, "Keep them between 2 and 8 degrees."),
]


def _langchain_docs():
    from langchain_core.documents import Document

    return [
        Document(page_content=text, id=f"d{i}", metadata={"title": title} if title else {})
        for i, (title, text) in enumerate(TITLED)
    ]


def _llamaindex_nodes():
    from llama_index.core.schema import NodeWithScore, TextNode

    return [
        NodeWithScore(
            node=TextNode(text=text, id_=f"d{i}", metadata={"title": title} if title else {}),
            score=0.5,
        )
        for i, (title, text) in enumerate(TITLED)
    ]


def test_a_title_in_a_frameworks_metadata_is_read_as_a_dicts_title():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.integrations.llamaindex import RerankitPostprocessor

    as_dicts = [{"title": t, "text": x} if t else {"text": x} for t, x in TITLED]
    wanted = [d.text for d in rerankit.InputFields().read(as_dicts)]
    assert wanted[0] == "Vaccines\nIt trains B and T cells to recognise a pathogen."
    for docs in (_langchain_docs(), _llamaindex_nodes()):
        assert [d.text for d in rerankit.InputFields().read(docs)] == wanted
    lc = RerankitCompressor(reranker="bm25", top_n=None).compress_documents(
        _langchain_docs(), "vaccines"
    )
    assert lc[0].id == "d0" and lc[0].metadata["relevance_score"] > 0
    assert lc[0].metadata["title"] == "Vaccines"  # the metadata comes back as it was
    li = RerankitPostprocessor(reranker="bm25").postprocess_nodes(
        _llamaindex_nodes(), query_str="vaccines"
    )
    assert li[0].node.id_ == "d0" and li[0].score > 0
    assert li[0].node.get_content() == TITLED[0][1]  # the node's own text is left alone


def test_a_title_under_another_metadata_key_is_read_with_title_field():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.integrations.llamaindex import RerankitPostprocessor

    docs, nodes = _langchain_docs(), _llamaindex_nodes()
    for meta in [d.metadata for d in docs] + [n.node.metadata for n in nodes]:
        if "title" in meta:
            meta["headline"] = meta.pop("title")
    wanted = [d.text for d in rerankit.InputFields().read(_langchain_docs())]
    for items in (docs, nodes):
        assert [d.text for d in rerankit.InputFields(title_field="headline").read(items)] == wanted
    query = "vaccines train cells"
    titled = RerankitCompressor(reranker="bm25", top_n=None).compress_documents(
        _langchain_docs(), query
    )
    lc = RerankitCompressor(reranker="bm25", top_n=None, title_field="headline")
    got = lc.compress_documents(docs, query)
    assert [(d.id, d.metadata["relevance_score"]) for d in got] == [
        (d.id, d.metadata["relevance_score"]) for d in titled
    ]
    li = RerankitPostprocessor(reranker="bm25", title_field="headline")
    plain = RerankitPostprocessor(reranker="bm25").postprocess_nodes(
        _llamaindex_nodes(), query_str=query
    )
    assert [(n.node.id_, n.score) for n in li.postprocess_nodes(nodes, query_str=query)] == [
        (n.node.id_, n.score) for n in plain
    ]


def test_the_adapters_take_text_fields_and_first_stage_options_as_rerank_does():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.integrations.llamaindex import RerankitPostprocessor
    from rerankit.scorers import FieldScorer

    docs = _langchain_docs()
    docs[1].metadata["section"] = "cold storage"
    fields = ("section", "page_content")
    read = rerankit.InputFields(text_fields=fields).read(docs)
    assert read[1].text == "section: cold storage\npage_content: Keep them between 2 and 8 degrees."
    best = RerankitCompressor(reranker="bm25", top_n=1, text_fields=fields)
    assert [d.id for d in best.compress_documents(docs, "cold storage")] == ["d1"]

    nodes = _llamaindex_nodes()
    nodes[1].node.metadata["section"] = "cold storage"
    post = RerankitPostprocessor(reranker="bm25", top_n=1, text_fields=("section", "text"))
    assert [n.node.id_ for n in post.postprocess_nodes(nodes, query_str="cold storage")] == ["d1"]
    for node, distance in zip(nodes, (0.9, 0.1), strict=True):
        node.node.metadata["distance"] = distance
    nearest = RerankitPostprocessor(
        reranker=FieldScorer("first_stage_score"),
        first_stage_field="distance",
        first_stage_higher_is_better=False,
    ).postprocess_nodes(nodes, query_str="anything")
    assert [n.node.id_ for n in nearest] == ["d1", "d0"]


def test_an_option_that_cannot_apply_to_a_framework_object_is_refused():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.errors import InputError
    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.integrations.llamaindex import RerankitPostprocessor

    for docs, text in ((_langchain_docs(), "page_content"), (_llamaindex_nodes(), "get_content")):
        with pytest.raises(InputError, match=rf"text_field='content' does not apply.*{text}"):
            rerank("vaccines", docs, reranker="bm25", text_field="content")
        with pytest.raises(InputError, match="id_field='url' does not apply"):
            rerank("vaccines", docs, reranker="bm25", id_field="url")
    # naming the framework's own place is no mistake
    kept = rerank("vaccines", _langchain_docs(), reranker="bm25", text_field="page_content")
    assert [d.id for d in kept] == ["d0", "d1"]
    for adapter in (RerankitCompressor, RerankitPostprocessor):
        with pytest.raises(TypeError, match=r"no option 'text_field'.*'title' key"):
            adapter(text_field="content")
        with pytest.raises(TypeError, match="no option 'id_field'"):
            adapter(id_field="url")
        with pytest.raises(TypeError, match="no option 'top_k' \\(did you mean 'top_n'\\?\\)"):
            adapter(top_k=2)
