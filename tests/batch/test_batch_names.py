"""``run_batch`` and ``rerank_dataset`` name what ranks ``reranker`` and what they write
``out``, as ``rerankit.rerank``, ``evaluate`` and every command's ``--reranker`` and
``--out`` do; their earlier names, ``pipeline=`` and ``output=``, still work and give the
same rows."""

from __future__ import annotations

import inspect
import json

import pytest

from rerankit.batch import rerank_dataset, run_batch

ROWS = [
    {"query_id": "q1", "query": "capital of france", "candidates": ["cats", "capital of france"]},
    {"query_id": "q2", "query": "fast cars", "candidates": ["fast cars race", "slow boats"]},
]


def _ranked(path):
    return [
        (row["query_id"], [r["index"] for r in row["results"]], row["reranked_by"])
        for row in map(json.loads, path.read_text().splitlines())
    ]


def test_the_signatures_say_reranker_and_out():
    for call in (run_batch, rerank_dataset):
        params = inspect.signature(call).parameters
        assert "reranker" in params and "out" in params, call.__name__
        assert "pipeline" not in params and "output" not in params, call.__name__
        assert params["reranker"].default == "hybrid"


def test_run_batch_gives_the_same_rows_under_either_name(tmp_path):
    calls = {
        "positional": lambda out: run_batch(ROWS, out, "bm25", top_k=1),
        "new": lambda out: run_batch(ROWS, out=out, reranker="bm25", top_k=1),
        "earlier": lambda out: run_batch(ROWS, output=out, pipeline="bm25", top_k=1),
        "mixed": lambda out: run_batch(ROWS, out, pipeline="bm25", top_k=1),
    }
    ranked = {}
    for name, call in calls.items():
        out = tmp_path / f"{name}.jsonl"
        assert call(out).rows == 2
        ranked[name] = _ranked(out)
    assert ranked["new"] == ranked["earlier"] == ranked["mixed"] == ranked["positional"]
    assert [r[0] for r in ranked["new"]] == ["q1", "q2"]
    assert ranked["new"][0][2].startswith("bm25@")  # bm25 ranked, not the default hybrid


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"out": "a.jsonl", "output": "b.jsonl"}, "got out= and its earlier name output="),
        (
            {"out": "a.jsonl", "reranker": "bm25", "pipeline": "hybrid"},
            "got reranker= and its earlier name pipeline=",
        ),
    ],
)
def test_both_names_of_one_argument_are_refused(tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match=message):
        run_batch(ROWS, **kwargs)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()
    kwargs.pop("out")
    with pytest.raises(TypeError, match=message):
        rerank_dataset(ROWS, out="a.jsonl", **kwargs)  # refused before Ray starts


def test_run_batch_without_out_says_what_it_needs():
    with pytest.raises(TypeError, match=r"run_batch\(\) missing out: the \.jsonl or \.parquet"):
        run_batch(ROWS, reranker="bm25")


@pytest.fixture
def ray_started_here():
    """Ray, started for this test and shut down after it, so that the next module's own
    ``ray.init`` finds none running."""
    ray = pytest.importorskip("ray", reason="the ray engine needs the 'ray' extra")
    pytest.importorskip("ray.data", reason="the ray engine needs the 'ray' extra")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.mark.slow  # make test-slow: a Ray of its own, about 30 s (the signatures test: both names)
@pytest.mark.ray
def test_rerank_dataset_gives_the_same_rows_under_either_name(ray_started_here):
    new = rerank_dataset(ROWS, reranker="bm25").take_all()
    earlier = rerank_dataset(ROWS, pipeline="bm25").take_all()
    assert [r["results"] for r in new] == [r["results"] for r in earlier]
    assert [r["results"][0]["index"] for r in new] == [1, 0]
