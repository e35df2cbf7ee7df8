"""`rerankit eval` / `rerankit tune` machinery on a tiny collection whose metrics are known."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("ranx", reason="evaluation needs the 'eval' extra")

from rerankit.cli import main
from rerankit.eval import load_beir
from rerankit.eval.runner import PipelineRun, evaluate_runs, first_stage
from rerankit.eval.tune import grid, pipeline_spec, to_toml


@pytest.fixture
def tiny(tmp_path):
    corpus = [
        ("d1", "solar panels", "solar panels turn sunlight into electricity"),
        ("d2", "wind", "wind turbines turn wind into electricity"),
        ("d3", "solar history", "the history of solar power and solar cells"),
        ("d4", "cooking", "how to cook pasta"),
    ]
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in corpus)
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "solar electricity"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "wind power"})
        + "\n"
    )
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\n"
    )
    (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return tmp_path


def test_metrics_by_hand(tiny):
    data = load_beir(tiny)
    runs = [
        PipelineRun("perfect", {"q1": {"d1": 3, "d3": 2, "d2": 1}, "q2": {"d2": 1}}),
        PipelineRun("swapped", {"q1": {"d3": 3, "d1": 2, "d2": 1}, "q2": {"d4": 2, "d2": 1}}),
    ]
    rows = {r["pipeline"]: r for r in evaluate_runs(data, runs, k=3)}
    assert rows["perfect"]["ndcg@10"] == pytest.approx(1.0)
    assert rows["perfect"]["p_vs_first_stage"] is None
    # q1: gains 1, 2 at ranks 1, 2 vs ideal 2, 1; q2: the relevant one at rank 2
    q1 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    q2 = 1 / math.log2(3)
    assert rows["swapped"]["ndcg@10"] == pytest.approx((q1 + q2) / 2)
    assert rows["swapped"]["mrr@10"] == pytest.approx((1 + 0.5) / 2)
    assert rows["swapped"]["recall@10"] == pytest.approx(1.0)


def test_first_stage_bm25_and_run_file(tiny, tmp_path):
    data = load_beir(tiny)
    cands = first_stage(data, "bm25", k=2)
    assert cands["q1"][0][0] == "d1" and len(cands["q1"]) == 2
    assert [d for d, _ in cands["q2"]] == ["d2", "d3"]  # wind twice; d3 has "power"
    assert all(s > 0 for c in cands.values() for _, s in c)
    run = tmp_path / "first.trec"
    run.write_text("q1 Q0 d3 1 9.5 x\nq1 Q0 d1 2 7.0 x\nq2 Q0 d4 1 1.0 x\n")
    from_file = first_stage(data, str(run), k=100)
    assert from_file == {"q1": [("d3", 9.5), ("d1", 7.0)], "q2": [("d4", 1.0)]}
    with pytest.raises(ValueError, match="ships no run file"):
        first_stage(data, "run")


def test_eval_command_writes_everything(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "eval",
            "--data",
            str(tiny),
            "--rerankers",
            "bm25,text",
            "--k",
            "3",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "| first stage |" in printed and "| bm25 |" in printed and "| text |" in printed
    result = json.loads((out / "results.json").read_text())
    assert [r["pipeline"] for r in result["results"]] == ["first stage", "bm25", "text"]
    assert result["k"] == 3 and result["queries"] == 2
    assert (out / "runs" / "bm25.trec").read_text().startswith("q1 Q0 ")
    assert (out / "ndcg.png").read_bytes()[:4] == b"\x89PNG"


def test_tune_pieces():
    weights = grid(3)
    assert all(abs(sum(w) - 1) < 1e-9 for w in weights)
    assert all(sum(1 for x in w if x > 0) >= 2 for w in weights)
    assert (0.3, 0.0, 0.7) in weights and (1.0, 0.0, 0.0) not in weights
    spec = pipeline_spec(
        {
            "method": "weighted_average",
            "normalization": "min_max",
            "weights": {"first_stage": 0.3, "embedding": 0.7},
        }
    )
    text = to_toml(spec, "a comment")
    import tomllib

    assert tomllib.loads(text) == spec
    assert text.startswith("# a comment")


def test_tune_refuses_to_report_on_its_training_split(tiny, capsys):
    code = main(["tune", "--data", str(tiny), "--train-split", "test", "--test-split", "test"])
    assert code == 1 and "never tune on the split you report" in capsys.readouterr().err


def test_eval_reports_the_calibration_of_probability_scores(tiny, tmp_path, capsys):
    from rerankit.calibration import expected_calibration_error

    pipeline = tmp_path / "calibrated.toml"
    pipeline.write_text(
        'normalization = "calibrated"\n'
        "scorers = [\n"
        '  { type = "coverage", weight = 0.5, calibration = { slope = 4, intercept = -2 } },\n'
        '  { type = "jaccard", weight = 0.5, calibration = { slope = 6, intercept = -1 } },\n'
        "]\n"
    )
    out = tmp_path / "out"
    args = ["eval", "--data", str(tiny), "--rerankers", "bm25", "--config", str(pipeline)]
    assert main([*args, "--k", "4", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| ECE |" in printed
    rows = {r["pipeline"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    assert rows["bm25"]["ece"] is None  # relative scores have no calibration to report
    report = rows["calibrated"]["calibration"]
    assert sum(b["count"] for b in report["bins"]) == report["pairs"]
    # the same number from the pipeline's own scores and the qrels
    from rerankit import load

    data = load_beir(tiny)
    probabilities, labels = [], []
    for qid, ranked in first_stage(data, "bm25", 4).items():
        result = load(pipeline).rerank(data.queries[qid], [data.text(d) for d, _ in ranked])
        for r in result:
            probabilities.append(r.score)
            labels.append(float(data.qrels.get(qid, {}).get(ranked[r.index][0], 0) >= 1))
    assert rows["calibrated"]["ece"] == pytest.approx(
        expected_calibration_error(probabilities, labels)
    )
    assert (out / "reliability.svg").read_text().startswith("<svg")


def test_tune_calibrate_writes_a_calibrated_pipeline_that_loads(tiny, tmp_path, capsys):
    pytest.importorskip("sentence_transformers", reason="the embedding needs the 'torch' extra")
    pytest.importorskip("wordfreq", reason="background idf needs the 'lexical' extra")
    import tomllib

    from rerankit import load

    out = tmp_path / "calibrated.toml"
    args = ["tune", "--data", str(tiny), "--calibrate", "--k", "4", "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "training ECE" in printed and "| ECE |" in printed
    spec = tomllib.loads(out.read_text())
    stage = spec["stages"][0]
    assert stage["normalization"] == "calibrated"
    assert {s["name"] if "name" in s else s["type"] for s in stage["scorers"]} == {
        "bm25_background",
        "embedding",
    }
    from rerankit.rerankers.hybrid import HYBRID_CALIBRATION

    embedding = next(s for s in stage["scorers"] if s["type"] == "embedding")
    assert embedding["passage_words"] == HYBRID_CALIBRATION["passage_words"]  # as fitted
    reranker = load(out)
    assert reranker.score_scale == "probability"
    loaded = next(s for s in reranker.scorers() if s.name == "embedding")
    assert loaded.passage_words == HYBRID_CALIBRATION["passage_words"]
    alone = reranker.rerank("solar electricity", ["solar panels"])[0].score
    mixed = reranker.rerank("solar electricity", ["wind", "solar panels", "pasta"])
    assert next(r.score for r in mixed if r.index == 1) == pytest.approx(alone)


def _eval(tiny, capsys, *extra):
    code = main(["eval", "--data", str(tiny), "--rerankers", "bm25", "--no-progress", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        (
            "corpus.jsonl",
            '{"id": "d1", "text": "solar"}\n',
            r"corpus\.jsonl, line 1: the document has no '_id' field \(found 'id'",
        ),
        (
            "queries.jsonl",
            '{"_id": "q1", "text": "solar"}\n\n{"_id": "q2"}\n',
            r"queries\.jsonl, line 3: query 'q2' has no text",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1.5\n",
            r"test\.tsv:2: relevance must be an integer grade, got '1\.5'",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq7\td1\t1\nq8\td2\t1\n",
            r"none of its 2 query ids \('q7', 'q8'\) is in queries\.jsonl",
        ),
        (
            "first.run.trec",
            "q1 Q0 d1 1 3.0 x\nq1 Q0 d9 2 2.0 x\n",
            r"first\.run\.trec:2: "
            r"document 'd9' \(query 'q1'\) is not in the corpus",
        ),
        ("first.run.trec", "q5 Q0 d1 1 3.0 x\n", r"none of its query ids is among"),
    ],
)
def test_bad_data_is_an_error_naming_the_file_and_line(tiny, capsys, file, content, message):
    import re

    (tiny / file).write_text(content)
    code, err = _eval(tiny, capsys)
    assert code == 1 and re.search(message, err), err


def test_bad_arguments_are_refused(tiny, tmp_path, capsys):
    for flag in ("--k", "--max-queries"):
        with pytest.raises(SystemExit) as stop:
            main(["eval", "--data", str(tiny), flag, "0"])
        assert stop.value.code == 2 and "expected a positive integer" in capsys.readouterr().err
    a_file = tmp_path / "results.txt"
    a_file.write_text("")
    code, err = _eval(tiny, capsys, "--out", str(a_file))
    assert code == 1 and "is a file; give a folder" in err
    run = tmp_path / "elsewhere.trec"
    run.write_text("q1 Q0 nope 1 1.0 x\n")
    code, err = _eval(tiny, capsys, "--first-stage", str(run))
    assert code == 1 and "elsewhere.trec:1: document 'nope'" in err


def test_results_record_what_ran_and_runs_carry_scores(tiny, tmp_path, capsys):
    from rerankit import __version__, rerank

    out = tmp_path / "out"
    assert _eval(tiny, capsys, "--k", "3", "--out", str(out))[0] == 0
    result = json.loads((out / "results.json").read_text())
    assert result["rerankit_version"] == __version__ and result["split"] == "test"
    assert result["date"].endswith("+00:00")
    assert result["pipelines"]["bm25"]["scorers"][0]["type"] == "BM25Scorer"
    rows = {r["pipeline"]: r for r in result["results"]}
    per_query = rows["bm25"]["per_query_ndcg@10"]
    assert set(per_query) == {"q1", "q2"}
    assert sum(per_query.values()) / 2 == pytest.approx(rows["bm25"]["ndcg@10"])
    lines = (out / "runs" / "bm25.trec").read_text().splitlines()
    first = [line.split() for line in lines if line.startswith("q1 ")]
    data = load_beir(tiny)
    cands = first_stage(data, "bm25", 3)["q1"]
    direct = rerank(data.queries["q1"], [data.text(d) for d, _ in cands], reranker="bm25")
    assert [float(f[4]) for f in first] == pytest.approx([r.score for r in direct], rel=1e-5)
    assert [int(f[3]) for f in first] == list(range(1, len(first) + 1))


def test_held_out_queries_are_a_fixed_share_whatever_the_order():
    from rerankit.eval.tune import held_out

    ids = [f"q{i}" for i in range(50)]
    chosen = held_out(ids)
    assert len(chosen) == 10 and chosen == held_out(list(reversed(ids)))
    assert held_out(ids[:4]) == set()


def test_tune_checks_its_choice_on_held_out_queries_and_writes_a_pipeline_for_plain_texts(
    tmp_path, capsys
):
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    import random

    from rerankit import load

    rng = random.Random(0)
    topics = ["solar power", "wind turbines", "vaccines immune", "stock market", "pasta"]
    corpus, queries, qrels, test = [], [], [], []
    for t, topic in enumerate(topics):
        for j in range(8):
            noise = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(6))
            corpus.append({"_id": f"d{t}-{j}", "text": f"{topic} {noise}"})
    for i in range(40):
        t = i % len(topics)
        queries.append({"_id": f"q{i}", "text": topics[t]})
        target = qrels if i < 30 else test
        target.append(f"q{i}\td{t}-{i % 8}\t1")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    head = "query-id\tcorpus-id\tscore\n"
    (tmp_path / "qrels" / "train.tsv").write_text(head + "\n".join(qrels) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text(head + "\n".join(test) + "\n")
    out = tmp_path / "tuned.toml"
    args = ["tune", "--data", str(tmp_path), "--k", "10", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "24 train queries searched, 6 held out" in printed
    assert "held-out train queries (6): tuned" in printed and "default hybrid" in printed
    tuned = load(out)
    assert len(tuned.rerank("solar power", ["wind turbines", "solar power plant"])) == 2
