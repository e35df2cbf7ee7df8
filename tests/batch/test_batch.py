"""`rerankit batch` with the local engine: rows in, rows out, failures written and counted."""

from __future__ import annotations

import copy
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit import load
from rerankit.batch import BatchSummary, declared, read_rows, rerank_row, run_batch
from rerankit.cli import main

ROWS = [
    {
        "query_id": "q1",
        "query": "capital of france",
        "candidates": ["Cars are fast.", "Paris is the capital of France.", "Berlin is big."],
        "source": "log-1",
    },
    {
        "query_id": "q2",
        "query": "fast cars",
        "candidates": [
            {"id": "a", "text": "Paris is the capital of France.", "first_stage_score": 2.0},
            {"id": "b", "text": "Fast cars race on the track.", "first_stage_score": 1.0},
        ],
    },
]


def write_jsonl(path, rows, extra_lines=()):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "".join(extra_lines))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_keep_their_fields_and_gain_the_ranking(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    summary = run_batch(src, tmp_path / "out.jsonl", "bm25")
    out = read_jsonl(tmp_path / "out.jsonl")
    assert (summary.rows, summary.failures, summary.degraded) == (2, 0, 0)
    assert [r["query_id"] for r in out] == ["q1", "q2"]
    assert out[0]["source"] == "log-1" and out[0]["candidates"] == ROWS[0]["candidates"]
    assert out[0]["results"][0]["index"] == 1  # Paris first for "capital of france"
    assert out[1]["results"][0]["id"] == "b"
    reference = load("bm25").rerank(ROWS[0]["query"], ROWS[0]["candidates"])
    assert [r["index"] for r in out[0]["results"]] == [r.index for r in reference]
    assert [r["score"] for r in out[0]["results"]] == pytest.approx([r.score for r in reference])
    assert all(r["error"] is None and r["score_scale"] for r in out)


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_each_result_says_its_rank_in_every_format(tmp_path, suffix):
    """Each result carries ``rank``, its 1-based place within its query (as TREC runs and
    ``rank --details`` say it), the same in JSON Lines and Parquet, whose schema has it
    as an integer column even in a file of failed rows only."""
    if suffix == "parquet":
        pq = pytest.importorskip("pyarrow.parquet", reason="Parquet needs the 'parquet' extra")
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / f"out.{suffix}"
    run_batch(src, out, "bm25")
    rows = list(read_rows(out))
    assert [[x["rank"] for x in r["results"]] for r in rows] == [[1, 2, 3], [1, 2]]
    assert rows[0]["results"][0] == {**rows[0]["results"][0], "index": 1, "rank": 1}
    run_batch(src, tmp_path / f"top.{suffix}", "bm25", top_k=1)
    assert [[x["rank"] for x in r["results"]] for r in read_rows(tmp_path / f"top.{suffix}")] == [
        [1],
        [1],
    ]
    if suffix == "parquet":
        results = pq.read_schema(out).field("results").type.value_type
        assert str(results.field("rank").type) == "int64"
        failed = write_jsonl(tmp_path / "bad.jsonl", [], ["not json\n"])
        run_batch(failed, tmp_path / "failed.parquet", "bm25")
        results = pq.read_schema(tmp_path / "failed.parquet").field("results").type.value_type
        assert str(results.field("rank").type) == "int64"


def test_every_bad_row_is_written_with_its_error_and_counted(tmp_path):
    bad = [
        {"query_id": "no-query", "candidates": ["a"]},
        {"query_id": "empty", "query": "  ", "candidates": ["a"]},
        {"query_id": "string", "query": "q", "candidates": "a b c"},
        {"query_id": "number", "query": "q", "candidates": ["fine", 7]},
        {"query_id": "no-text", "query": "q", "candidates": [{"id": "x", "body": "y"}]},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", [ROWS[0], *bad, ROWS[1]], ["{oops\n", "[1, 2]\n"])
    summary = run_batch(src, tmp_path / "out.jsonl", "bm25")
    out = read_jsonl(tmp_path / "out.jsonl")
    assert summary.rows == 9 and summary.failures == 7
    errors = {r.get("query_id"): r["error"] for r in out}
    assert errors["q1"] is None and errors["q2"] is None  # the good rows complete
    # every error says FILE:LINE: query 'ID': what, as rank and eval say where
    assert errors["no-query"] == (
        f"{src}:2: query 'no-query': no 'query' field (the query; fields present: 'query_id', "
        "'candidates'); name yours with query_field= (--query-field)"
    )
    assert (
        errors["empty"] == f"{src}:3: query 'empty': 'query' must be a non-empty string, got '  '"
    )
    assert errors["string"] == f"{src}:4: query 'string': 'candidates' must be a list, got a str"
    assert errors["number"].startswith(f"{src}:5: query 'number': candidates[1] must be a string")
    assert errors["no-text"].startswith(  # the candidate, not the library's "document 0"
        f"{src}:6: query 'no-text': candidates[0] (id 'x'): missing text field 'text'"
    )
    assert out[7]["error"].startswith(f"{src}:8: not JSON")
    assert out[8]["error"].startswith(f"{src}:9: a row must be a JSON object, got a JSON array;")
    assert "jq -c '.[]' FILE" in out[8]["error"]
    assert all(r["results"] == [] for r in out if r["error"])


def test_a_pretty_printed_json_file_says_that_a_row_goes_on_one_line(tmp_path):
    """A JSON file given as rows (the natural first try) fails on its first line, "{" or
    "[": the error says what JSON Lines are and how to convert, not only "not JSON"."""
    for name, text in {
        "pretty.jsonl": json.dumps(ROWS[0], indent=2),
        "array.json": json.dumps([ROWS[0]], indent=2),
    }.items():
        src = tmp_path / name
        src.write_text(text + "\n")
        run_batch(src, tmp_path / "out.jsonl", "bm25", overwrite=True)
        first = read_jsonl(tmp_path / "out.jsonl")[0]["error"]
        assert first.startswith(f"{src}:1: not JSON (")
        assert "JSON Lines hold one row, a JSON object, on each line" in first, first
        assert "jq -c" in first


def test_the_cli_writes_parquet_from_jsonl_and_back_and_says_what_failed(tmp_path, capsys):
    pytest.importorskip("pyarrow", reason="Parquet needs the 'parquet' extra")
    src = write_jsonl(tmp_path / "in.jsonl", ROWS, ["not json\n"])
    code = main(["batch", "-i", str(src), "-o", str(tmp_path / "out.parquet"), "-r", "bm25"])
    err = capsys.readouterr().err
    assert code == 3  # some rows failed: written, counted, and the status says so
    assert "3 rows" in err and "1 failed" in err and f"{src}:3: not JSON" in err
    rows = list(read_rows(tmp_path / "out.parquet"))
    assert [r["query_id"] for r in rows] == ["q1", "q2", None]
    assert rows[0]["results"][0]["index"] == 1 and rows[2]["error"].startswith(f"{src}:3: ")
    # Parquet in, JSON Lines out: the same rankings
    args = ["batch", "-i", str(tmp_path / "out.parquet"), "-o", str(tmp_path / "again.jsonl")]
    code = main([*args, "-r", "bm25", "--summary", str(tmp_path / "summary.json")])
    assert code == 3
    again = read_jsonl(tmp_path / "again.jsonl")
    assert [r["results"] for r in again[:2]] == [r["results"] for r in rows[:2]]
    assert json.loads((tmp_path / "summary.json").read_text())["failures"] == 1  # the old row


def test_the_summary_file_is_utf8_as_the_output_is(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, [{"query": "返品", "candidates": [{"本文": "返品は無料"}]}])
    args = ["batch", "-i", str(src), "-o", str(tmp_path / "out.jsonl"), "-r", "bm25"]
    assert main([*args, "--summary", str(tmp_path / "summary.json")]) != 0
    raw = (tmp_path / "summary.json").read_bytes()
    assert "'本文'".encode() in raw and b"\\u" not in raw
    assert "'本文'" in read_jsonl(tmp_path / "out.jsonl")[0]["error"]  # the same text
    summary = BatchSummary()  # a lone surrogate: escaped, so the file still encodes
    summary.count({"error": "bad \ud800 本文", "degraded": False}, {})
    summary.write(tmp_path / "odd.json")
    odd = (tmp_path / "odd.json").read_bytes()
    assert b"\\ud800" in odd and json.loads(odd)["errors"] == ["bad \ud800 本文"]


def test_an_unknown_format_and_a_missing_file_are_named_before_any_work(tmp_path):
    (tmp_path / "in.csv").write_text("query,candidates\n")
    with pytest.raises(
        ValueError, match=r"in\.csv: use a JSON Lines file \(\.jsonl, \.ndjson, \.json\)"
    ):
        run_batch(tmp_path / "in.csv", tmp_path / "out.jsonl", "bm25")
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    with pytest.raises(ValueError, match=r"out\.txt: use a JSON Lines file \(\.jsonl"):
        run_batch(src, tmp_path / "out.txt", "bm25")
    with pytest.raises(ValueError, match=r"missing\.jsonl: no such file"):
        run_batch(tmp_path / "missing.jsonl", tmp_path / "out.jsonl", "bm25")
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out.txt").exists()


def test_the_callers_rows_are_not_changed():
    rows = copy.deepcopy(ROWS)
    reranker = load("bm25")
    for row in rows:
        rerank_row(reranker, row)
    assert rows == ROWS


def test_a_pipeline_that_fails_for_every_row_is_counted_not_raised(failing_scorer, tmp_path):
    from rerankit.rerankers import ScorerReranker

    summary = run_batch(list(ROWS), tmp_path / "out.jsonl", ScorerReranker(failing_scorer()))
    out = read_jsonl(tmp_path / "out.jsonl")
    assert summary.failures == 2 and all(r["error"] == "every strategy failed" for r in out)
    assert all(len(r["results"]) == len(ROWS[i]["candidates"]) for i, r in enumerate(out))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="abc xyz", min_size=0, max_size=30), min_size=1, max_size=12),
    st.text(alphabet="abc xyz", min_size=1, max_size=10).filter(str.strip),
)
def test_results_are_a_permutation_of_the_candidates(texts, query):
    row = {"query": query, "candidates": texts}
    out = rerank_row(load("bm25"), row)
    assert out["error"] is None
    assert sorted(r["index"] for r in out["results"]) == list(range(len(texts)))
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)


def test_the_summary_counts_usage_and_reads_as_a_sentence():
    summary = BatchSummary()
    summary.count({"error": None, "degraded": True}, {"calls": 3})
    summary.count({"error": "x", "degraded": False}, {"calls": 1, "failures": 1})
    summary.seconds = 2.0
    assert summary.to_dict()["usage"] == {"calls": 4, "failures": 1}
    assert str(summary) == (
        "2 rows in 2.0 s (1.0 rows/s); 1 failed, 1 degraded; LLM usage: calls 4, failures 1"
    )


def test_concurrency_keeps_rows_in_flight_and_the_same_results(tmp_path, monkeypatch, judge_spec):
    """With a pipeline that waits on a provider, ``concurrency`` rows are judged at once
    (counted at a local fake OpenAI server); the rows and their order do not change."""
    pytest.importorskip("openai", reason="needs the 'openai' extra")
    import threading

    from rerankit.llm.testing import FakeLLMServer, Reply

    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def judge(request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return Reply(text=json.dumps({"id": "0", "score": 7 if "Paris" in request.prompt else 2}))

    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    rows = [
        {"query_id": f"q{i}", "query": f"question {i}", "candidates": ["Paris"]} for i in range(8)
    ]
    with FakeLLMServer(responder=judge) as server:
        spec = judge_spec(server.openai_url, "RERANKIT_TEST_KEY")
        outputs, most = {}, {}
        for concurrency in (1, 4):
            state["most"] = 0
            summary = run_batch(
                rows, tmp_path / f"c{concurrency}.jsonl", spec, concurrency=concurrency
            )
            assert summary.failures == 0 and summary.usage["calls"] == 8
            outputs[concurrency] = read_jsonl(tmp_path / f"c{concurrency}.jsonl")
            most[concurrency] = state["most"]
    assert most[1] == 1 and most[4] == 4
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in outputs[1]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in outputs[4]]
    assert [r["query_id"] for r in outputs[4]] == [f"q{i}" for i in range(8)]


def test_the_spec_shipped_to_ray_workers_has_the_files_relative_paths_made_absolute(
    tmp_path, monkeypatch
):
    """As `load` reads a pipeline file: `model` beside the file, not in the workers' folder."""
    pipes, elsewhere = tmp_path / "pipes", tmp_path / "elsewhere"
    (pipes / "ce-onnx").mkdir(parents=True), elsewhere.mkdir()
    (pipes / "ce.toml").write_text(
        '[[stages]]\nscorer = {type = "cross_encoder", model = "ce-onnx"}\n'
    )
    monkeypatch.chdir(elsewhere)
    spec = declared("../pipes/ce.toml")
    assert spec["stages"][0]["scorer"]["model"] == str(pipes / "ce-onnx")


def test_embedding_cache_keeps_the_documents_vectors_only_when_asked(tmp_path, monkeypatch):
    import sqlite3

    from rerankit.cache import EMBEDDING_CACHE_ENV

    monkeypatch.delenv(EMBEDDING_CACHE_ENV, raising=False)  # put back after the test
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    kept, elsewhere = tmp_path / "vectors.sqlite", tmp_path / "env.sqlite"

    def run(*flags: str) -> None:
        out = str(tmp_path / "out.jsonl")
        assert (
            main(["batch", "-i", str(src), "--out", out, "-r", "embedding", "--overwrite", *flags])
            == 0
        )

    def stored(path) -> int:
        with sqlite3.connect(path) as db:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)

    run("--embedding-cache", str(kept))
    assert stored(kept) >= 4  # the four distinct documents (and the queries, if kept)
    monkeypatch.setenv(EMBEDDING_CACHE_ENV, str(elsewhere))
    run("--no-embedding-cache")
    assert not elsewhere.exists()
    assert (
        main(
            [
                "batch",
                "-i",
                str(src),
                "--out",
                "x.jsonl",
                "--embedding-cache",
                "f",
                "--no-embedding-cache",
            ]
        )
        == 2
    )


def test_parquet_output_has_one_schema_whatever_the_rows_hold(tmp_path):
    """A nightly Parquet output merges with the other nights': one odd row (string
    candidates, a broken row) or integer ids do not change a column's type; the
    candidates are read back as they were."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs the 'parquet' extra")
    import pyarrow.parquet as pq

    objects = [
        {"query_id": f"q{i}", "query": "capital", "candidates": [{"id": f"d{i}", "text": "Paris"}]}
        for i in range(2)
    ]
    odd = [
        *objects,
        {"query_id": "s", "query": "capital", "candidates": ["Paris", "x"]},
        {"query_id": "b", "query": "capital", "candidates": "not a list"},
    ]
    numbered = [{**objects[0], "candidates": [{"id": 7, "text": "Paris"}]}]
    schemas = []
    for name, rows in (("objects", objects), ("odd", odd), ("numbered", numbered)):
        out = tmp_path / f"{name}.parquet"
        run_batch(write_jsonl(tmp_path / f"{name}.jsonl", rows), out, "bm25")
        schema = pq.read_schema(out)
        schemas.append(schema.remove_metadata())
        assert schema.field("candidates").type == pa.string()
        back = list(read_rows(out))
        assert [r["candidates"] for r in back] == [r["candidates"] for r in rows]
    assert schemas[0] == schemas[1] == schemas[2]
    assert back[0]["results"][0]["id"] == "7"  # a result's id is text in Parquet


def test_every_suffix_batch_accepts_is_in_docs_batch_md(tmp_path):
    """``.ndjson``, ``.json`` and ``.pq`` were accepted and named nowhere."""
    from pathlib import Path

    from rerankit.batch.io import SUFFIXES, input_format

    page = (Path(__file__).parents[2] / "docs" / "batch.md").read_text()
    for kind, suffixes in SUFFIXES.items():
        for suffix in suffixes:
            assert input_format(f"rows{suffix.upper()}") == kind
            assert f"`{suffix}`" in page, suffix
    rows = tmp_path / "rows.ndjson"
    rows.write_text(json.dumps({"query": "solar", "candidates": ["Solar power", "Wind"]}) + "\n")
    assert main(["batch", "-i", str(rows), "--out", str(tmp_path / "o.ndjson"), "-r", "bm25"]) == 0
    assert [r["results"][0]["index"] for r in read_rows(tmp_path / "o.ndjson")] == [0]


def test_a_refused_suffix_names_every_suffix_batch_accepts():
    """The refusal said 'use a .jsonl or .parquet file' while batch.md (and batch) take
    .ndjson, .json and .pq too."""
    from rerankit.batch.io import SUFFIXES, input_format
    from rerankit.errors import InputError

    with pytest.raises(InputError) as refused:
        input_format("rows.csv")
    said = str(refused.value)
    assert said.startswith("rows.csv: ") and "(got '.csv')" in said
    for suffixes in SUFFIXES.values():
        for suffix in suffixes:
            assert suffix in said, suffix
