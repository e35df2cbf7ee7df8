"""``thresholds_text``: what ``rerankit eval --thresholds`` prints under a table, from
Python: the table of each pipeline's cuts, or why there is none, and the queries that are
empty at every cut."""

from __future__ import annotations

from rerankit.eval.thresholds import (
    PRINTED_THRESHOLDS,
    format_thresholds,
    threshold_rows,
    thresholds_text,
)

SCORES = {"q1": {"a": 0.9, "b": 0.2}, "q2": {"d": 0.6}}
QRELS = {"q1": {"a": 1}, "q2": {"e": 1}, "q3": {"f": 1}}


def _table():
    queries = ["q1", "q2", "q3"]  # q3: no candidate from the first stage
    return {"mine": threshold_rows(SCORES, QRELS, PRINTED_THRESHOLDS, queries=queries)}


def test_the_table_of_cuts_is_format_thresholds_without_empty_queries():
    table = _table()
    said = thresholds_text(table)
    assert said == format_thresholds(table)
    assert said.startswith("mine: keeping the candidates scoring >= t")
    assert "0.50" in said and "0.95" not in said  # the printed cuts only


def test_the_queries_without_candidates_are_said_below_it():
    table = _table()
    one = thresholds_text(table, without_candidates=1)
    assert one == format_thresholds(table) + (
        "\n(queries left empty counts, at every t, the 1 query the first stage gave no candidate)"
    )
    assert thresholds_text(table, 3).endswith("the 3 queries the first stage gave no candidate)")


def test_no_pipeline_on_a_scale_a_cut_means_something_on_says_so():
    assert thresholds_text({}, without_candidates=2) == (
        "thresholds: no pipeline here scores on a probability or unit scale (a cut on "
        "relative scores means nothing)"
    )
