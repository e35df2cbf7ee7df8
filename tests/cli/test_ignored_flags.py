"""No flag is silently ignored: a combination either does what it says (``rank --explain
--format jsonl``, ``cache info NAME``) or is refused with a usage error (exit status 2)
naming the flags and why, before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rerankit.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"
MINI = str(ROOT / "examples" / "scifact-mini")
RANK = ["rank", "-q", "mRNA vaccines", "-i", str(SAMPLE), "-r", "bm25"]


def refused(capsys, argv: list[str]) -> str:
    """The one line of the usage error ``argv`` gives (it must give one)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rerankit {argv[0]}: error: ") and err.count("\n") == 1
    return err


def test_rank_explain_in_json_lines_carries_each_document_s_explanation(capsys):
    assert main([*RANK, "--explain", "--format", "jsonl", "-k", "2"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    originals = {r["id"]: r for r in map(json.loads, SAMPLE.read_text().splitlines())}
    assert len(lines) == 2
    for line in lines:  # the input object, its score, and why
        why = line.pop("explanation")
        expected = {**originals[line["id"]], "rerank_score": line["rerank_score"]}
        assert line == {**expected, "score_scale": "relative"}
        assert why["score_from_contributions"] == "sum"
        assert why["strategies"]["bm25"]["contribution"] == pytest.approx(line["rerank_score"])
    assert main([*RANK, "--explain", "--details", "--format", "jsonl", "-k", "1"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["rank"] == 1 and set(record["explanation"]["strategies"]) == {"bm25"}
    assert main([*RANK, "--explain", "-k", "1"]) == 0  # alone, still the table
    assert capsys.readouterr().out.split()[:4] == ["rank", "id", "score", "strategy"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--details", "--format", "table"], "--details has no effect with --format table"),
        (["--details", "--explain"], "--details has no effect with --explain (a table unless"),
        (["--score-field", "s", "--format", "table"], "--score-field has no effect with --format"),
        (["--score-field", "s", "--details"], "--score-field has no effect with --details"),
    ],
)
def test_rank_refuses_what_its_output_would_not_show(capsys, flags, said):
    assert said in refused(capsys, [*RANK, *flags])


def test_an_id_field_no_document_has_is_refused(capsys, tmp_path, monkeypatch):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"key": "a", "text": "mRNA vaccines"}\n{"key": "b", "text": "wind"}\n')
    argv = ["rank", "-q", "mRNA", "-i", str(docs), "-r", "bm25"]
    err = refused(capsys, [*argv, "--id-field", "doc_id"])
    assert f"--id-field has no effect with --input {docs}: no document there has a 'doc_id'" in err
    assert "(fields present: 'key', 'text')" in err
    assert main([*argv, "--id-field", "key", "--details"]) == 0  # a field they have: read
    assert [json.loads(r)["id"] for r in capsys.readouterr().out.splitlines()] == ["a", "b"]
    assert main(argv) == 0  # the default id field is optional
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO('["mRNA", "wind"]'))
    assert "no document is an object" in refused(capsys, ["rank", "-q", "x", "--id-field", "k"])


def test_batch_refuses_an_id_field_no_candidate_has_before_writing(capsys, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"query": "q", "candidates": [{"key": "a", "text": "q"}, "plain"]}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    argv = ["batch", "-i", str(rows), "-o", str(out), "-r", "bm25"]
    err = refused(capsys, [*argv, "--id-field", "doc_id"])
    assert "--id-field has no effect with --input" in err and not out.exists()
    assert main([*argv, "--id-field", "key"]) == 0
    ids = [r["id"] for r in json.loads(out.read_text())["results"]]
    assert len(ids) == 2 and set(ids) == {"a", None}


@pytest.mark.parametrize("flag", [["--text-field", "body"], ["--first-stage-lower-is-better"]])
def test_batch_over_a_beir_folder_refuses_the_row_field_flags(capsys, tmp_path, flag):
    argv = ["batch", "--data", MINI, "-o", str(tmp_path / "o.jsonl"), "-r", "bm25", *flag]
    assert f"{flag[0]} has no effect with --data" in refused(capsys, argv)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--method", "ltr", "--calibrate"], "--method has no effect with --calibrate"),
        (["--calibrate", "--strategies", "bm25,embedding"], "--strategies has no effect with"),
        (["--method", "ltr", "--strategies", "bm25,embedding"], "with --method ltr"),
        (["--seeds", "3"], "--seeds has no effect without --method ltr"),
        (["--unjudged", "skip"], "--unjudged has no effect without --method ltr"),
        (["--served", "bm25"], "--served has no effect without --clicks"),
        (["--min-dwell-ms", "500"], "--min-dwell-ms has no effect without --clicks"),
        (["--embedding-cache", "e.sqlite", "--no-embedding-cache"], "with --no-embedding-cache"),
    ],
)
def test_tune_refuses_flags_the_chosen_learning_does_not_read(capsys, flags, said):
    assert said in refused(capsys, ["tune", "--data", MINI, *flags])


def test_tune_clicks_refuses_the_flags_of_learning_from_judgments(capsys):
    argv = ["tune", "--clicks", "log.jsonl", "--method", "ltr", "--train-split", "dev"]
    assert "--train-split, --method have no effect with --clicks" in refused(capsys, argv)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--embedding-cache", "e.sqlite", "--no-embedding-cache"], "--embedding-cache has no"),
        (["-r", "bm25", "-r", "text", "--backend", "torch"], "with --rerankers bm25,text: none"),
    ],
)
def test_eval_refuses_flags_nothing_would_read(capsys, flags, said):
    assert said in refused(capsys, ["eval", "--data", MINI, *flags])


def test_eval_refuses_a_language_only_pipeline_files_would_get(capsys, tmp_path):
    pipeline = tmp_path / "lexical.toml"
    pipeline.write_text('[scorer]\ntype = "bm25"\n')
    argv = ["eval", "--data", MINI, "-r", str(pipeline), "--language", "de"]
    assert "--language has no effect with --rerankers" in refused(capsys, argv)


def test_label_refuses_positions_for_a_pointwise_judge_and_a_split_for_a_queries_file(
    capsys, tmp_path, synthetic
):
    data = synthetic(tmp_path / "data")
    judge = tmp_path / "judge.toml"
    judge.write_text('[scorer]\ntype = "llm_pointwise"\nmodel = "gpt-4o-mini"\n')
    queries = tmp_path / "queries.txt"
    queries.write_text("solar power\n")
    argv = ["label", "--data", str(data), "--judge", str(judge), "--out", "o", "--dry-run"]
    said = refused(capsys, [*argv, "--positions", "2,5"])
    assert f"--positions has no effect with the pointwise judge of --judge {judge}" in said
    said = refused(capsys, [*argv, "--queries-file", str(queries), "--split", "test"])
    assert "--split has no effect with --queries-file" in said
    assert main([*argv, "--max-queries", "2", "--max-calls", "5"]) == 0  # the estimate says it
    assert "up to 32 calls (--max-calls stops it at 5)" in capsys.readouterr().err


def test_cache_info_shows_the_cache_named_and_namespace_needs_a_server(
    capsys, tmp_path, monkeypatch
):
    from rerankit.cache import JudgmentCache

    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)
    JudgmentCache(tmp_path / "judgments.sqlite").put_many([("k", 1.0)])
    named = [("judgments", "judgments"), ("judgment", "judgments"), ("onnx", "onnx")]
    for name, shown in [*named, ("wordfreq", "wordfreq")]:
        assert main(["cache", "info", name]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split(":")[0] for line in lines] == [shown], name
    assert main(["cache"]) == 0  # all, as before, and the word-frequency tables
    assert len(capsys.readouterr().out.splitlines()) == 5
    assert "--namespace has no effect without a server" in refused(
        capsys, ["cache", "--namespace", "mine"]
    )


def test_export_refuses_the_int8_options_where_they_shape_nothing(
    capsys, tmp_path, bert_dir, tiny_st
):
    out = ["--out", str(tmp_path / "out")]
    err = refused(capsys, ["export", str(bert_dir), *out, "--no-smoothing"])
    assert "--no-smoothing has no effect without --quantize int8" in err
    err = refused(
        capsys, ["export", str(tiny_st), *out, "--quantize", "int8", "--int8-scales", "per-tensor"]
    )
    assert "--int8-scales has no effect for an embedding model" in err
    err = refused(capsys, ["export", str(bert_dir), "--quantize", "int8", "--no-smoothing"])
    assert "without --out" in err
    assert not (tmp_path / "out").exists()  # refused before any export


def test_rank_explain_names_the_stage_that_decided_each_place(capsys, tmp_path):
    cascade = tmp_path / "cascade.toml"
    cascade.write_text(
        'name = "cascade"\n[[stages]]\nname = "lexical"\nkeep = 2\nscorer = { type = "bm25" }\n'
        '[[stages]]\nname = "overlap"\nscorer = { type = "jaccard" }\n'
    )
    argv = [*RANK[:-1], str(cascade), "--explain", "--format", "jsonl", "-k", "4"]
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["explanation"]["ranked_by"] for line in lines] == ["overlap"] * 2 + ["lexical"] * 2
