"""The service's relevance scores fall with rank whatever the stages: a cascade's documents
left behind by an earlier stage (on that stage's scale) score below every kept one."""

from __future__ import annotations

import itertools
import math
import random
import time

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rerankit.normalize import ranked_unit_scores, scale_to_unit
from rerankit.server import ServerSettings, create_app

WORDS = ["solar", "power", "wind", "panels", "sun", "homes", "sea", "cells", "grid", "the"]
DOCS = [
    "solar power panels",
    "solar solar solar",
    "wind power",
    "power of the sun and solar",
    "solar cells",
    "hydro",
    "solar power stations for homes",
    "panels",
]
# the reader's shape, small: BM25 keeps a few, another scale scores them, a rule reorders
CASCADE = {
    "stages": [
        {"scorer": {"type": "bm25"}, "keep": 3},
        {"scorer": {"type": "jaccard"}},
        {"rule": {"type": "mmr", "lambda": 0.7}},
    ]
}
SCORERS = [{"type": t} for t in ("bm25", "jaccard", "coverage", "text", "proximity")]
RULES = [{"type": "mmr", "lambda": 0.5}, {"type": "deduplicate", "threshold": 0.5}]


def random_pipeline(rng: random.Random) -> dict:
    """Two to four stages: scorers (some keeping a few) and ordering rules."""
    stages = []
    for j in range(rng.randint(2, 4)):
        if j and rng.random() < 0.3:
            stages.append({"rule": dict(rng.choice(RULES))})
        else:
            stage: dict = {"scorer": dict(rng.choice(SCORERS))}
            if rng.random() < 0.7:
                stage["keep"] = rng.randint(1, 5)
            stages.append(stage)
    return {"stages": stages}


rng = random.Random(7)
PIPELINES = {"cascade": CASCADE} | {f"p{i}": random_pipeline(rng) for i in range(10)}


@pytest.fixture(scope="module")
def client():
    app = create_app(ServerSettings(pipelines=PIPELINES, default="cascade"))
    with TestClient(app) as c:
        deadline = time.time() + 60
        while c.get("/ready").json()["status"] == "loading" and time.time() < deadline:
            time.sleep(0.02)
        yield c


def served(client, model, docs, query="solar power", **extra):
    body = {"model": model, "query": query, "documents": docs, **extra}
    r = client.post("/v1/rerank", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def falls(scores):
    return all(a >= b for a, b in itertools.pairwise(scores))


def test_a_cascade_s_documents_left_behind_score_below_every_kept_one(client):
    answer = served(client, "cascade", DOCS)
    assert answer["meta"]["rerankit"]["scores"] == "relative"
    scores = [x["relevance_score"] for x in answer["results"]]
    assert falls(scores), scores
    assert scores[0] == 1.0 and scores[-1] == 0.0  # best 1, worst 0
    # BM25 kept 3: the 5 it left behind score below all of them, and top_n only cuts
    assert max(scores[3:]) < min(scores[:3])
    top = served(client, "cascade", DOCS, top_n=5)["results"]
    assert [x["relevance_score"] for x in top] == scores[:5]
    # within the last stage's documents, that stage's own (pair-wise) scores, as before
    top = served(client, "cascade", DOCS, top_n=2)
    assert top["meta"]["rerankit"]["scores"] == "unit"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    model=st.sampled_from(sorted(PIPELINES)),
    docs=st.lists(st.sampled_from(DOCS), min_size=1, max_size=8),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    top_n=st.none() | st.integers(1, 8),
)
def test_served_scores_fall_with_rank_whatever_the_stages(client, model, docs, query, top_n):
    answer = served(client, model, docs, query, **({"top_n": top_n} if top_n else {}))
    scores = [x["relevance_score"] for x in answer["results"]]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    # (a pair-wise answer keeps each pair's own score, which a rule may have moved down)
    if answer["meta"]["rerankit"]["scores"] == "relative":
        assert falls(scores), (PIPELINES[model], scores)


@given(st.lists(st.floats(-1e6, 1e6), max_size=30))
def test_ranked_unit_scores_fall_with_rank_best_1_worst_0(scores):
    unit = ranked_unit_scores(scores)
    assert falls(unit.tolist()) and ((unit >= 0) & (unit <= 1)).all()
    if len(set(scores)) > 1:
        assert unit[0] == 1.0 and unit[-1] == 0.0
    if falls(scores):  # the order is the scores': plain min-max, as before
        np.testing.assert_allclose(unit, scale_to_unit(scores, "relative"))


def test_ranked_unit_scores_put_each_later_stretch_below_the_one_before():
    # three kept (0.59 .. 0.1), three left behind on a larger scale (1.5 .. 0.2)
    unit = ranked_unit_scores([0.59, 0.4, 0.1, 1.5, 1.0, 0.2])
    assert unit[:3].min() > unit[3:].max()
    assert unit[2] == pytest.approx(0.6) and unit[3] == pytest.approx(0.4)  # ranks 3, 4 of 6
    assert not any(math.isnan(u) for u in unit)
