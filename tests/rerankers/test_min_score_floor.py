"""min_score keeps a floor of the best few whatever they score (keep_at_least), and says
when it keeps nothing; the framework adapters log a result's warnings, so a chain whose
cut kept nothing is not silent (a RAG reader's findings)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rerankit import load, rerank
from rerankit.ordering import MinScore, min_score

TEXTS = ["solar power plants", "solar panels on roofs", "wind farms at sea", "pasta recipes"]


@given(
    scores=st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), max_size=12),
    threshold=st.floats(min_value=-5, max_value=5, allow_nan=False),
    floor=st.integers(min_value=0, max_value=14),
)
def test_the_floor_and_the_cut_keep_exactly_the_first_few_and_those_at_the_threshold(
    scores, threshold, floor
):
    items = [{"id": i, "rerank_score": s} for i, s in enumerate(scores)]
    kept = [d["id"] for d in min_score(items, threshold, keep_at_least=floor)]
    assert kept == [i for i, s in enumerate(scores) if i < floor or s >= threshold]
    assert items == [{"id": i, "rerank_score": s} for i, s in enumerate(scores)]  # untouched


def test_on_a_result_the_floor_keeps_the_best_ranked_and_says_what_it_dropped():
    result = rerank("solar power", TEXTS, reranker="bm25")
    cut = min_score(result, 1e9, keep_at_least=2)
    assert [r.index for r in cut] == [r.index for r in result][:2]
    assert [r.rank for r in cut] == [1, 2]
    assert set(cut.dropped) == {r.index for r in list(result)[2:]}
    assert not any("none is kept" in w for w in cut.warnings)


def test_a_cut_that_keeps_nothing_says_so_with_the_best_score_and_the_floor():
    result = rerank("solar power", TEXTS, reranker="bm25")
    cut = min_score(result, 1e9)
    best = max(r.score for r in result)
    assert len(cut) == 0
    assert (
        f"rule 'min_score': all 4 documents scored below 1e+09 (the best {best:.4g}), so none "
        "is kept; keep_at_least= keeps the best few whatever they score"
    ) in cut.warnings


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_keep_at_least_must_be_a_whole_number(bad):
    with pytest.raises(ValueError, match="keep_at_least must be an integer >= 0"):
        MinScore(0.5, keep_at_least=bad)


def test_a_pipeline_file_takes_the_floor(tmp_path):
    path = tmp_path / "floor.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n'
        '[[stages]]\nrule = { type = "min_score", threshold = 1e9, keep_at_least = 1 }\n'
    )
    result = load(str(path)).rerank("solar power", TEXTS)
    assert len(result) == 1 and result[0].text == "solar power plants"


def _cut_everything(tmp_path):
    path = tmp_path / "cut.toml"
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n'
        '[[stages]]\nrule = { type = "min_score", threshold = 1e9 }\n'
    )
    return str(path)


def test_the_langchain_compressor_logs_why_it_returned_nothing(tmp_path, caplog):
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_core.documents import Document

    from rerankit.integrations.langchain import RerankitCompressor

    compressor = RerankitCompressor(reranker=_cut_everything(tmp_path))
    docs = [Document(page_content=t) for t in TEXTS]
    with caplog.at_level(logging.WARNING, logger="rerankit.integrations"):
        assert compressor.compress_documents(docs, "solar power") == []
        assert asyncio.run(compressor.acompress_documents(docs, "solar power")) == []
    said = [r.getMessage() for r in caplog.records if "none is kept" in r.getMessage()]
    assert len(said) == 2 and all(
        m.startswith("RerankitCompressor: stage 'min_score': rule 'min_score'") for m in said
    )


def test_the_llamaindex_postprocessor_logs_why_it_returned_nothing(tmp_path, caplog):
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from rerankit.integrations.llamaindex import RerankitPostprocessor

    post = RerankitPostprocessor(reranker=_cut_everything(tmp_path))
    nodes = [NodeWithScore(node=TextNode(text=t), score=0.0) for t in TEXTS]
    with caplog.at_level(logging.WARNING, logger="rerankit.integrations"):
        assert post.postprocess_nodes(nodes, query_bundle=QueryBundle("solar power")) == []
    assert any(
        r.getMessage().startswith(
            "RerankitPostprocessor: stage 'min_score': rule 'min_score': all 4"
        )
        for r in caplog.records
    )


def test_on_a_list_the_count_dropped_is_logged_in_its_number(caplog):
    items = [{"id": i, "rerank_score": s} for i, s in enumerate([3.0, 2.0, 1.0])]
    with caplog.at_level(logging.WARNING, logger="rerankit"):
        assert [d["id"] for d in min_score(items, 1.5)] == [0, 1]
        assert [d["id"] for d in min_score(items, 2.5)] == [0]
    said = [r.getMessage() for r in caplog.records if " dropped " in r.getMessage()]
    assert [s.split(":")[0] for s in said] == [
        "min_score dropped 1 item",
        "min_score dropped 2 items",
    ]
