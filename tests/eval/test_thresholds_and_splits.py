"""What eval adds for choosing a cut-off and for measuring on every judged query: the
precision and recall of each score threshold (``thresholds.csv``, ``--thresholds``,
``Evaluation.thresholds``), several qrels files evaluated as one split (``--split
train,test``, ``--split all``), and a note naming which input got a ``-2`` label."""

from __future__ import annotations

import csv

import pytest
from eval_tiny import tiny_dataset, write_tiny

from rerankit.cli import main
from rerankit.eval import evaluate, load_beir
from rerankit.eval.thresholds import threshold_rows
from rerankit.scorers import BM25Scorer

COVERAGE = '[scorer]\ntype = "coverage"\n'  # unit scores, no model


def test_precision_and_recall_at_each_cut_match_a_hand_count():
    scores = {"q1": {"a": 0.9, "b": 0.4, "c": 0.2}, "q2": {"d": 0.6, "e": 0.1}}
    qrels = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"e": 1}}  # d unjudged: not relevant
    rows = threshold_rows(scores, qrels, (0.1, 0.5, 0.6, 0.95))
    # >= t, as sklearn's precision_recall_curve: 0.6 keeps d (0.6) and a
    assert [(r["kept"], r["relevant_kept"]) for r in rows] == [(5, 3), (2, 1), (2, 1), (0, 0)]
    assert [r["precision"] for r in rows] == [0.6, 0.5, 0.5, None]
    assert [r["recall"] for r in rows] == [1.0, pytest.approx(1 / 3), pytest.approx(1 / 3), 0]
    assert {r["relevant"] for r in rows} == {3}


def test_queries_left_empty_at_each_cut_match_a_hand_count():
    scores = {"q1": {"a": 0.9, "b": 0.4, "c": 0.2}, "q2": {"d": 0.6, "e": 0.1}}
    cuts = (0.1, 0.5, 0.6, 0.95)
    # q3 got no candidates: empty at every cut; q2's best is 0.6, kept at >= 0.6
    rows = threshold_rows(scores, {}, cuts, queries=["q1", "q2", "q3"])
    assert [r["queries_left_empty"] for r in rows] == [1, 1, 1, 3]
    assert {r["queries"] for r in rows} == {3}
    alone = threshold_rows(scores, {}, cuts)  # by default the queries scored
    assert [r["queries_left_empty"] for r in alone] == [0, 0, 0, 2]


def test_eval_names_the_queries_without_candidates_and_counts_short_lists(tmp_path, capsys):
    folder = write_tiny(tmp_path / "tiny")
    with (folder / "queries.jsonl").open("a") as f:
        f.write('{"_id": "q4", "text": "quantum chromodynamics"}\n')
    with (folder / "qrels" / "test.tsv").open("a") as f:
        f.write("\nq4\td4\t1\n")
    pipeline = tmp_path / "cover.toml"
    pipeline.write_text(COVERAGE)
    argv = ["eval", "--data", str(folder), "-r", str(pipeline), "--candidates", "3"]
    assert main([*argv, "--thresholds", "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no candidates for q4 (each scores 0 in every metric)" in out
    # with --thresholds, said where it counts: under the thresholds' table
    assert "(queries left empty counts, at every t, the 1 query the first stage gave" in out
    runs = (tmp_path / "o" / "runs" / "first_stage.trec").read_text().splitlines()
    lists = {q: sum(1 for r in runs if r.split()[0] == q) for q in ("q1", "q2", "q3")}
    fewer = sum(1 for n in lists.values() if 0 < n < 3)
    assert fewer  # the tiny corpus gives some query fewer than 3
    assert f"{fewer} of 4 queries got fewer than 3 candidates" in out
    assert "queries left empty" in out
    with open(tmp_path / "o" / "thresholds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(int(r["queries_left_empty"]) >= 1 for r in rows)  # q4 at every cut
    assert rows[-1]["threshold"] == "0.95"


def test_eval_reports_thresholds_for_unit_scores_only(tmp_path, capsys):
    pipeline = tmp_path / "cover.toml"
    pipeline.write_text(COVERAGE)
    result = evaluate(tiny_dataset(), ["bm25", str(pipeline)], candidates=4)
    assert list(result.thresholds) == ["cover"]  # bm25's relative scores have no cut
    run = next(r for r in result.collections[0].runs if r.name == "cover")
    pairs = [
        (s, tiny_dataset().qrels[q].get(d, 0) >= 1)
        for q, x in run.scores.items()
        for d, s in x.items()
    ]
    half = next(r for r in result.thresholds["cover"] if r["threshold"] == 0.5)
    assert half["kept"] == sum(1 for s, _ in pairs if s >= 0.5)
    assert half["relevant_kept"] == sum(1 for s, rel in pairs if s >= 0.5 and rel)
    written = result.write(tmp_path / "out")
    assert tmp_path / "out" / "thresholds.csv" in written
    with open(tmp_path / "out" / "thresholds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 19 and {r["pipeline"] for r in rows} == {"cover"}
    assert int(rows[9]["kept"]) == half["kept"] and rows[9]["threshold"] == "0.5"
    assert result.to_dict()["collections"][0]["thresholds"] == result.thresholds

    folder = write_tiny(tmp_path / "tiny")
    argv = ["eval", "--data", str(folder), "-r", str(pipeline), "--candidates", "4"]
    assert main([*argv, "--thresholds", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "cover: keeping the candidates scoring >= t" in out
    assert f" 0.50 {half['kept']:>7}" in out


def _two_splits(tmp_path):
    """tiny (q1, q2, q3 judged in test) with a train split judging q1 again (another
    document, and d3 graded 2 where test grades it 1) and no other query."""
    folder = write_tiny(tmp_path / "tiny")
    (folder / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td2\t0\nq1\td3\t2\n"
    )
    return folder


@pytest.mark.parametrize("split", ["train,test", "all", "test,train"])
def test_several_splits_are_evaluated_as_one_each_query_once(tmp_path, split):
    data = load_beir(_two_splits(tmp_path), split)
    assert sorted(data.queries) == ["q1", "q2", "q3"]
    assert data.qrels["q1"]["d2"] == 0 and data.qrels["q1"]["d1"] == 2  # joined
    # a pair graded twice takes the later file's grade: files in the order named; all: by name
    assert data.qrels["q1"]["d3"] == {"train,test": 1, "all": 2, "test,train": 2}[split]
    assert any("1 query is judged in more than one" in n for n in data.notes)
    assert any("grades document 'd3' differently" in n for n in data.notes)


def test_eval_takes_all_and_a_list_of_splits(tmp_path, capsys):
    folder = _two_splits(tmp_path)
    assert (
        main(["eval", "--data", str(folder), "-r", "bm25", "--split", "all", "--no-progress"]) == 0
    )
    assert "tiny, all split, 3 queries" in capsys.readouterr().out
    assert evaluate(str(folder), "bm25", split="train,test").collections[0].meta["queries"] == 3
    assert evaluate(f"{folder}@train", "bm25").collections[0].meta["queries"] == 1


def test_a_renamed_pipeline_is_said_with_its_input(tmp_path, capsys):
    said: list[str] = []
    evaluate(tiny_dataset(), ["bm25", BM25Scorer()], note=said.append)
    assert said == [
        "two pipelines are named 'bm25': bm25 as bm25, a BM25Scorer as bm25-2 (in the order given)"
    ]
    pipeline = tmp_path / "ce.toml"
    pipeline.write_text('name = "bm25"\n' + COVERAGE)
    folder = write_tiny(tmp_path / "tiny")
    argv = ["eval", "--data", str(folder), "--rerankers", f"bm25,{pipeline}", "--no-progress"]
    assert main(argv) == 0
    assert (
        f"two pipelines are named 'bm25': bm25 as bm25, {pipeline} as bm25-2"
        in capsys.readouterr().err
    )


def test_two_files_of_one_name_are_said_with_how_to_name_them(tmp_path, capsys):
    """The reader's two copies of examples/cross-encoder/pipeline.toml (another ``model``
    in the second): the note names both files and the key that tells them apart."""
    files = []
    for folder in ("mine", "theirs"):
        (tmp_path / folder).mkdir()
        files.append(tmp_path / folder / "pipeline.toml")
        files[-1].write_text('name = "ms-marco-minilm"\n' + COVERAGE)
    data = write_tiny(tmp_path / "tiny")
    argv = ["eval", "--data", str(data), "--rerankers", ",".join(map(str, files))]
    assert main([*argv, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "| ms-marco-minilm-2 |" in captured.out
    assert captured.err.count("pipelines are named") == 1
    assert (
        f"rerankit: two pipelines are named 'ms-marco-minilm': {files[0]} as ms-marco-minilm, "
        f"{files[1]} as ms-marco-minilm-2 (in the order given); give each file its own "
        'name = "..." (a top-level key) to tell them apart\n'
    ) in captured.err


@pytest.mark.parametrize(
    ("header", "fitted"),
    [
        ("Calibrated by `rerankit tune --calibrate` on tiny test:odd (2 queries): w", True),
        ("Tuned by `rerankit tune` on tiny test:odd (2 queries): rrf", False),
        ("Trained by `rerankit tune --method ltr` on tiny test:odd (2 queries, 3 features)", False),
        (
            "Written by `rerankit tune --calibrate` on tiny test:odd (2 queries): refitted "
            "weights did not beat the default's order ..., so this is the default hybrid's "
            "order with its probabilities refitted to these judgments.",
            True,
        ),
    ],
)
def test_eval_says_when_a_tuned_pipeline_is_measured_on_the_queries_it_was_fitted_on(
    tmp_path, capsys, header, fitted
):
    pipeline = tmp_path / "recal.toml"
    pipeline.write_text(f"# {header}\n{COVERAGE}")
    folder = write_tiny(tmp_path / "tiny")
    argv = ["eval", "--data", str(folder), "-r", str(pipeline), "--candidates", "3"]
    for split, said in [("test:odd", True), ("test", True), ("all", True), ("test:even", False)]:
        assert main([*argv, "--split", split, "--no-progress"]) == 0
        out = capsys.readouterr().out
        note = f"in-sample: recal (fitted on tiny test:odd) learned from queries of this {split}"
        assert (note in out) == said, split
        assert ("not fitted on (here: test:even)" in out) == said
    result = evaluate(str(folder), [str(pipeline)], candidates=3, split="test:odd")
    meta = result.collections[0].meta["fitted_on"]
    assert meta == {"recal": {"data": "tiny", "split": "test:odd", "calibrated": fitted}}


def test_a_default_written_by_tune_or_another_collection_is_not_in_sample(tmp_path, capsys):
    folder = write_tiny(tmp_path / "tiny")
    default = tmp_path / "default.toml"
    default.write_text(f"# Written by `rerankit tune` on tiny test: the fusion lost.\n{COVERAGE}")
    other = tmp_path / "other.toml"
    other.write_text(f"# Tuned by `rerankit tune` on nfcorpus test (9 queries): x\n{COVERAGE}")
    argv = ["eval", "--data", str(folder), "-r", f"{default},{other}", "--candidates", "3"]
    assert main([*argv, "--no-progress"]) == 0
    assert "in-sample" not in capsys.readouterr().out
