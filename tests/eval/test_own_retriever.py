"""Evaluating your own retriever's output: a TREC run file or JSON Lines candidates (the
rows ``rerankit batch`` reads) given as ``--first-stage`` rank the same candidates the same
way, and a mistake in the candidates names the line."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main
from rerankit.errors import InputError
from rerankit.eval.data import load_beir
from rerankit.eval.first_stage import first_stage, load_candidates


@pytest.fixture
def collection(tmp_path):
    docs = {
        "d1": "solar panels turn sunlight into electricity",
        "d2": "wind turbines turn wind into electricity",
        "d3": "the history of solar power and solar cells",
        "d4": "how to cook pasta",
    }
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in docs.items())
    )
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "solar electricity"}\n{"_id": "q2", "text": "wind power"}\n'
    )
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\n"
    )
    return tmp_path


RUN = "q1 Q0 d3 1 9.5 mine\nq1 Q0 d4 2 7.0 mine\nq1 Q0 d1 3 6.5 mine\nq2 Q0 d2 1 3.0 mine\n"
ROWS = [  # the same ranking, as your retriever may write it (texts and queries are ignored)
    {
        "query_id": "q1",
        "query": "solar electricity",
        "candidates": [
            {"id": "d1", "text": "...", "first_stage_score": 6.5},
            {"id": "d3", "first_stage_score": 9.5},
            {"id": "d4", "first_stage_score": 7.0},
        ],
    },
    {"query_id": "q2", "candidates": [{"id": "d2", "score": 3.0}]},
]


def test_a_run_file_and_json_lines_candidates_give_the_same_first_stage(collection, tmp_path):
    run = tmp_path / "mine.trec"
    run.write_text(RUN)
    rows = tmp_path / "mine.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    data = load_beir(collection)
    from_run = first_stage(data, str(run), k=100)
    from_rows = first_stage(data, str(rows), k=100)
    assert from_rows == from_run
    assert [d for d, _ in from_rows["q1"]] == ["d3", "d4", "d1"]  # best first, by score
    assert first_stage(data, str(rows), k=2)["q1"] == from_run["q1"][:2]


def test_eval_reports_the_same_table_for_either_form(collection, tmp_path, capsys):
    run, rows = tmp_path / "mine.trec", tmp_path / "mine.jsonl"
    run.write_text(RUN)
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    tables = {}
    for source in (run, rows):
        argv = ["eval", "--data", str(collection), "--first-stage", str(source)]
        assert main([*argv, "--rerankers", "bm25", "--no-progress"]) == 0
        printed = capsys.readouterr().out
        lines = [line.split("|") for line in printed.splitlines() if line.startswith("| ")]
        keep = [i for i, name in enumerate(lines[0]) if " ms" not in name]  # timings vary
        tables[source.suffix] = [[cells[i] for i in keep] for cells in lines]
        assert f"first stage: {source}" in printed
    assert tables[".trec"] == tables[".jsonl"] and len(tables[".trec"]) == 3


def test_candidates_without_scores_keep_their_order(collection, tmp_path):
    rows = tmp_path / "ids.jsonl"
    rows.write_text('{"query_id": "q1", "candidates": ["d4", "d1", {"id": "d3"}]}\n')
    ranked = load_candidates(rows, corpus=load_beir(collection).corpus)
    assert [d for d, _ in ranked["q1"]] == ["d4", "d1", "d3"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"query_id": "q1", "candidates": [{"id": "d9"}]}',
            "bad.jsonl:1: document 'd9' is not in",
        ),
        (
            '{"query_id": "q1"}',
            "bad.jsonl:1: expected an object with query_id and a candidates list",
        ),
        (  # a list under another name: the error shows the row's fields
            '{"query_id": "q1", "docs": [{"id": "d1"}]}',
            r"bad.jsonl:1: expected an object with query_id and a candidates list \(fields "
            r"present: 'query_id', 'docs'\)",
        ),
        ('{"query_id": null, "candidates": ["d1"]}', "bad.jsonl:1: query_id must be a string or"),
        (
            '{"qid": "q1", "candidates": ["d1"]}',
            r"bad.jsonl:1: the row has no 'query_id' \(fields present: 'qid', 'candidates'\): "
            r"each row needs a 'query_id'",
        ),
        (
            '{"query_id": "q1", "candidates": [{"doc_id": "d1", "score": 2}]}',
            r"bad.jsonl:1: candidate 0 has no 'id' \(fields present: 'doc_id', 'score'\): "
            r"each candidate needs an 'id' \(a string or number\) and may have a "
            r"'first_stage_score'",
        ),
        (
            '{"query_id": "q1", "candidates": ["d1", {"id": true}]}',
            "candidate 1's 'id' must be a string or number, got bool: each candidate needs",
        ),
        ('{"query_id": "q1", "candidates": [null]}', "candidate 0 is None, not an id or an object"),
        (
            '{"query_id": "q1", "candidates": [{"id": "d1", "score": "high"}]}',
            "bad.jsonl:1: query 'q1': candidate 'd1': score must be a number",
        ),
    ],
)
def test_a_mistake_in_the_candidates_names_the_line(collection, tmp_path, line, message):
    rows = tmp_path / "bad.jsonl"
    rows.write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        load_candidates(rows, corpus=load_beir(collection).corpus)


def test_the_header_and_recall_are_at_the_depth_the_run_gives(collection, tmp_path, capsys):
    run = tmp_path / "mine.trec"
    run.write_text(RUN)  # 3 candidates for q1, 1 for q2: 3 deep
    argv = ["eval", "--data", str(collection), "--first-stage", str(run), "--no-progress"]
    assert main([*argv, "--rerankers", "bm25", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert f"first stage: {run}, top 3 (the first stage had no more; --candidates 100)" in printed
    assert "recall@3" in printed and "recall@100" not in printed
    assert json.loads((tmp_path / "out" / "results.json").read_text())["k"] == 3
    assert main([*argv, "--rerankers", "bm25", "--candidates", "2"]) == 0
    printed = capsys.readouterr().out
    assert f"first stage: {run}, top 2\n" in printed and "recall@2" in printed


@pytest.mark.parametrize("suffix", [".trec", ".jsonl"])
def test_lines_of_queries_not_in_queries_jsonl_are_another_folders_and_skipped(
    collection, tmp_path, suffix
):
    """A company's run covers all its queries, while a folder holds some of them: each
    folder reads its own queries' lines and skips the rest, unchecked (their documents may
    be in another folder's corpus)."""
    source = tmp_path / f"mine{suffix}"
    if suffix == ".trec":
        source.write_text("q9 Q0 d99 1 3.0 mine\n" + RUN)
    else:
        rows = [{"query_id": "q9", "candidates": ["d99"]}, *ROWS]
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_beir(collection)
    assert set(first_stage(data, str(source))) == {"q1", "q2"}
    assert first_stage(data, str(source))["q1"][0] == ("d3", 9.5)
    # a run shipped in the folder is read the same way
    (collection / "bm25.run.trec").write_text(RUN + "q9 Q0 d2 1 3.0 mine\n")
    assert set(load_beir(collection).run) == {"q1", "q2"}
    # but a file that ranks none of the split's queries is an error naming the folder
    source.write_text("q9 Q0 d2 1 3.0 mine\n" if suffix == ".trec" else json.dumps(rows[0]))
    with pytest.raises(InputError) as caught:
        first_stage(data, str(source))
    assert str(caught.value).startswith(
        f"{source}: none of its 1 query ids is among the 2 queries of the test split of "
        f"{collection}"
    )


def test_a_run_may_name_queries_of_another_split(collection, tmp_path):
    (collection / "queries.jsonl").write_text(
        (collection / "queries.jsonl").read_text() + '{"_id": "q3", "text": "pasta"}\n'
    )
    (collection / "mine.trec").write_text(RUN + "q3 Q0 d4 1 3.0 mine\n")  # q3 is unjudged
    data = load_beir(collection)
    assert set(first_stage(data, str(collection / "mine.trec"))) == {"q1", "q2"}


def test_eval_takes_reranker_and_r_as_the_other_commands_do(collection, tmp_path, capsys):
    """``-r``/``--reranker``, repeatable, evaluate the same rerankers as ``--rerankers``
    (each row the same), and add to an explicit ``--rerankers``."""
    run = tmp_path / "mine.trec"
    run.write_text(RUN)
    argv = ["eval", "--data", str(collection), "--first-stage", str(run), "--no-progress"]

    def rows(*extra: str) -> list[str]:
        assert main([*argv, *extra]) == 0
        lines = [x.split("|") for x in capsys.readouterr().out.splitlines() if x.startswith("| ")]
        keep = [i for i, name in enumerate(lines[0]) if " ms" not in name]  # timings vary
        return ["|".join(cells[i] for i in keep) for cells in lines[1:]]

    listed = rows("--rerankers", "bm25,jaccard")
    assert len(listed) == 3  # the first stage, then each reranker
    assert rows("-r", "bm25", "--reranker", "jaccard") == listed
    assert rows("--rerankers", "bm25", "-r", "jaccard") == listed


def test_json_lines_candidates_are_read_whatever_the_file_is_named(collection, tmp_path):
    # a retriever's JSON Lines saved as .json or .txt was read as a TREC run: "expected 6
    # columns, got 91", which named neither form nor what to do
    data = load_beir(collection)
    expected = first_stage(data, str(_written(tmp_path / "mine.trec", RUN)), k=100)
    for name in ("mine.json", "mine.txt", "mine"):
        rows = _written(tmp_path / name, "\n" + "".join(json.dumps(r) + "\n" for r in ROWS))
        assert first_stage(data, str(rows), k=100) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("q1\td1\t1\n", "a qrels file"),  # judgments given as the run
        ("q1 Q0 d1 1\n", "qid Q0 docid rank score tag"),
    ],
)
def test_a_run_in_another_format_says_what_a_run_line_is(collection, tmp_path, text, hint):
    bad = _written(tmp_path / "bad.run", text)
    with pytest.raises(InputError) as error:
        first_stage(load_beir(collection), str(bad), k=100)
    said = str(error.value)
    assert said.startswith(f"{bad}:1: expected 6 columns")
    assert "qid Q0 docid rank score tag" in said and hint in said
    assert ".jsonl" in said  # the other form a first stage can take


def _written(path, text):
    path.write_text(text)
    return path


def test_a_run_of_some_queries_says_how_to_measure_only_those(collection, tmp_path, capsys):
    # a run of 2 of 30 judged queries gave means diluted by 28 zeros, and nothing under the
    # table said how to measure the run's own queries
    run = _written(tmp_path / "some.run", "q1 Q0 d1 1 9.5 mine\n")
    argv = ["eval", "--data", str(collection), "--first-stage", str(run), "-r", "bm25"]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out
    # no --thresholds: no word of thresholds; the run's row is not timed (it was read)
    assert f"no candidates for q2 (each scores 0 in every metric): {run} ranks " in out
    assert "threshold" not in out
    first = next(line for line in out.splitlines() if line.startswith("| first stage |"))
    assert first.split("|")[-5:-3] == [" - ", " - "], first  # mean ms, p95 ms: was 0.0
    assert "queries.jsonl holds just the queries it ranks" in out
    bm25 = ["eval", "--data", str(collection), "--first-stage", "bm25", "-r", "bm25"]
    assert main([*bm25, "--no-progress"]) == 0
    assert "holds just the queries it ranks" not in capsys.readouterr().out


def test_a_run_whose_ids_match_no_query_shows_both_ids(collection, tmp_path):
    # ids written differently ('query1' for 'q1') were refused without showing either side
    run = _written(tmp_path / "other.run", "query1 Q0 d1 1 9.5 mine\nquery2 Q0 d2 1 3.0 mine\n")
    with pytest.raises(InputError) as error:
        first_stage(load_beir(collection), str(run), k=100)
    said = str(error.value)
    assert "none of its 2 query ids is among the 2 queries of the test split" in said
    assert "its ids: 'query1', 'query2'; the split's: 'q1', 'q2'" in said
