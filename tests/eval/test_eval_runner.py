"""`rerankit eval` / `rerankit tune` machinery on a tiny collection whose metrics are known."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="evaluation's chart needs the 'eval' extra")

from rerankit.cli import main
from rerankit.config import to_toml
from rerankit.errors import flags_first
from rerankit.eval import load_beir
from rerankit.eval.first_stage import first_stage
from rerankit.eval.notes import top_bins_note
from rerankit.eval.runner import (
    PipelineRun,
    calibration_note,
    evaluate_runs,
    format_table,
    metric_names,
    write_outputs,
)
from rerankit.training.fusion_search import grid, pipeline_spec


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


def test_every_run_file_is_visible_and_named_after_its_pipeline(tiny, tmp_path):
    """A model given as ./folder or a hub id gets a plain, visible file under runs/."""
    data = load_beir(tiny)
    names = ["first stage", "./my-model", "../models/ce", "org/model", "a:b c"]
    runs = [PipelineRun(n, {"q1": {"d1": 2, "d3": 1}}) for n in names]
    write_outputs(tmp_path / "out", evaluate_runs(data, runs, k=3), runs, {})
    files = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    assert files == sorted(
        ["first_stage.trec", "my-model.trec", "models_ce.trec", "org_model.trec", "a_b_c.trec"]
    )
    assert (tmp_path / "out" / "runs" / "my-model.trec").read_text().split()[:3] == [
        "q1",
        "Q0",
        "d1",
    ]


def test_a_candidate_listed_twice_is_ranked_once_where_it_came_first_and_said(tiny, tmp_path):
    from rerankit.eval import evaluate

    cands = tmp_path / "cands.jsonl"
    rows = [
        {"query_id": "q1", "candidates": [{"id": "d3"}, {"id": "d1"}, {"id": "d3"}, "d2"]},
        {"query_id": "q2", "candidates": ["d2", "d4"]},
    ]
    cands.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_beir(tiny)
    said: list[str] = []
    got = first_stage(data, str(cands), k=10, note=said.append)
    assert [d for d, _ in got["q1"]] == ["d3", "d1", "d2"] and len(got["q2"]) == 2
    assert len(said) == 1 and "1 candidate listed again for the same query, in 1 query " in said[0]
    assert "query 'q1'" in said[0] and data.notes == []  # the caller's dataset untouched
    warned: list[str] = []
    result = evaluate(tiny, "bm25", first_stage=str(cands), note=warned.append)
    assert any("listed again" in w for w in warned)
    assert any("listed again" in n for n in result.to_dict()["collections"][0]["notes"])


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

    def refuse(constant):  # a bare NaN or Infinity that strict JSON parsers reject
        raise AssertionError(f"results.json holds {constant}")

    result = json.loads((out / "results.json").read_text(), parse_constant=refuse)
    assert [r["pipeline"] for r in result["results"]] == ["first stage", "bm25", "text"]
    assert result["candidates"] == result["k"] == 3 and result["queries"] == 2  # k: its old name
    assert (out / "runs" / "bm25.trec").read_text().startswith("q1 Q0 ")
    assert (out / "ndcg.png").read_bytes()[:4] == b"\x89PNG"


def test_eval_over_several_collections_prints_each_and_the_mean(tiny, tmp_path, capsys):
    import shutil

    pool = tmp_path / "pool"
    for name in ("one", "two"):  # (tiny is tmp_path itself)
        shutil.copytree(tiny, pool / name, ignore=shutil.ignore_patterns("pool"))
    (pool / "two" / "first.run.trec").write_text("q1 Q0 d3 1 9.5 x\nq1 Q0 d1 2 7.0 x\n")
    out = tmp_path / "out"
    args = ["eval", "--data", str(pool), "--data", f"{tiny}@train", "--rerankers", "bm25"]
    assert main([*args, "--k", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    # a table per collection; "auto" takes a collection's own run when it ships one
    assert printed.count("\n| first stage |") == 3
    assert "one, test split, 2 queries; first stage: BM25 over the corpus" in printed
    # two's run ranks q1 only: q2 is evaluated with nothing (0), and the header says so
    assert (
        "two, test split, 2 queries, 1 with no candidates (they score 0); first stage: "
        "the dataset's run (first.run.trec)" in printed
    )
    summary = json.loads((out / "summary.json").read_text())
    rows = {c["collection"]: c for c in summary["collections"]}
    assert list(rows) == ["one", "two", f"{tiny.name}@train"]
    assert rows["two"]["queries_without_candidates"] == 1
    assert rows["one"]["queries_without_candidates"] == 0
    assert rows[f"{tiny.name}@train"]["split"] == "train"
    assert rows[f"{tiny.name}@train"]["queries"] == 1
    for name in ("bm25", "first stage"):
        mean = sum(c["ndcg@10"][name] for c in rows.values()) / 3
        assert summary["mean_ndcg@10"][name] == pytest.approx(mean)
        assert f"{100 * mean:.2f}" in printed.split("nDCG@10 x 100 by collection")[1]
    assert (out / "one" / "results.json").is_file() and (out / "two" / "runs").is_dir()
    # only the first stage's run holds d3 and d1 for q1 in collection two
    assert rows["two"]["ndcg@10"]["first stage"] != rows["one"]["ndcg@10"]["first stage"]


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


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "twice"])
def test_tune_refuses_an_adoption_margin_that_is_not_a_positive_number(tiny, capsys, bad):
    with pytest.raises(SystemExit) as stop:
        main(["tune", "--data", str(tiny), "--adopt-margin", bad])
    assert stop.value.code == 2
    assert "--adopt-margin" in (err := capsys.readouterr().err)
    assert "expected a positive number" in err
    # what to do instead: the flag that writes the learned pipeline whatever its gain
    assert "to write the learned pipeline whatever its gain, add --keep-learned" in err


def test_tune_refuses_an_out_it_could_not_read_back_before_any_work(tmp_path, capsys):
    # the data folder is empty: the --out error comes first, before anything is read
    (tmp_path / "data").mkdir()
    missing = str(tmp_path / "data")
    assert main(["tune", "--data", missing, "--out", str(tmp_path / "tuned.json")]) == 1
    err = capsys.readouterr().err
    assert "tune writes a TOML pipeline file; give a name ending in .toml" in err
    assert f"(e.g. {tmp_path / 'tuned.toml'})" in err
    assert main(["tune", "--data", missing, "--out", str(tmp_path)]) == 1
    said = f"--out {tmp_path}: is a folder; name the pipeline file"
    assert said in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # nothing written


def test_tune_without_a_training_split_points_at_the_halves_of_one(tiny, capsys):
    (tiny / "qrels" / "train.tsv").unlink()
    assert main(["tune", "--data", str(tiny)]) == 1
    err = capsys.readouterr().err
    assert f"{tiny}: no qrels/train.tsv to tune on (splits found: test)" in err
    assert "--train-split test:odd, --test-split test:even" in err
    (tiny / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert main(["tune", "--data", str(tiny)]) == 1
    err = capsys.readouterr().err
    assert "(splits found: dev, test); name the one to tune on with --train-split" in err


def test_eval_says_which_judged_queries_it_left_out(tiny, capsys):
    qrels = tiny / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q9\td4\t1\n")  # q9 is not in queries.jsonl
    assert main(["eval", "--data", str(tiny), "--rerankers", "bm25", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert (
        f"rerankit: warning: {qrels}: 1 of its 3 judged queries is not in queries.jsonl "
        "and is left out ('q9')" in captured.err
    )
    assert "2 queries" in captured.out


def test_a_pipeline_file_is_labelled_by_the_name_it_declares_every_time(tiny, tmp_path, capsys):
    """One rule: the name a file declares (as serve lists it), with -2, -3 for a name an
    earlier pipeline has; the same file listed twice is not named two ways."""
    mine = tmp_path / "file-one.toml"
    mine.write_text('name = "my-ranker"\n[scorer]\ntype = "coverage"\n')
    clash = tmp_path / "file-two.toml"  # declares a name another pipeline has
    clash.write_text('name = "bm25"\n[scorer]\ntype = "jaccard"\n')
    out = tmp_path / "out"
    rerankers = f"bm25,{mine},{clash},{mine}"
    args = ["eval", "--data", str(tiny), "--rerankers", rerankers, "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    table = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    rows = [r["pipeline"] for r in results["results"]]
    assert rows[1:] == ["bm25", "my-ranker", "bm25-2", "my-ranker-2"]  # after the first stage
    assert list(results["pipelines"]) == rows[1:]
    assert all(f"| {name} |" in table for name in rows[1:])
    assert {p.stem for p in (out / "runs").glob("*.trec")} >= set(rows[1:])


def test_the_table_says_what_ece_means_and_names_the_pipelines_to_refit():
    rows = [{"pipeline": "bm25", "ece": None}, {"pipeline": "a", "ece": 0.19}]
    rows += [{"pipeline": "b", "ece": 0.03}]
    note = calibration_note(rows)
    assert note.startswith("\nECE: how far the probability scores are")
    # a caller of the library is told the call, a user of the command the command
    assert "for a:" in note
    assert "rerankit.training.tune(DATA, candidates=100, calibrate=True" in note
    assert "--calibrate" not in note
    with flags_first():
        said = calibration_note(rows)
    assert "rerankit tune --data DATA --candidates 100 --calibrate --out calibrated.toml" in said
    # the evaluation's own data, first stage and candidates: no placeholder for the user
    ran = {"data": Path("my data"), "first_stage": "run.jsonl", "candidates": 20}
    assert calibration_note(rows, ran).endswith(
        'rerankit.training.tune("my data", first_stage="run.jsonl", candidates=20, calibrate=True, '
        'out="calibrated.toml")'
    )
    with flags_first():
        said = calibration_note(rows, ran)
    assert said.endswith(
        "rerankit tune --data 'my data' --first-stage run.jsonl --candidates 20 --calibrate "
        "--out calibrated.toml"
    )
    with flags_first():  # the default first stage is not named
        said = calibration_note(rows, {**ran, "first_stage": "auto"})
    assert "--data 'my data' --candidates 20 --calibrate" in said and "SAME" not in said
    with flags_first():  # an evaluation on the first N queries: the refit on as many
        said = calibration_note(rows, {**ran, "first_stage": "auto", "max_queries": 30})
    assert "--candidates 20 --max-queries 30 --calibrate" in said
    # ... of tune's training split, which the note says: not the queries evaluated here
    assert said.endswith(
        "--out calibrated.toml (--max-queries 30 there takes the first 30 queries of its "
        "training split, not the queries evaluated here)"
    )
    # in tune's report the calibrated file is that refit: named, no command to write it again
    note = calibration_note(rows, {**ran, "refitted": "calibrated"})
    assert note.endswith("as here: calibrated is that refit") and "tune" not in note
    # a retriever's file holds the evaluated split's queries: the refit on its halves
    with flags_first():
        said = calibration_note(rows, {**ran, "split": "test"})
    assert said.endswith(
        "--first-stage run.jsonl --candidates 20 --train-split test:odd --test-split test:even "
        "--calibrate --out calibrated.toml"
    )
    assert 'train_split="test:odd", test_split="test:even"' in calibration_note(
        rows, {**ran, "split": "test"}
    )
    with flags_first():  # the default first stage reads the training split: no halves
        said = calibration_note(rows, {**ran, "first_stage": "auto", "split": "test"})
    assert "--train-split" not in said
    in_python = calibration_note(rows, {**ran, "max_queries": 30})
    assert "candidates=20, max_queries=30, calibrate=True" in in_python
    assert in_python.endswith(
        "(max_queries=30 there takes the first 30 queries of its training split, not the "
        "queries evaluated here)"
    )
    with flags_first():  # the refit on a half of the evaluated split: that half's first N
        said = calibration_note(rows, {**ran, "split": "test", "max_queries": 30})
    assert said.endswith("takes the first 30 queries of test:odd, not the queries evaluated here)")
    assert "for a, b" not in note and "bm25" not in note
    assert "calibrate" not in calibration_note(rows[::2]).split("(0:")[1]  # no advice


def test_the_refit_advice_keeps_the_splits_a_folder_without_a_training_split_needs(tmp_path):
    rows = [{"pipeline": "a", "ece": 0.19}]
    (tmp_path / "qrels").mkdir()
    judged = "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(10))
    (tmp_path / "qrels" / "test.tsv").write_text(judged)  # 5 a half: enough to refit on
    ran = {"data": tmp_path, "first_stage": "auto", "candidates": 30}
    for split, fit, check in [
        ("test:even", "test:odd", "test:even"),
        ("test:odd", "test:even", "test:odd"),
        ("test", "test:odd", "test:even"),
        ("all", "all:odd", "all:even"),
    ]:
        with flags_first():
            said = calibration_note(rows, {**ran, "split": split})
        assert f"--candidates 30 --train-split {fit} --test-split {check} --calibrate" in said
    # tune's report names the splits it was run with
    with flags_first():
        said = calibration_note(
            rows, {**ran, "split": "test:even", "train_split": "x:odd", "test_split": "x:even"}
        )
    assert "--train-split x:odd --test-split x:even --calibrate" in said
    # with a training split, tune's defaults do: nothing to name
    (tmp_path / "qrels" / "train.tsv").write_text(judged)
    with flags_first():
        said = calibration_note(rows, {**ran, "split": "test"})
    assert "--candidates 30 --calibrate" in said


def test_high_scores_far_from_their_share_are_said_under_a_small_ece():
    bins = [  # mostly low scores, well calibrated; the top bins overconfident
        {"low": 0.0, "high": 0.1, "count": 800, "predicted": 0.03, "observed": 0.03},
        {"low": 0.8, "high": 0.9, "count": 20, "predicted": 0.85, "observed": 0.6},
        {"low": 0.9, "high": 1.0, "count": 20, "predicted": 0.95, "observed": 0.55},
    ]
    rows = [{"pipeline": "hybrid", "ece": 0.02, "calibration": {"bins": bins}}]
    shown = {m: 0.5 for m in metric_names(10)}
    shown.update(p_vs_first_stage=None, mean_ms=1.0, p95_ms=1.0, llm_calls=0, tokens=0)
    table = format_table([{**rows[0], **shown}], 10)
    with flags_first():
        said = top_bins_note(rows)
    # by hand: 40 pairs, mean score (0.85 + 0.95) / 2 = 0.90, relevant (0.6 + 0.55) / 2
    assert "hybrid: of its 40 pairs scoring >= 0.8 (mean score 0.90), 57 % are relevant" in said
    assert (
        said.endswith("an evaluation's .thresholds).")
        and "Scores >= 0.8 off their share of relevant pairs (ECE averages" in table
    )
    near = [dict(b, observed=b["predicted"] - 0.05) for b in bins]  # within 0.1: nothing
    assert top_bins_note([{**rows[0], "calibration": {"bins": near}}]) is None
    few = [dict(b, count=9) if b["low"] >= 0.8 else b for b in bins]  # 18 pairs: too few
    assert top_bins_note([{**rows[0], "calibration": {"bins": few}}]) is None


def test_a_refit_still_off_is_not_told_to_refit_again():
    """Nor is the default beside it: a refit in the table is off too, so every pipeline off
    gets the same advice (keep the default's probabilities, cut by measured precision)."""
    rows = [{"pipeline": "recal", "ece": 0.06}, {"pipeline": "hybrid", "ece": 0.07}]
    with flags_first():
        said = calibration_note(rows, {"data": "d", "refitted": "recal"})
    assert "rerankit tune --data" not in said
    recal = said.split(
        "Above 0.05 for hybrid, recal: recal is already a refit by `rerankit tune --calibrate`"
    )[1]
    assert "without --keep-learned" in recal
    assert "(`rerankit eval --thresholds`; in Python, an evaluation's .thresholds)" in recal
    alone = calibration_note(rows[:1], {"data": "d", "refitted": "recal"})
    assert "tune(" not in alone.split("already a refit")[1].split("calibrate=True")[1]


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
    args = ["eval", "--data", str(tiny), "--rerankers", "bm25", "--rerankers", str(pipeline)]
    assert main([*args, "--k", "4", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| ECE |" in printed
    rows = {r["pipeline"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    # a pipeline whose probabilities are all near 1: the refit advice names this run's data,
    # its depth, and no first stage (the default)
    off = tmp_path / "off.toml"
    off.write_text(
        'normalization = "calibrated"\n'
        'scorers = [{ type = "coverage", calibration = { slope = 1, intercept = 5 } }]\n'
    )
    assert main(["eval", "--data", str(tiny), "--rerankers", str(off), "--candidates", "4"]) == 0
    printed = capsys.readouterr().out
    # its training split judges 1 query: tune would refuse, so the note says what it needs
    assert f"rerankit tune --data {tiny}" not in printed
    assert "none can be refit here yet: rerankit tune --calibrate fits on at least 4" in printed
    assert "the train split's judged queries are 1; judge more queries" in printed
    (tiny / "qrels" / "train.tsv").write_text(  # 4 of them: the command, which runs
        "query-id\tcorpus-id\tscore\n" + "".join(f"t{i}\td1\t1\n" for i in range(4))
    )
    (tiny / "queries.jsonl").write_text(
        (tiny / "queries.jsonl").read_text()
        + "".join(json.dumps({"_id": f"t{i}", "text": f"solar {i}"}) + "\n" for i in range(4))
    )
    assert main(["eval", "--data", str(tiny), "--rerankers", str(off), "--candidates", "4"]) == 0
    printed = capsys.readouterr().out
    assert f"rerankit tune --data {tiny} --candidates 4 --calibrate" in printed
    assert "SAME" not in printed and "--first-stage" not in printed
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


def test_tune_calibrate_writes_a_calibrated_pipeline_that_loads(tmp_path, synthetic, capsys):
    pytest.importorskip("sentence_transformers", reason="the embedding needs the 'torch' extra")
    pytest.importorskip("wordfreq", reason="background idf needs the 'lexical' extra")
    import tomllib

    from rerankit import load
    from rerankit.scorers.recipe import HYBRID_CALIBRATION

    data = synthetic(tmp_path / "data")
    out = tmp_path / "calibrated.toml"
    args = ["tune", "--data", str(data), "--calibrate", "--k", "10", "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    printed = capsys.readouterr().out
    said = "training queries (the default's: not fitted on them)", "(in-sample: fitted on them)"
    assert any(s in printed for s in said)
    assert "| ECE |" in printed and "learning curve" in printed
    stage = tomllib.loads(out.read_text())["stages"][0]
    assert stage["normalization"] == "calibrated"
    by_name = {s.get("name", s["type"]): s for s in stage["scorers"]}
    assert set(by_name) == set(HYBRID_CALIBRATION["weights"])  # the default's signals
    passage = by_name["passage"]
    assert passage["passage_words"] == HYBRID_CALIBRATION["passage_words"]  # as fitted
    assert passage["passage_lead"] == HYBRID_CALIBRATION["passage_lead"]
    assert "passage_words" not in by_name["embedding"]
    assert by_name["bm25_background"]["avgdl"] == HYBRID_CALIBRATION["avgdl"]
    reranker = load(out)
    assert reranker.score_scale == "probability"
    loaded = next(s for s in reranker.scorers() if s.name == "passage")
    assert loaded.passage_words == HYBRID_CALIBRATION["passage_words"]
    assert loaded.passage_lead == HYBRID_CALIBRATION["passage_lead"]
    alone = reranker.rerank("solar electricity", ["solar panels"])[0].score
    mixed = reranker.rerank("solar electricity", ["wind", "solar panels", "pasta"])
    assert next(r.score for r in mixed if r.index == 1) == pytest.approx(alone)
    if "kept the default's order" in printed:  # at most the probabilities were refitted
        assert {k: s["weight"] for k, s in by_name.items()} == HYBRID_CALIBRATION["weights"]
        assert "cross-validated log loss of the probabilities" in printed
        refitted = "with its probabilities refitted to these judgments" in printed
        kept = "with its own probabilities" in printed
        assert refitted != kept
        same = stage["output_calibration"] == HYBRID_CALIBRATION["output_calibration"]
        assert same == kept
        # --keep-learned: the default's order still, the probabilities refitted anyway
        assert main([*args, "--keep-learned", "--no-progress"]) == 0
        forced = tomllib.loads(out.read_text())["stages"][0]
        weights = {s.get("name", s["type"]): s["weight"] for s in forced["scorers"]}
        assert weights == HYBRID_CALIBRATION["weights"]
        assert forced["output_calibration"] != HYBRID_CALIBRATION["output_calibration"]
        assert "(in-sample: fitted on them)" in capsys.readouterr().out


def _eval(tiny, capsys, *extra):
    code = main(["eval", "--data", str(tiny), "--rerankers", "bm25", "--no-progress", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        (
            "corpus.jsonl",
            '{"doc_id": "d1", "text": "solar"}\n',
            r"corpus\.jsonl:1: the document has no '_id' or 'id' field \(found 'doc_id'",
        ),
        (
            "queries.jsonl",
            '{"_id": "q1", "text": "solar"}\n\n{"_id": "q2"}\n',
            r"queries\.jsonl:3: query 'q2' has no text",
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
        (
            "first.run.trec",
            "q5 Q0 d1 1 3.0 x\nq6 Q0 d9 1 3.0 x\n",
            r"first\.run\.trec: none of its query ids is among the test queries",
        ),
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


def test_tune_adopts_a_fusion_that_beats_the_default_across_folds(
    tmp_path, synthetic, capsys, hybrid_ndcg, default_ndcg_printed
):
    """Only the first stage knows which documents are relevant (the embedding is misled): the
    searched fusion leans on it, beats the default on every fold, and is written."""
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    import tomllib

    from rerankit import load

    data = synthetic(tmp_path / "data", misleading=True)
    out = tmp_path / "pipelines" / "tuned.toml"  # a folder that does not exist yet
    args = ["tune", "--data", str(data), "--k", "10", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "over 30 training queries (5 folds" in printed
    per_fold = printed.split("chosen by the other folds, for each fold: ")[1].splitlines()[0]
    assert [part.split(":")[0] for part in per_fold.split("; ")] == ["1", "2", "3", "4", "5"]
    # the list's top is flattered by the search, which the verdict's "learned" is not: said
    # between the two, so a verdict below the top figure is not read as a contradiction
    flatters = printed.index("the best of many tries on the same queries, so it flatters")
    assert printed.index("the default\n") < flatters < printed.index("cross-validated nDCG@10 over")
    assert "learning curve" in printed and "adopted:" in printed
    # people's judgments (no label report) ask for twice the noise, as a judge's labels do
    assert re.search(r"beats the default by more than 2(\.\d+)? x the noise", printed)
    gain = float(printed.split("gain ")[1].split()[0])
    assert gain > 10  # nDCG@10 x 100: far beyond the noise
    # the default it measured is the one it would write: `hybrid` given first-stage scores
    assert default_ndcg_printed(printed) == pytest.approx(hybrid_ndcg(data), abs=0.006)
    spec = tomllib.loads(out.read_text())
    weights = {s.get("name", s["type"]): s["weight"] for s in spec["stages"][0]["scorers"]}
    assert weights["first_stage"] >= 0.5
    test_table = printed.split("test split")[1]
    tuned = float(test_table.split(f"| {out.stem} |")[1].split("|")[0])  # nDCG@10
    default = float(test_table.split("| hybrid |")[1].split("|")[0])
    assert tuned > default  # and on the test split too
    # with the paired difference from the default on the same test queries
    against = test_table.split("minus hybrid's: the mean")[1]
    diff = float(against.split(f"| {out.stem} |")[1].split("±")[0])
    assert diff == pytest.approx(tuned - default, abs=0.011)
    assert len(load(out).rerank("solar power", ["wind turbines", "solar power plant"])) == 2


def test_tune_writes_the_default_when_learning_cannot_beat_it(tmp_path, synthetic, capsys):
    """The default already ranks every judged document first: nothing learned can beat it
    by more than the noise, so the default pipeline is written, and said so; with
    --keep-learned the tuned one is written anyway."""
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    import tomllib

    from rerankit import load

    data = synthetic(tmp_path / "data", obvious=True)
    out = tmp_path / "tuned.toml"
    args = ["tune", "--data", str(data), "--k", "10", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert re.search(  # twice, widened for the training queries (Student's t)
        r"not adopted: the learned pipeline does not beat the default by more than 2\.\d+ x",
        printed,
    )
    assert tomllib.loads(out.read_text()) == {"name": "tuned", "stages": [{"reranker": "hybrid"}]}
    assert "so this is the default pipeline" in out.read_text()
    assert load(out).rerank("solar power", ["wind", "solar power plant"])[0].index == 1
    assert main([*args, "--keep-learned"]) == 0
    assert "(--keep-learned: written anyway)" in capsys.readouterr().out
    assert "scorers" in tomllib.loads(out.read_text())["stages"][0]


def test_tune_refuses_train_and_test_queries_that_overlap(tmp_path, synthetic, capsys):
    data = synthetic(tmp_path / "data")
    (data / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq35\td0-1\t1\n")
    code = main(["tune", "--data", str(data), "--train-split", "dev", "--test-split", "test"])
    assert code == 1
    assert (
        "--train-split dev and --test-split test share 1 queries "
        "(e.g. 'q35'): never tune on queries you report" in capsys.readouterr().err
    )
    # the command's errors name the flags given, beside the keywords of the library it calls
    assert main(["tune", "--data", str(data), "--folds", "2"]) == 1
    assert "--folds 2: must be at least 3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune", "--data", str(data), "--folds", "0"])


def test_progress_is_a_line_now_and_then_off_a_terminal_and_none_with_no_progress(
    tiny, tmp_path, capsys, monkeypatch
):
    from rerankit.cli import console

    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.0)
    args = ["eval", "--data", str(tiny), "--rerankers", "bm25", "--k", "3"]
    # stderr here is not a terminal (a log file, say): plain lines, never silent for minutes
    assert main([*args, "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "rerankit: bm25: 1/2 queries" in err and "rerankit: bm25: 2/2 queries" in err
    assert "query/s" not in err and "\r" not in err  # no tqdm bar redrawn in a log
    # asked for no progress: none, the files written still said
    assert main([*args, "--out", str(tmp_path / "p"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "queries (" not in err and "query/s" not in err and "wrote " in err


def test_simulate_clicks_with_no_progress_prints_no_progress(synthetic, tmp_path, capsys):
    data = synthetic(tmp_path / "beir")
    argv = ["simulate-clicks", "--data", str(data), "--max-queries", "2", "--sessions", "2"]
    assert main([*argv, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert "rerankit: rerank: 2/2 queries" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "b.jsonl"), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_bar_and_no_progress_gets_nothing(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    from rerankit.cli import console

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(console.sys, "stderr", terminal)
    assert list(console.progress_bar("x", True)(range(3))) == [0, 1, 2]
    assert "query/s" in terminal.getvalue() and "rerankit: x:" not in terminal.getvalue()
    quiet = Terminal()
    monkeypatch.setattr(console.sys, "stderr", quiet)
    assert list(console.progress_bar("x", False)(range(3))) == [0, 1, 2]
    assert quiet.getvalue() == ""


def test_the_shipped_example_shows_rerankers_that_differ(tmp_path, capsys):
    """examples/scifact-mini: a judged set where the evaluation is worth reading, with a
    train split to learn from and a test split to report on, no query in both."""
    example = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini"
    splits = {
        split: {line.split("\t")[0] for line in lines.splitlines()[1:]}
        for split in ("train", "test")
        for lines in [(example / "qrels" / f"{split}.tsv").read_text()]
    }
    assert len(splits["train"]) == len(splits["test"]) == 30
    assert not splits["train"] & splits["test"]
    args = ["eval", "--data", str(example), "--rerankers", "bm25,jaccard", "--candidates", "20"]
    assert main([*args, "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    result = json.loads((tmp_path / "o" / "results.json").read_text())
    assert result["queries"] == 30 and result["split"] == "test"
    scores = {r["pipeline"]: round(r["ndcg@10"], 4) for r in result["results"]}
    assert len(set(scores.values())) == 3  # first stage, bm25 and jaccard differ
    p_values = [r["p_vs_first_stage"] for r in result["results"] if r["pipeline"] != "first stage"]
    assert all(p is not None and 0 < p <= 1 for p in p_values)  # a real paired test


def _titled(folder):
    """A collection whose relevant document matches the query in its title only."""
    corpus = [
        ("a", "wind power", "turbines along the coast"),
        ("b", "farming", "power to the farmers"),
        ("c", "", "untitled notes on wind"),
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in corpus)
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "wind power"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\n")
    return folder


def test_titles_can_be_joined_to_the_text_or_left_out(tmp_path):
    data = load_beir(_titled(tmp_path))
    before = {d: dict(v) for d, v in data.corpus.items()}
    assert data.with_titles("field") is data
    joined = {how: data.with_titles(how) for how in ("newline", "space", "period", "drop")}
    assert joined["newline"].document("a") == {
        "id": "a",
        "text": "wind power\nturbines along the coast",
    }
    assert joined["space"].document("a")["text"] == "wind power turbines along the coast"
    assert joined["period"].document("a")["text"] == "wind power. turbines along the coast"
    assert joined["drop"].document("a") == {"id": "a", "text": "turbines along the coast"}
    for form in joined.values():  # no title: the text as it was
        assert form.document("c") == {"id": "c", "text": "untitled notes on wind"}
        assert form.queries == data.queries and form.qrels == data.qrels
    assert data.corpus == before  # the dataset read is left as it was
    with pytest.raises(ValueError, match="titles 'comma': expected one of field, newline"):
        data.with_titles("comma")


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_eval_titles_keeps_the_candidates_and_changes_what_rerankers_read(tmp_path, capsys):
    folder = _titled(tmp_path / "set")
    scores = {}
    for how in ("field", "space", "drop"):
        out = tmp_path / how
        args = ["eval", "--data", str(folder), "--rerankers", "bm25", "--titles", how]
        assert main([*args, "--out", str(out), "--no-progress"]) == 0
        printed = capsys.readouterr().out
        assert ("titles: left out" in printed) == (how == "drop")
        result = json.loads((out / "results.json").read_text())
        assert result["titles"] == how
        rows = {r["pipeline"]: r["ndcg@10"] for r in result["results"]}
        scores[how] = rows
        # one query: no variance for a t-test, so no p-value (not NaN, and no warning)
        assert all(r["p_vs_first_stage"] is None for r in result["results"])
    # the first stage (BM25 over titles and texts) is the same in every run
    assert scores["field"]["first stage"] == scores["drop"]["first stage"] == 1.0
    # the relevant document matches the query only in its title: reranked first when the
    # title is read, as a field or joined, and not when it is left out
    assert scores["field"]["bm25"] == scores["space"]["bm25"] == 1.0
    assert scores["drop"]["bm25"] < 1.0
    # several layouts in one run: each pipeline once per layout, comparable by --baseline
    args = ["eval", "--data", str(folder), "--rerankers", "bm25,text", "--no-progress"]
    out = tmp_path / "all"
    extra = ["--titles", "space,drop", "--baseline", "bm25 (space)", "--out", str(out)]
    assert main([*args, *extra]) == 0
    printed = capsys.readouterr().out
    assert "each reranker once per title layout (space, drop)" in printed
    result = json.loads((out / "results.json").read_text())
    assert result["titles"] == ["space", "drop"]
    rows = {r["pipeline"]: r["ndcg@10"] for r in result["results"]}
    assert list(rows) == [
        "first stage", "bm25 (space)", "text (space)", "bm25 (drop)", "text (drop)"
    ]  # fmt: skip
    assert rows["bm25 (space)"] == scores["space"]["bm25"]
    assert rows["bm25 (drop)"] == scores["drop"]["bm25"]
    drop = 100 * (scores["drop"]["bm25"] - scores["space"]["bm25"])
    assert f"| bm25 (drop) | {drop:+.2f} |" in printed
    assert main([*args, "--titles", "space,comma"]) != 0
    assert "--titles space,comma: expected one or more of field" in (capsys.readouterr().err)


def test_pipelines_compared_with_a_baseline_by_hand():
    from rerankit.eval.compare import against, check_baseline, format_summary_against

    rows = [
        {"pipeline": "first stage", "per_query_ndcg@10": {"a": 0.2, "b": 0.4, "c": 0.9}},
        {"pipeline": "mine", "per_query_ndcg@10": {"a": 0.5, "b": 0.4, "c": 0.6}},
    ]
    rows[1]["p_vs"] = {"first stage": 0.8}
    (entry,) = against(rows, "first stage")
    # differences +0.3, 0, -0.3: mean 0, standard deviation 0.3, over 3 queries
    assert entry["diff"] == pytest.approx(0.0)
    assert entry["se"] == pytest.approx(0.3 / math.sqrt(3))
    assert entry["p"] == 0.8 and entry["queries"] == 3
    assert entry["verdict"] == "within noise"  # |0| <= 2 x se
    (back,) = against(rows, "mine")
    assert back["pipeline"] == "first stage" and back["p"] is None
    collections = [{"collection": "x", "rows": rows}, {"collection": "y", "rows": rows}]
    table = format_summary_against(collections, "first stage")
    # the mean of two collections: its variance is the sum of theirs over 2 squared
    mean_se = math.sqrt(2 * (0.3 / math.sqrt(3)) ** 2) / 2
    assert "| x | +0.00 ± 17.32 |" in table
    assert f"| mean | +0.00 ± {100 * mean_se:.2f} (within noise) |" in table
    for spelling in ("first-stage", "first stage", "first_stage"):  # one shown, all taken
        assert check_baseline(spelling, ["first stage", "bm25"]) == "first stage"
    assert check_baseline("cross_encoder", ["first stage", "cross-encoder"]) == "cross-encoder"
    with pytest.raises(
        ValueError, match=r"'hybrid' \(--baseline\): is not among .* \('first-stage'"
    ):
        check_baseline("hybrid", ["first stage", "bm25"])


def test_eval_baseline_prints_each_pipelines_difference(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["eval", "--data", str(tiny), "--rerankers", "bm25,text", "--baseline", "bm25"]
    assert main([*args, "--k", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "minus bm25's: the mean" in printed
    result = json.loads((out / "results.json").read_text())
    assert result["baseline"] == "bm25"
    rows = {r["pipeline"]: r for r in result["results"]}
    per_query = {n: r["per_query_ndcg@10"] for n, r in rows.items()}
    for name in ("first stage", "text"):
        diff = sum(per_query[name][q] - per_query["bm25"][q] for q in per_query["bm25"]) / 2
        assert f"| {name} | {round(100 * diff, 2) + 0.0:+.2f}" in printed
    assert set(rows["text"]["p_vs"]) == {"first stage", "bm25"}
    assert main([*args[:-1], "hybrid", "--no-progress"]) != 0
    said = "--baseline hybrid: is not among the evaluated pipelines"
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("spelling", ["first-stage", "first stage"])
def test_the_first_stage_as_baseline_in_either_spelling(tiny, capsys, spelling):
    argv = ["eval", "--data", str(tiny), "--rerankers", "bm25", "--no-progress"]
    assert main([*argv, "--baseline", spelling]) == 0
    assert "minus first stage's: the mean" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "or first-stage)" in shown and "first stage'" not in shown


def test_latency_is_reranking_and_the_model_load_is_reported_apart(tiny):
    """A model that takes LOAD seconds to load: eval loads it before the first query (on the
    model thread, where it would load anyway), so no query's latency holds the load, and
    the load's time is recorded apart."""
    import threading
    import time
    import uuid

    import numpy as np

    from rerankit.eval.runner import run_pipeline
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers.local import LocalModelScorer

    load_seconds, loads = 1.0, []

    class SlowToLoad(LocalModelScorer):
        what = "test model"

        def _load(self):
            loads.append(threading.current_thread().name)
            time.sleep(load_seconds)
            return object()

        def score_texts(self, query, texts):
            assert self.model is not None
            return np.array([float(len(t)) for t in texts])

    scorer = SlowToLoad(f"slow-{uuid.uuid4().hex}", name="slow")  # an id no other test loads
    data = load_beir(tiny)
    cands = first_stage(data, "bm25", 3)
    run = run_pipeline("slow", ScorerReranker(scorer), data, cands)
    assert len(loads) == 1 and loads[0].startswith("rerankit-model")
    assert run.load_seconds >= load_seconds
    assert len(run.latencies) == 2 and max(run.latencies) < load_seconds
    assert run_pipeline("slow", ScorerReranker(scorer), data, cands).load_seconds < 0.1
    rows = {r["pipeline"]: r for r in evaluate_runs(data, [run], 3)}
    assert rows["slow"]["load_s"] == run.load_seconds


def test_the_evaluation_page_shows_the_note_eval_prints_about_refitting():
    """evaluation.md's shown output carries the calibration note's words as eval prints them
    (the page said "--candidates" after the note had become "number of candidates")."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text()
    with flags_first():  # as the command prints it
        ran = {"data": "examples/scifact-mini", "candidates": 20}  # the page's command
        said = calibration_note([{"pipeline": "hybrid", "ece": 0.2}], ran)
    start = said.index("refit before")
    assert said[start:] in page
