"""Pipelines and cascades, explanations, graph and field scorers, declared pipelines."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import Document, Pipeline, load
from rerankit.cli import main
from rerankit.errors import ConfigError
from rerankit.ordering import Deduplicate, DifficultyOrdering, MinScore
from rerankit.rerankers import FusionReranker, ScorerReranker
from rerankit.scorers import (
    BM25Scorer,
    FunctionScorer,
    JaccardScorer,
    PopularityScorer,
    RecencyScorer,
)
from rerankit.scorers.base import ScoreBatch

ROOT = Path(__file__).resolve().parents[2]


class TextScorer:
    """Scores each document by a table keyed on its text (a test double for stages)."""

    def __init__(self, name: str, table: dict[str, float]) -> None:
        self.name, self.table, self.seen = name, table, []

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        self.seen.append([d.text for d in docs])
        return np.array([self.table[d.text] for d in docs])


DOCS = ["a", "b", "c", "d", "e"]


def test_cascade_reorders_only_what_the_previous_stage_kept():
    cheap = TextScorer("cheap", {"a": 1, "b": 5, "c": 4, "d": 3, "e": 2})
    costly = TextScorer("costly", {"b": 0.1, "c": 0.9, "d": 0.5})
    result = Pipeline([(cheap, 3), (costly, None)]).rerank("q", DOCS)
    assert costly.seen == [["b", "c", "d"]]
    assert [r.text for r in result] == ["c", "d", "b", "e", "a"]
    top = result[0]
    assert top.scores == {"cheap/cheap": 4.0, "costly/costly": 0.9} and top.score == 0.9
    assert result[3].scores == {"cheap/cheap": 2.0} and result[3].score == 2.0
    assert set(result.timings) == {"cheap", "costly"}
    assert all(t >= 0 for t in result.timings.values())


class ScaledScorer(TextScorer):
    """A TextScorer whose scores are on a declared scale."""

    def __init__(self, name: str, table: dict[str, float], scale: str) -> None:
        super().__init__(name, table)
        self.score_scale = scale


def test_a_pipeline_says_the_scale_of_the_stages_that_scored_what_it_returns():
    first = ScaledScorer("first", {"a": 0.9, "b": 0.8, "c": 0.6, "d": 0.3, "e": 0.2}, "probability")
    second = ScaledScorer("second", {"a": 0.1, "b": 0.7, "c": 0.0}, "unit")
    alone = ScorerReranker(first).rerank("q", DOCS)
    # a rule keeps the scores it is given, and so their scale
    ruled = Pipeline([first, MinScore(0.5)]).rerank("q", DOCS)
    assert ruled.score_scale == alone.score_scale == "probability"
    assert [(r.index, r.score) for r in ruled] == [(r.index, r.score) for r in alone][:3]
    assert Pipeline([first, MinScore(0.5)]).score_scale == "probability"
    # two stages on two scales: the documents the second one scored are on its scale
    cascade = Pipeline([(first, 3), second])
    top = cascade.rerank("q", DOCS, top_k=3)
    assert top.score_scale == "unit" and [r.text for r in top] == ["b", "a", "c"]
    # d and e keep the first stage's probabilities: the scores returned mix two scales
    assert cascade.rerank("q", DOCS).score_scale == "relative"
    assert cascade.score_scale == "unit"  # the last stage decides, as a top_k within it says
    assert (
        Pipeline([(first, 3), ScaledScorer("p", first.table, "probability")])
        .rerank("q", DOCS)
        .score_scale
        == "probability"
    )


def test_a_failing_second_stage_keeps_stage_one_order_and_says_so(failing_scorer):
    cheap = TextScorer("cheap", {"a": 1, "b": 5, "c": 4, "d": 3, "e": 2})
    result = Pipeline([(cheap, 3), failing_scorer("llm")]).rerank("q", DOCS)
    assert [r.text for r in result] == ["b", "c", "d", "e", "a"]
    assert result.degraded and any("llm" in w and "failed" in w for w in result.warnings)


def test_a_stage_that_raises_keeps_the_previous_order():
    class Exploding(ScorerReranker):
        async def arerank(self, *args, **kwargs):
            raise RuntimeError("boom")

    cheap = TextScorer("cheap", {"a": 1, "b": 5, "c": 4, "d": 3, "e": 2})
    result = Pipeline([cheap, Exploding(cheap, name="x")]).rerank("q", DOCS)
    assert [r.text for r in result] == ["b", "c", "d", "e", "a"]
    assert result.degraded and "stage 'x' failed (RuntimeError: boom)" in result.warnings[0]


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.lists(st.floats(-5, 5), min_size=6, max_size=6), min_size=1, max_size=4),
    keeps=st.lists(st.one_of(st.none(), st.integers(1, 8)), min_size=4, max_size=4),
)
def test_pipelines_return_a_permutation(scores, keeps):
    texts = [f"t{i}" for i in range(6)]
    stages = [
        (TextScorer(f"s{j}", dict(zip(texts, row, strict=True))), keeps[j])
        for j, row in enumerate(scores)
    ]
    result = Pipeline(stages).rerank("q", texts)
    assert sorted(r.index for r in result) == list(range(6))


def test_explanations_add_up():
    docs = ["solar panels", "wind power plants", "solar power stations", "coal"]
    for method in ("weighted_average", "rrf", "comb_sum", "max"):
        fusion = FusionReranker(
            [BM25Scorer(), JaccardScorer()], method, weights={"bm25": 0.7, "jaccard": 0.3}
        )
        result = fusion.rerank("solar power", docs)
        for r in result:
            parts = r.explanation
            assert set(parts) == {"bm25", "jaccard"}
            assert sum(p["contribution"] for p in parts.values()) == pytest.approx(r.score)
            assert parts["bm25"]["raw"] == pytest.approx(r.scores["bm25"])
        table = result.explain_table()
        assert "bm25" in table and "contrib" in table.splitlines()[0]
    explained = result.explain()
    assert explained[0]["rank"] == 1 and set(explained[0]["strategies"]) == {"bm25", "jaccard"}


def test_rules_as_stages_report_dropped_documents():
    docs = [
        {"id": i, "text": t, "difficulty": lvl}
        for i, (t, lvl) in enumerate(
            [
                ("solar power basics", "advanced"),
                ("solar power basics", "introductory"),
                ("solar power history", "introductory"),
                ("wind", None),
            ]
        )
    ]
    result = Pipeline([BM25Scorer(), Deduplicate(), DifficultyOrdering()]).rerank("solar", docs)
    assert result.dropped == (1,)
    assert [r.id for r in result] == [2, 3, 0]  # introductory, unknown (intermediate), advanced
    assert any("deduplicate dropped 1 document [1]" in w for w in result.warnings)


# --- graph ---------------------------------------------------------------------------------


def test_pagerank_and_degree_match_networkx():
    nx = pytest.importorskip("networkx")
    from rerankit.compat import ResultReranker, StructuralReranker
    from rerankit.scorers import GraphScorer
    from rerankit.scorers.graph import NetworkXGraphStore

    g = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("d", "c"), ("e", "c"), ("e", "d")])
    docs = [Document(f"node {n}", id=n) for n in ["a", "b", "c", "d", "e", "zz"]]
    expected = nx.pagerank(g, alpha=0.85)
    result = ScorerReranker(GraphScorer(g)).rerank("q", docs)
    for r in result:
        if r.id == "zz":
            assert r.score == 0.0 and r.flags == ("not_in_graph",)
        else:
            assert r.score == pytest.approx(expected[r.id], abs=1e-12)
    assert result[0].id == "c"
    degree = ScorerReranker(GraphScorer(NetworkXGraphStore(g), mode="degree")).rerank("q", docs)
    assert degree[0].id == "c" and degree[0].score == pytest.approx(nx.degree_centrality(g)["c"])

    class Store:  # the minimal protocol
        directed = True

        def nodes(self):
            return list(g.nodes)

        def edges(self):
            return list(g.edges)

    entities = [{"id": n, "name": f"node {n}"} for n in ["a", "b", "c"]]
    ranked = __import__("asyncio").run(
        ResultReranker([StructuralReranker(Store())]).rerank("q", entities)
    )
    assert ranked[0][0]["id"] == "c" and ranked[0][1] == 1.0


def test_personalized_pagerank_favours_the_query_neighbourhood():
    nx = pytest.importorskip("networkx")
    from rerankit.scorers import GraphScorer

    g = nx.Graph([("sun", "panel"), ("panel", "roof"), ("wind", "turbine"), ("turbine", "sea")])
    docs = [
        Document(t, id=n)
        for n, t in [
            ("sun", "the sun"),
            ("panel", "solar panel"),
            ("roof", "roof"),
            ("wind", "wind"),
            ("turbine", "turbine blades"),
            ("sea", "the sea"),
        ]
    ]
    result = ScorerReranker(GraphScorer(g, mode="personalized", seeds=1)).rerank("solar", docs)
    top3 = {r.id for r in list(result)[:3]}
    assert top3 == {"sun", "panel", "roof"}
    fallback = ScorerReranker(GraphScorer(g, mode="personalized")).rerank("zebra", docs)
    assert any("global PageRank" in w for w in fallback.warnings)


# --- field scorers ------------------------------------------------------------------------


def test_recency_popularity_and_function_scorers():
    now = dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc)
    docs = [
        {"text": "new", "published_at": "2026-11-22T00:00:00Z", "views": 1000},
        {"text": "month", "published_at": (now - dt.timedelta(days=30)).isoformat(), "views": 9},
        {"text": "older", "published_at": now.timestamp() - 60 * 86400, "views": -3},
        {"text": "undated"},
    ]
    result = ScorerReranker(RecencyScorer(half_life_days=30, now=now)).rerank("q", docs)
    by_text = {r.text: r for r in result}
    assert by_text["new"].score == pytest.approx(1.0)
    assert by_text["month"].score == pytest.approx(0.5)
    assert by_text["older"].score == pytest.approx(0.25)
    assert by_text["undated"].score == 0.0 and by_text["undated"].flags == ("missing:published_at",)
    pop = ScorerReranker(PopularityScorer("views")).rerank("q", docs)
    assert {r.text: r.score for r in pop} == pytest.approx(
        {"new": np.log1p(1000), "month": np.log1p(9), "older": 0.0, "undated": 0.0}
    )
    fn = ScorerReranker(FunctionScorer(lambda q, d: len(d.text), name="length")).rerank("q", docs)
    assert fn[0].text == "undated" and fn[0].scores == {"length": 7.0}
    with pytest.raises(ValueError, match="not a time"):
        ScorerReranker(RecencyScorer()).rerank("q", [{"text": "x", "published_at": "soon"}])


# --- declared pipelines -------------------------------------------------------------------


def test_load_of_a_missing_path_says_the_path_does_not_exist(tmp_path):
    """A spec that looks like a path is not reported as an unknown reranker name."""
    for spec in ("/no/such/dir", "./no-such-model", f"{tmp_path}/absent"):
        with pytest.raises(ConfigError, match="path does not exist") as raised:
            load(spec)
        assert "unknown reranker" not in str(raised.value)
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(ConfigError, match="is a file"):
        load(str(tmp_path / "weights.bin"))
    with pytest.raises(ConfigError, match="unknown reranker 'no-such-name'"):
        load("no-such-name")  # a name stays a name


def test_load_from_dict_and_files(tmp_path):
    spec = {
        "name": "two-stage",
        "stages": [
            {"scorer": {"type": "bm25", "k1": 1.2}, "keep": 2, "name": "lex"},
            {
                "scorers": [{"type": "bm25", "weight": 0.5}, {"type": "jaccard", "weight": 0.5}],
                "method": "rrf",
            },
        ],
    }
    pipeline = load(spec)
    assert isinstance(pipeline, Pipeline) and [s.name for s in pipeline.stages] == ["lex", "fusion"]
    assert pipeline.stages[0].step.scorer.k1 == 1.2
    docs = ["solar power", "solar panels", "wind power", "coal"]
    from_dict = pipeline.rerank("solar power", docs)
    (tmp_path / "p.json").write_text(json.dumps(spec))
    paths = ["p.json"]
    try:
        import yaml
    except ImportError:  # the 'yaml' extra is optional
        pass
    else:
        (tmp_path / "p.yaml").write_text(yaml.safe_dump(spec))
        paths.append("p.yaml")
    for path in paths:
        again = load(tmp_path / path).rerank("solar power", docs)
        assert [r.index for r in again] == [r.index for r in from_dict]
    single = load({"scorer": {"type": "jaccard"}, "name": "overlap"})
    assert isinstance(single, ScorerReranker) and single.name == "overlap"
    assert load("bm25") is load("bm25")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"stages": [{"scorer": {"type": "nope"}}]}, r"stages\[0\]\.scorer: unknown scorer 'nope'"),
        ({"stages": [{"scorer": {"type": "bm25", "k9": 1}}]}, r"stages\[0\]\.scorer: .*'k9'"),
        ({"stages": [{"scorer": {"type": "bm25"}, "keep": "eight"}]}, r"stages\[0\]\.keep"),
        ({"stages": [{"scorers": [{"type": "bm25", "weight": "x"}]}]}, r"scorers\[0\]\.weight"),
        ({"stages": [{"scorer": {"type": "bm25"}, "rule": {"type": "mmr"}}]}, "exactly one"),
        ({"stages": [{"scorer": {"type": "bm25"}, "kep": 3}]}, r"no key 'kep' \(did you"),
        ({"stages": []}, "non-empty"),
        ({"stages": [{"rule": {"type": "difficulty", "mode": "x"}}]}, "mode"),
        (
            {
                "stages": [
                    {
                        "scorer": {
                            "type": "llm_pointwise",
                            "provider": "gemini",
                            "api_key_env": "RERANKIT_TEST_UNSET",
                        }
                    }
                ]
            },
            "RERANKIT_TEST_UNSET",
        ),
    ],
)
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(ConfigError, match=message):
        load(spec)


def test_example_pipeline_file_runs_in_the_cli(capsys):
    pytest.importorskip("sentence_transformers", reason="the example uses the embedding model")
    code = main(
        [
            "rank",
            "-q",
            "how do vaccines train the immune system",
            "-i",
            str(ROOT / "examples" / "sample.jsonl"),
            "--config",
            str(ROOT / "examples" / "pipeline.toml"),
            "--explain",
            "-k",
            "3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["rank", "id", "score", "strategy"]
    assert "hybrid/embedding" in out and "lexical/bm25" in out and "hybrid/retriever" in out
    code = main(
        [
            "rank",
            "-q",
            "vaccines",
            "-i",
            str(ROOT / "examples" / "sample.jsonl"),
            "-r",
            str(ROOT / "examples" / "pipeline.toml"),
            "-k",
            "2",
        ]
    )
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(rows) == 2 and "rerank_score" in rows[0]


def test_cli_config_errors(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("stages = [ { scorer = { type = 'bogus' } } ]\n")
    code = main(["rank", "-q", "x", "-i", str(ROOT / "examples" / "sample.jsonl"), "-r", str(bad)])
    err = capsys.readouterr().err
    assert code == 1 and "stages[0].scorer: unknown scorer 'bogus'" in err and err.count("\n") == 1
    broken = tmp_path / "broken.toml"
    broken.write_text("stages = [ {")
    assert main(["rank", "-q", "x", "-r", str(broken)]) == 1
    assert "broken.toml" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["raises", "fails", "every llm call fails"])
def test_a_stage_that_scores_nothing_leaves_the_previous_scores_and_scale(how, failing_scorer):
    """Score order agrees with rank order: the documents a failed stage was given keep the
    first stage's scores and scale, as the documents below it do."""
    first = ScaledScorer("first", {"a": 0.9, "b": 0.8, "c": 0.6, "d": 0.3, "e": 0.2}, "probability")

    class Exploding(ScorerReranker):
        async def arerank(self, *args, **kwargs):
            raise RuntimeError("boom")

    class NoJudgment(TextScorer):  # what an LLM scorer gives when every call failed
        async def score(self, query, docs, **context):
            flags = {i: ["llm_failed"] for i in range(len(docs))}
            return ScoreBatch(np.zeros(len(docs)), flags=flags, degraded=True)

    second = {
        "raises": Exploding(first, name="x"),
        "fails": failing_scorer("x"),
        "every llm call fails": NoJudgment("x", {}),
    }[how]
    result = Pipeline([(first, 3), second]).rerank("q", DOCS)
    assert [r.text for r in result] == DOCS
    assert [r.score for r in result] == [0.9, 0.8, 0.6, 0.3, 0.2]
    assert result.score_scale == "probability" and result.degraded
    if how == "every llm call fails":
        assert all("llm_failed" in r.flags for r in result[:3]) and not result[3].flags


def test_a_pipeline_whose_later_stages_scored_nothing_is_ranked_by_the_last_that_did():
    """Every document flagged llm_failed by a last stage that scored all of them: the
    earlier stage's order stands, so the result is not unusable (a service answers it, a
    batch row is not failed, ``rank`` exits 0); a pipeline of that stage alone is."""

    class NoJudgment(TextScorer):  # what an LLM scorer gives when every call failed
        async def score(self, query, docs, **context):
            flags = {i: ["llm_failed", "llm_failed:auth"] for i in range(len(docs))}
            return ScoreBatch(np.zeros(len(docs)), flags=flags, degraded=True)

    first = TextScorer("first", {"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.3, "e": 0.2})
    result = Pipeline([first, NoJudgment("judge", {}), NoJudgment("again", {})]).rerank("q", DOCS)
    assert [r.text for r in result] == ["b", "c", "d", "e", "a"]
    assert all("llm_failed" in r.flags for r in result) and result.degraded
    assert result.ranked_by == "first" and result.unusable is None
    alone = Pipeline([NoJudgment("judge", {})]).rerank("q", DOCS)
    assert alone.ranked_by is None
    assert alone.unusable == "the LLM provider failed for every document"
    fine = Pipeline([first, TextScorer("second", dict.fromkeys(DOCS, 1.0))]).rerank("q", DOCS)
    assert fine.ranked_by == "second" and ScorerReranker(first).rerank("q", DOCS).ranked_by is None
