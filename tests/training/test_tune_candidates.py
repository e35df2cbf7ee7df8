"""``tune --first-stage FILE`` needs candidates for the queries it learns from and the ones
it reports on: a file made for one split only is refused before any work, with a message
that says which split's queries were needed, which split the file's queries are judged in,
and the way out; ``eval`` hears which split the file was made for."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main
from rerankit.eval.data import load_beir
from rerankit.eval.first_stage import UncoveredQueries, first_stage


def _candidates(path, queries):
    """A retriever's output for ``queries`` (ids of the synthetic collection: topic i % 5)."""
    rows = [
        {"query_id": f"q{i}", "candidates": [{"id": f"d{i % 5}-{j}"} for j in range(8)]}
        for i in queries
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _tune(capsys, data, candidates, out):
    code = main(
        [
            *("tune", "--data", str(data), "--first-stage", str(candidates)),
            *("--candidates", "8", "--out", str(out), "--no-progress"),
        ]
    )
    return code, capsys.readouterr().err


def test_candidates_for_the_test_queries_only_say_tune_needs_the_training_queries(
    tmp_path, synthetic, capsys
):
    data = synthetic(tmp_path / "data")  # q0-q29 judged in train, q30-q39 in test
    candidates = _candidates(tmp_path / "candidates.jsonl", range(30, 40))
    code, err = _tune(capsys, data, candidates, tmp_path / "tuned.toml")
    assert code == 1
    assert (
        f"{candidates}: none of its 10 query ids is among the 30 queries of the train split "
        f"of {data}; "
        "of its query ids, 10 are judged in the test split. tune learns from the train split "
        "(--train-split train), so the candidates must cover its queries" in err
    )
    assert "--train-split test:odd, --test-split test:even" in err
    assert not (tmp_path / "tuned.toml").exists()


def test_candidates_for_the_training_queries_only_are_refused_before_the_work(
    tmp_path, synthetic, capsys
):
    """The test split's candidates are read before fitting, so a file without them fails
    at once, not after the cross-validation."""
    data = synthetic(tmp_path / "data")
    candidates = _candidates(tmp_path / "candidates.jsonl", range(30))
    code, err = _tune(capsys, data, candidates, tmp_path / "tuned.toml")
    assert code == 1
    assert f"none of its 30 query ids is among the 10 queries of the test split of {data}" in err
    assert (
        "30 are judged in the train split. tune reports on the test split "
        "(--test-split test)" in err
    )
    assert "--train-split train:odd, --test-split train:even" in err
    assert "cross-validated" not in capsys.readouterr().out
    assert not (tmp_path / "tuned.toml").exists()


def test_eval_hears_which_split_the_candidates_were_made_for(tmp_path, synthetic):
    data = synthetic(tmp_path / "data")
    candidates = _candidates(tmp_path / "candidates.jsonl", [0, 1, 35])
    (data / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1-0\t1\n")
    with pytest.raises(UncoveredQueries) as caught:
        first_stage(load_beir(data, "test:odd"), str(candidates))  # q31, q33, ...: none
    assert caught.value.judged_in == {"dev": 1, "test": 1, "train": 2}
    assert str(caught.value) == (
        f"{candidates}: none of its 3 query ids is among the 5 queries of the test:odd split "
        f"of {data}; "
        "of its query ids, 1 is judged in the dev split, 1 is judged in the test split, "
        "2 are judged in the train split"
    )


def test_too_few_training_queries_are_refused_before_any_scoring(tmp_path, synthetic):
    """Three judged training queries: cross-validation takes 4, and tune said so only after
    scoring every candidate (minutes on a large folder); now it refuses first, with the way
    out."""
    from rerankit.errors import InputError
    from rerankit.training import Reporter, tune

    data = synthetic(tmp_path / "data")  # q0-q29 judged in train
    notes: list[str] = []
    with pytest.raises(InputError) as e:
        tune(
            str(data),
            max_queries=3,
            candidates=8,
            out=tmp_path / "t.toml",
            reporter=Reporter(note=notes.append),
        )
    said = str(e.value)
    assert f"{data}: the train split has 3 judged queries with candidates" in said
    assert "cross-validation needs at least 4 training queries" in said
    assert "judge more queries" in said and "rerankit.evaluate()" in said
    assert not any("scoring" in note for note in notes), notes
    assert not (tmp_path / "t.toml").exists()
    # four are enough to start: the refusal is tune's, not a fixed count of the folder's
    tune(
        str(data),
        max_queries=4,
        candidates=8,
        out=tmp_path / "t.toml",
        reporter=Reporter(note=notes.append),
    )
    assert (tmp_path / "t.toml").is_file()
