"""`rerankit batch --engine ray` (Ray local mode, 2 CPUs): the same rankings as the local
engine, failures written and counted, Parquet and JSON Lines both ways."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("ray.data", reason="the ray engine needs the 'ray' extra")
pytestmark = pytest.mark.ray

from rerankit.batch import beir_rows, declared, read_rows, rerank_dataset, run_batch  # noqa: E402
from rerankit.batch.ray_cluster import check_resources, numbered_lines  # noqa: E402
from rerankit.cli import main  # noqa: E402
from rerankit.llm.testing import FakeLLMServer, Reply  # noqa: E402

DL19 = Path(__file__).resolve().parents[3] / "shared" / "data" / "msmarco"
DL19 = DL19 / "trec-dl-2019-bm25-top100"
needs_dl19 = pytest.mark.skipif(
    not DL19.exists(), reason="../shared/data (TREC DL19) is not present"
)
KEY_ENV = "RERANKIT_BATCH_TEST_KEY"


@pytest.fixture(scope="module", autouse=True)
def ray_local():
    import ray

    os.environ[KEY_ENV] = "test-key"  # before the workers start: they inherit it
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def rankings(path):
    return {r["query_id"]: [x["id"] for x in r["results"]] for r in read_rows(path)}


def scores(path):
    return {r["query_id"]: [x["score"] for x in r["results"]] for r in read_rows(path)}


@needs_dl19
@pytest.mark.parametrize(
    ("pipeline", "queries", "workers"),
    [("bm25", 43, 2), pytest.param("hybrid", 1, 1, marks=pytest.mark.slow)],  # about 30 s
)
def test_dl19_rankings_are_identical_on_both_engines(tmp_path, pipeline, queries, workers):
    """Every query and its order on two workers with BM25; the default pipeline (MiniLM in
    a worker process, each candidate encoded there and locally: 100 are enough) on one,
    in `make test-slow` (loading MiniLM in a Ray worker takes most of its half minute)."""
    rows = beir_rows(DL19, DL19 / "bm25_top100.run.trec")[:queries]
    local = run_batch(rows, tmp_path / "local.jsonl", pipeline)
    remote = run_batch(rows, tmp_path / "ray.jsonl", pipeline, engine="ray", workers=workers)
    assert local.rows == remote.rows == queries and local.failures == remote.failures == 0
    assert rankings(tmp_path / "ray.jsonl") == rankings(tmp_path / "local.jsonl")
    for qid, values in scores(tmp_path / "ray.jsonl").items():
        assert values == pytest.approx(scores(tmp_path / "local.jsonl")[qid], abs=1e-6)
    assert [r["query_id"] for r in read_rows(tmp_path / "ray.jsonl")] == [
        r["query_id"] for r in rows
    ]  # input order kept


def test_a_malformed_row_and_a_failing_provider_are_written_and_counted(tmp_path, judge_spec):
    def judge(request):
        if "broken query" in request.prompt:
            return Reply(status=401, text="invalid key for this project")
        return Reply(text=json.dumps({"id": "0", "score": 5 if "Paris" in request.prompt else 1}))

    with FakeLLMServer(responder=judge) as server:
        spec = judge_spec(server.openai_url, KEY_ENV)
        rows = [
            {"query_id": "ok-1", "query": "capital of france", "candidates": ["Rome", "Paris"]},
            {"query_id": "bad", "query": "broken query", "candidates": ["Rome", "Paris"]},
            {"query_id": "ok-2", "query": "capital city", "candidates": ["Oslo", "Paris x"]},
        ]
        src = tmp_path / "in.jsonl"
        src.write_text(
            json.dumps(rows[0]) + "\n{not json\n" + "\n".join(json.dumps(r) for r in rows[1:])
        )
        summary = run_batch(src, tmp_path / "out.jsonl", spec, engine="ray", batch_size=2)
    out = list(read_rows(tmp_path / "out.jsonl"))
    assert summary.rows == 4
    by_id = {r.get("query_id"): r for r in out}
    assert by_id["ok-1"]["error"] is None and by_id["ok-1"]["results"][0]["index"] == 1
    assert by_id["ok-2"]["error"] is None and by_id["ok-2"]["results"][0]["index"] == 1
    assert by_id[None]["error"].startswith(f"{src}:2: not JSON")  # FILE:LINE, as locally
    failed = by_id["bad"]
    assert failed["error"] == "the LLM provider failed for every document"
    assert failed["degraded"] and any("HTTP 401" in w for w in failed["warnings"])
    assert {x["index"] for x in failed["results"]} == {0, 1}  # nothing lost
    assert all("llm_failed" in x["flags"] for x in failed["results"])
    assert (summary.failures, summary.degraded) == (2, 1)  # the bad line, the failed provider
    assert summary.usage["calls"] == 6 and summary.usage["failures"] == 2


def test_json_lines_reach_the_workers_a_batch_at_a_time_with_their_line_numbers(tmp_path):
    """A block per --batch-size lines (not one for the whole file, which one worker took
    and whose rows all came back at its end), each line with its number (blank ones
    skipped, counted)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3}\n{"a": 4}\n{"a": 5}\n')
    ds = numbered_lines(str(src), 2).materialize()
    assert ds.num_blocks() >= 3  # (Ray may add an empty one)
    assert [(r["line"], r["text"]) for r in ds.take_all()] == [
        (n, f'{{"a": {a}}}') for n, a in [(1, 1), (3, 2), (4, 3), (5, 4), (6, 5)]
    ]


def test_more_workers_than_the_cluster_has_cpus_for_is_warned_of_before_the_job(caplog):
    """Ray Data's own "may hang forever" warning is quieted (a healthy job prints it while
    its workers load); the case where a job truly waits is said before it starts."""
    with caplog.at_level("WARNING", logger="rerankit.batch.ray_cluster"):
        check_resources(2, 1.0, 0.0)  # the 2 CPUs of this module's Ray
        assert not caplog.records
        check_resources(3, 1.0, 0.0)
    assert "3 workers ask for 1 CPUs each, and the Ray cluster has 2" in caplog.text


@pytest.mark.slow  # make test-slow (about 20 s): keeps make test under 10 minutes
def test_parquet_and_jsonl_both_ways(tmp_path):
    pytest.importorskip("pyarrow")
    rows = [
        {"query_id": f"q{i}", "query": q, "candidates": ["Paris is in France", "cats", q]}
        for i, q in enumerate(["capital of france", "cats and dogs", "rivers"])
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_batch(src, tmp_path / "local.parquet", "bm25")
    run_batch(src, tmp_path / "a.parquet", "bm25", engine="ray")  # JSON Lines -> Parquet
    run_batch(tmp_path / "a.parquet", tmp_path / "b.jsonl", "bm25", engine="ray")  # and back
    expected = rankings(tmp_path / "local.parquet")
    assert expected["q0"] == [None, None, None] or len(expected["q0"]) == 3
    for name in ("a.parquet", "b.jsonl"):
        got = list(read_rows(tmp_path / name))
        assert [[x["index"] for x in r["results"]] for r in got] == [
            [x["index"] for x in r["results"]] for r in read_rows(tmp_path / "local.parquet")
        ]
        assert [r["candidates"] for r in got] == [r["candidates"] for r in rows]


def test_rerank_dataset_returns_a_ray_dataset_for_ray_users():
    import ray.data

    ds = ray.data.from_items(
        [{"query": "capital of france", "candidates": ["cats", "Paris is the capital of France"]}]
    )
    out = rerank_dataset(ds, "bm25").take_all()
    assert out[0]["results"][0]["index"] == 1 and out[0]["error"] is None
    assert out[0]["candidates"] == ["cats", "Paris is the capital of France"]


def test_a_reranker_object_cannot_be_shipped_and_says_what_to_pass(tmp_path):
    from rerankit import load

    with pytest.raises(TypeError, match="pass a registered name, a pipeline file or a spec"):
        run_batch(
            [{"query": "q", "candidates": ["a"]}], tmp_path / "o.jsonl", load("bm25"), engine="ray"
        )


@pytest.mark.slow  # make test-slow (about 10 s): keeps make test under 10 minutes
@needs_dl19
def test_eval_on_ray_reports_what_the_local_engine_reports(capsys):
    from rerankit.cli import main

    args = ["eval", "--data", str(DL19), "--first-stage", "run", "--rerankers", "bm25"]
    args += ["--max-queries", "12", "--no-progress", "--no-embedding-cache"]
    assert main(args) == 0
    local = capsys.readouterr().out
    assert main([*args, "--engine", "ray", "--workers", "2"]) == 0
    remote = capsys.readouterr().out

    def ndcg_cells(text):
        return [line.split("|")[1:4] for line in text.splitlines() if line.startswith("| ")]

    assert ndcg_cells(remote) == ndcg_cells(local) and ndcg_cells(local)


@pytest.mark.slow  # make test-slow: keeps make test under 10 minutes
def test_a_model_that_cannot_load_fails_each_row_not_the_worker(tmp_path):
    """Ray workers load their models when they start (so no row's time holds the load); a
    model that cannot load must still fail row by row, written and counted, as locally."""
    spec = {"scorer": {"type": "cross_encoder", "model": str(tmp_path / "no-such-model")}}
    rows = [{"query_id": f"q{i}", "query": "q", "candidates": ["a", "b"]} for i in range(3)]
    summary = run_batch(rows, tmp_path / "out.jsonl", spec, engine="ray")
    out = list(read_rows(tmp_path / "out.jsonl"))
    assert summary.rows == 3 and summary.failures == 3
    assert [r["query_id"] for r in out] == ["q0", "q1", "q2"]
    assert all("no-such-model" in r["error"] and r["results"] == [] for r in out)


@pytest.mark.slow  # a worker loads torch and a model
def test_an_embedding_cache_file_reaches_the_workers_on_this_machine(
    tmp_path, tiny_st, monkeypatch
):
    """--embedding-cache FILE (the variable it sets, here relative to this folder) is read
    by Ray workers on this machine too: they encode into the same file, as the local
    engine does, instead of keeping their vectors in memory."""
    from rerankit.cache import EmbeddingCache

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", "vectors.sqlite")
    rows = [{"query_id": "q", "query": "solar power", "candidates": ["solar cells", "stock"]}]
    spec = {"scorer": {"type": "embedding", "model": str(tiny_st)}}
    summary = run_batch(rows, "out.jsonl", spec, engine="ray")
    assert (summary.rows, summary.failures) == (1, 0)
    assert len(EmbeddingCache(path=tmp_path / "vectors.sqlite").store) >= 2  # both candidates


@pytest.mark.slow  # about 6 s: an actor pool of its own
def test_a_pipeline_files_relative_paths_are_read_from_its_folder(tmp_path, monkeypatch):
    """Run from another folder, the workers get the file's `reranker` (and `model`) paths
    made absolute from the file's folder, as the local engine reads them."""
    pipes, elsewhere = tmp_path / "pipes", tmp_path / "elsewhere"
    pipes.mkdir(), elsewhere.mkdir()
    (pipes / "inner.toml").write_text('name = "inner"\n[[stages]]\nscorer = {type = "bm25"}\n')
    (pipes / "outer.toml").write_text('name = "outer"\n[[stages]]\nreranker = "inner.toml"\n')
    monkeypatch.chdir(elsewhere)
    rows = [{"query_id": "q", "query": "paris", "candidates": ["rome", "paris"]}]
    outer = "../pipes/outer.toml"
    spec = declared(outer)
    assert spec["stages"][0]["reranker"] == str(pipes / "inner.toml")
    summary = run_batch(rows, "ray.jsonl", outer, engine="ray")
    assert (summary.rows, summary.failures) == (1, 0)
    assert [r["index"] for r in next(read_rows("ray.jsonl"))["results"]] == [1, 0]


@pytest.mark.slow  # about 30 s: a `rerankit batch` process starting Ray of its own
def test_sigterm_is_left_to_rerankit_not_rays_native_stack_dump(tmp_path):
    """ray.init installs a handler that prints a native stack on SIGTERM (what `timeout`
    and schedulers send); the ray engine takes it back, so SIGTERM is this process's."""
    import signal
    import subprocess
    import sys
    import time

    def slow(request):
        return Reply(text=json.dumps({"score": 5}), delay=1.0)

    with FakeLLMServer(responder=slow) as server:
        spec = tmp_path / "judge.json"
        scorer = {"type": "llm_pointwise", "provider": "openai", "model": "m", "cache": False}
        scorer |= {"base_url": server.openai_url, "api_key_env": KEY_ENV}
        spec.write_text(json.dumps({"name": "judge", "stages": [{"scorer": scorer}]}))
        src = tmp_path / "in.jsonl"
        src.write_text(
            "".join(json.dumps({"query": f"q{i}", "candidates": ["a"]}) + "\n" for i in range(20))
        )
        command = [sys.executable, "-m", "rerankit", "batch", "-i", str(src), "-r", str(spec)]
        command += ["-o", str(tmp_path / "out.jsonl"), "--engine", "ray", "--batch-size", "2"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
        proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 240
            while not server.requests:  # Ray up, a worker at work
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            stderr = proc.communicate(timeout=120)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode != 0
    assert "SIGTERM received" not in stderr, stderr[-2000:]
    assert "Progress bars disabled" not in stderr  # Ray Data's noise, kept out of the log


@pytest.mark.slow  # about 4 s: two runs, one on Ray
def test_the_command_says_the_same_on_both_engines(tmp_path, capsys):
    """A user of the command gets the flags in a Ray worker's messages too (--text-field,
    not text_field=), a line cut off mid-value is placed at its real column, and a blank
    line is counted, whichever engine ran."""
    src = tmp_path / "in.jsonl"
    cut = '{"query_id": "cut", "query": "x", "candidates": [ '
    src.write_text(
        json.dumps({"query_id": "ok", "query": "capital", "candidates": ["Paris capital"]})
        + "\n\n"
        + cut
        + "\n"
        + json.dumps({"query_id": "notext", "query": "x", "candidates": [{"id": "a"}]})
        + "\n"
    )
    with pytest.raises(json.JSONDecodeError) as python:
        json.loads(cut)
    said = {}
    for engine in ("local", "ray"):
        out, summary = tmp_path / f"{engine}.jsonl", tmp_path / f"{engine}.json"
        args = ["batch", "-i", str(src), "--out", str(out), "-r", "bm25", "--engine", engine]
        assert main([*args, "--summary", str(summary), "--no-progress"]) == 3
        capsys.readouterr()
        said[engine] = [r["error"] for r in read_rows(out)]
        assert json.loads(summary.read_text())["blank_lines"] == 1, engine
    assert said["ray"] == said["local"]
    assert said["local"][1] == f"{src}:3: not JSON (Expecting value at column {python.value.colno})"
    assert said["local"][2].endswith(
        "name yours with --text-field NAME (or several: --text-fields A,B)"
    )
