"""Choosing the metrics and their cut-offs: ``rerankit eval --metrics`` and ``evaluate(...,
metrics=...)`` add columns (nDCG@K, MRR@K, recall@K, precision@K, MAP@K) to the table and
rows, each computed as trec_eval computes it; an unknown name, a missing or non-positive
cut-off are errors naming the mistake and what is taken."""

from __future__ import annotations

import json

import pytest
from eval_tiny import tiny_dataset, write_tiny

from rerankit.cli import build_parser, main
from rerankit.errors import InputError
from rerankit.eval import evaluate
from rerankit.eval.metrics import (
    average_precision,
    metric_value,
    ndcg_at_k,
    parse_metrics,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

JUDGED = {"a": 2, "b": 0, "c": 1, "d": 1}  # three relevant; "d" never ranked below


def test_precision_and_average_precision_by_hand():
    ranking = ["b", "a", "x", "c"]
    assert precision_at_k(ranking, JUDGED, 2) == 0.5  # a
    assert precision_at_k(ranking, JUDGED, 10) == 0.2  # a, c over 10 places, as trec_eval's P_10
    # precision at each relevant document ranked (a at 2: 1/2, c at 4: 2/4), over all 3 relevant
    assert average_precision(ranking, JUDGED, 10) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert average_precision(ranking, JUDGED, 3) == pytest.approx((1 / 2) / 3)  # c cut off
    assert average_precision(ranking, {"b": 0}, 10) == 0.0  # no relevant document
    assert precision_at_k([], JUDGED, 5) == 0.0


@pytest.mark.parametrize(
    "metric", [ndcg_at_k, reciprocal_rank, recall_at_k, precision_at_k, average_precision]
)
@pytest.mark.parametrize("k", [0, -3])
def test_every_metric_refuses_a_cut_off_below_one(metric, k):
    # before: recall_at_k and reciprocal_rank returned 0.0 for k = 0, as if nothing were found
    with pytest.raises(ValueError, match=f"k must be >= 1, got {k}"):
        metric(["a", "c"], JUDGED, k)


def test_metric_names_are_read_in_any_case_and_said_one_way():
    assert parse_metrics("nDCG@5, MAP@100,Recall@20,mrr@3,precision@5") == [
        "ndcg@5",
        "map@100",
        "recall@20",
        "mrr@3",
        "precision@5",
    ]
    assert parse_metrics(["ndcg@5", "NDCG@5"]) == ["ndcg@5"]  # one column for one metric
    assert metric_value("precision@2", ["b", "a"], JUDGED) == 0.5
    assert metric_value("ndcg@10", ["a", "c"], JUDGED) == ndcg_at_k(["a", "c"], JUDGED, 10)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("bleu@10", "unknown metric 'bleu@10'"),
        ("ndcg", "'ndcg' needs a cut-off"),
        ("ndcg@0", "'ndcg@0': the cut-off must be a positive integer"),
        ("recall@-1", "'recall@-1': the cut-off must be a positive integer"),
        ("map@ten", "'map@ten': the cut-off must be a positive integer"),
        ("", "no metric given"),
        (" , ", "no metric given"),
    ],
)
def test_a_metric_it_cannot_compute_is_an_error_naming_it_and_what_it_takes(given, said):
    with pytest.raises(InputError) as error:
        parse_metrics(given)
    assert said in str(error.value)
    if "cut-off" not in said and "no metric" not in said:
        assert "ndcg, mrr, recall, precision, map" in str(error.value)
        assert "ndcg@5" in str(error.value)  # an example of the form


def test_evaluate_reports_the_metrics_asked_beside_the_usual_ones():
    # the first stage's row measures the order given: q1 d2 d1 d3; q2 d2; q3 d1 d4
    given = {"q1": ["d2", "d1", "d3"], "q2": ["d2"], "q3": ["d1", "d4"]}
    result = evaluate(
        tiny_dataset(), "bm25", first_stage=given, metrics="ndcg@1,Precision@2,map@10"
    )
    first = result.rows[0]
    assert first["pipeline"] == "first stage"
    assert first["ndcg@1"] == pytest.approx((0 + 1 + 0) / 3)
    assert first["precision@2"] == pytest.approx((1 / 2 + 1 / 2 + 1 / 2) / 3)
    # q1: d1 (grade 2) at 2, d3 at 3: (1/2 + 2/3) / 2; q2: 1; q3: d4 at 2: 1/2
    assert first["map@10"] == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1 + 1 / 2) / 3)
    for row in result.rows:  # the usual ones stay, and every pipeline has the new ones
        assert {"ndcg@10", "mrr@10", "recall@10", "ndcg@1", "precision@2", "map@10"} <= set(row)
    header = str(result).split("\n\n")[1].splitlines()[0]
    # the usual columns first (recall@3: at the depth of the candidates), then those asked
    assert header.startswith(
        "| pipeline | ndcg@10 | mrr@10 | recall@10 | recall@3 | ndcg@1 | precision@2 | map@10 |"
    )
    assert result.collections[0].meta["metrics"] == ["ndcg@1", "precision@2", "map@10"]


def test_evaluate_refuses_an_unknown_metric_before_any_work():
    with pytest.raises(InputError, match="unknown metric 'ndgc@10'"):
        evaluate(tiny_dataset(), "no-such-reranker", metrics="ndgc@10")


def test_the_command_takes_metrics_and_writes_them(tmp_path, capsys):
    data = write_tiny(tmp_path / "tiny")
    out = tmp_path / "results"
    flags = ["--metrics", "ndcg@3,precision@1", "--out", str(out), "--no-progress"]
    code = main(["eval", "--data", str(data), "--rerankers", "bm25", *flags])
    printed = capsys.readouterr().out
    assert code == 0
    assert "| ndcg@3 | precision@1 |" in printed
    saved = json.loads((out / "results.json").read_text())
    assert saved["metrics"] == ["ndcg@3", "precision@1"]
    assert {"ndcg@3", "precision@1"} <= set(saved["results"][1])


@pytest.mark.parametrize(
    ("value", "said"),
    [("ndcg@0", "the cut-off must be a positive integer"), ("f1@5", "unknown metric 'f1@5'")],
)
def test_a_bad_metric_on_the_command_line_is_a_usage_error(capsys, value, said):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["eval", "--data", "d", "--metrics", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --metrics" in err and said in err


def test_a_reranker_named_first_stage_says_how_to_score_a_run_alone(tmp_path, capsys):
    # before: "'first-stage' names the first stage's run; label it otherwise"
    with pytest.raises(InputError) as error:
        evaluate(tiny_dataset(), "first-stage")
    said = str(error.value)
    assert "its 'first stage' row" in said and "first_stage=" in said
    data = str(write_tiny(tmp_path / "tiny"))
    code = main(["eval", "--data", data, "--rerankers", "first-stage", "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0 and "--first-stage RUN" in err and "first_stage=" not in err
