"""The default hybrid on ONNX Runtime scores as it does on torch (float32): the same order
and scores within 1e-4 on SciFact (train), NFCorpus (dev) and TREC DL19 queries' BM25
candidates, so every figure measured on torch holds for the default.

Both backends encode every candidate whole and by passages (about 7 per SciFact or NFCorpus
abstract), which is slow on a CPU (10 NFCorpus candidates: 4.3 s of CPU on ONNX Runtime and
7.6 s on torch on the 2-core development machine), so ``make test`` compares 5 queries of
each set on their BM25 top 3 (45 documents, 15 queries), and the ``slow`` check 20 queries
of each on their top 20 (1,200 documents)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
pytest.importorskip("sentence_transformers", reason="the torch reference needs the 'torch' extra")

from rerankit import load
from rerankit.backends.bundled import bundled_model_path
from rerankit.eval.data import load_beir
from rerankit.eval.first_stage import candidate_documents, first_stage

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
#: (folder, split): the development pool's SciFact and NFCorpus splits, and DL19
SETS = {
    "scifact": ("beir/scifact", "train"),
    "nfcorpus": ("beir/nfcorpus", "dev"),
    "dl19": ("msmarco/trec-dl-2019-bm25-top100", "test"),
}
pytestmark = [
    pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data (the evaluation sets) is absent"),
    pytest.mark.skipif(
        bundled_model_path() is None, reason="the bundled all-MiniLM-L6-v2 is not installed"
    ),
]


@pytest.fixture(scope="module")
def hybrids():
    """The default hybrid (auto: ONNX Runtime) and the same on torch."""
    onnx = load({"reranker": {"type": "hybrid"}})
    torch = load({"reranker": {"type": "hybrid", "backend": "torch"}})
    assert (onnx.embedding.backend, torch.embedding.backend) == ("onnx", "torch")
    return onnx, torch


def _compare(name: str, queries: int, k: int, hybrids) -> int:
    folder, split = SETS[name]
    data = load_beir(DATA / folder, split)
    ranked = first_stage(data, "auto", k)  # DL19's BM25 run; BM25 over the corpus else
    onnx, torch = hybrids
    compared = 0
    for qid in list(data.queries)[:queries]:
        docs = candidate_documents(data, ranked[qid], with_scores=False)
        if not docs:
            continue
        a = onnx.rerank(data.queries[qid], docs)
        b = torch.rerank(data.queries[qid], docs)
        assert a.score_scale == b.score_scale == "probability"
        assert [d.id for d in a] == [d.id for d in b], f"{name} query {qid}: order differs"
        diff = np.abs(np.array([d.score for d in a]) - np.array([d.score for d in b])).max()
        assert diff <= 1e-4, f"{name} query {qid}: scores differ by {diff:.2e}"
        compared += len(docs)
    assert compared, f"{name}: no query had candidates"
    return compared


@pytest.mark.parametrize(  # scifact in make test; the others, and twenty queries, test-slow
    "name", [n if n == "scifact" else pytest.param(n, marks=pytest.mark.slow) for n in SETS]
)
def test_onnx_scores_as_torch_on_five_queries_of_each_set(name, hybrids):
    assert _compare(name, 5, 3, hybrids) >= 5 * 3 // 2


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETS))
def test_onnx_scores_as_torch_on_twenty_queries_of_each_set(name, hybrids):
    assert _compare(name, 20, 20, hybrids) >= 20 * 20 // 2
