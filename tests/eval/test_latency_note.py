"""The note under ``rerankit eval``'s table on what its latency columns cannot show: a run
whose time included encoding documents that runs after it read from the embedding cache,
and a mean above p95; and the embedding cache's count of lookups it rests on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from eval_tiny import CORPUS, tiny_dataset, write_tiny

from rerankit.cache import EmbeddingCache, embedding_lookups
from rerankit.cli import main
from rerankit.eval import evaluate
from rerankit.eval.latency import latency_note


def _row(name, cache=None, mean=10.0, p95=20.0, slowest=25.0):
    return {
        "pipeline": name,
        "mean_ms": mean,
        "p95_ms": p95,
        "max_ms": slowest,
        "embedding_cache": cache,
    }


def _counted(misses=0, reused=0):
    return {"hits": reused, "misses": misses, "store_hits": reused, "reused": reused}


def test_the_cache_counts_each_text_it_had_from_before_once_and_what_it_encodes():
    cache = EmbeddingCache()
    cache.put_many("m", ["old"], np.ones((1, 3)))
    with embedding_lookups() as counted:
        cache.get_many("m", ["old", "new"])  # one from before, one to encode
        cache.put_many("m", ["new"], np.ones((1, 3)))
        cache.get_many("m", ["old", "new"])  # both in memory now: hits, none reused again
    assert counted == {"hits": 3, "misses": 1, "store_hits": 0, "reused": 1}
    with embedding_lookups() as again:
        cache.get_many("m", ["old", "new"])
    assert again == {"hits": 2, "misses": 0, "store_hits": 0, "reused": 2}


def test_the_note_names_who_encoded_and_who_read_after_it():
    rows = [
        _row("first stage"),
        _row("bm25", _counted()),
        _row("hybrid", _counted(misses=1627)),
        _row("learned", _counted(reused=1590)),
    ]
    note = latency_note(rows)
    assert note.startswith(
        "(mean ms, p95 ms: hybrid encoded 1627 texts (documents or their passages), and its time "
    )
    assert "after hybrid, learned read 1590 texts' vectors from the embedding cache" in note
    assert (
        "(encoded by the runs before it or by earlier work (an earlier evaluation, or tune's "
        "learning before its report))"
    ) in note
    # more read than the runs before it encoded: the rest came from an earlier evaluation
    earlier = latency_note([rows[0], _row("embedding", _counted(misses=368)), rows[3]])
    assert "learned read 1590 texts' vectors from the embedding cache instead of " in earlier
    assert "(the runs before it encoded 368, so at least 1222 were there from earlier work " in (
        earlier
    )
    assert "run the evaluation again" in note
    # a second evaluation: every run read the cache, so the times compare
    assert latency_note([rows[0], _row("hybrid", _counted(reused=1627)), rows[3]]) is None
    # one pipeline encoded and none read after it (eval --rerankers bm25,hybrid on a first
    # run): its time is still not its reranking time, and the note says so
    alone = latency_note(rows[:3])
    assert alone == (
        "(mean ms, p95 ms: hybrid encoded 1627 texts (documents or their passages), and its "
        "time includes that: run the evaluation again, when the vectors are read from the "
        "embedding cache, for the reranking time alone)"
    )
    assert latency_note([rows[3], rows[2]]) == alone  # a run before it read nothing it encoded
    assert latency_note([_row("hybrid"), _row("learned")]) is None  # none counted (Ray)


def test_a_mean_above_p95_is_explained_with_the_slowest_query():
    note = latency_note([_row("t", _counted(), mean=236.6, p95=202.9, slowest=8796.2)])
    assert note == (
        "(mean ms, p95 ms: mean above p95: t's slowest query took 8796.2 ms; one query far "
        "slower than the rest (the first warming a model up, or one encoding many documents) "
        "pulls the mean above the 95th percentile, so p95 says more of a typical query)"
    )


def test_an_evaluation_says_under_its_table_that_a_later_run_read_the_cache(tmp_path, capsys):
    pytest.importorskip("sentence_transformers", reason="the embedding scorer needs torch")
    data = tiny_dataset()
    vectors = tmp_path / "vectors.sqlite"
    spec = {"scorer": {"type": "embedding"}}  # each its own scorer and cache, one store
    first = evaluate(data, {"a": spec, "b": spec}, embedding_cache=vectors)
    a, b = first.rows[1]["embedding_cache"], first.rows[2]["embedding_cache"]
    assert a["misses"] == len(CORPUS) and a["reused"] == 0
    assert b["misses"] == 0 and b["reused"] == len(CORPUS) == b["store_hits"]
    note = first.collections[0].latency_note()
    assert note.startswith(
        "(mean ms, p95 ms: a encoded 4 texts (documents or their passages), and its time includes"
    )
    assert "after a, b read 4 texts' vectors from the embedding cache" in note
    assert str(first).split("\n")[-1] == note  # under the table
    assert first.to_dict()["collections"][0]["latency_note"] == note
    again = evaluate(data, {"a": spec, "b": spec}, embedding_cache=vectors)
    assert again.rows[1]["embedding_cache"]["misses"] == 0
    assert again.collections[0].latency_note() is None
    assert "mean ms, p95 ms:" not in str(again)


def test_the_command_prints_the_note_and_results_json_keeps_it(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentence_transformers", reason="the embedding scorer needs torch")
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    folder = write_tiny(tmp_path / "tiny")
    pipeline = tmp_path / "mine.toml"
    pipeline.write_text('name = "mine"\n[scorer]\ntype = "embedding"\n')
    argv = ["eval", "--data", str(folder), "--rerankers", f"embedding,{pipeline}", "--no-progress"]
    cache = ["--embedding-cache", str(tmp_path / "vectors.sqlite")]
    assert main([*argv, *cache, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert (
        "embedding encoded 4 texts (documents or their passages)" in printed
        and "after embedding, mine read 4 " in printed
    )
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["latency_note"] in printed
    assert results["results"][0]["embedding_cache"] is None  # the first stage: no lookups
    assert results["results"][1]["embedding_cache"]["misses"] == len(CORPUS)


def test_a_cascade_s_stages_are_timed_and_its_slowest_named_under_the_table(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="eval --out draws a chart (extra eval)")
    folder = write_tiny(tmp_path / "tiny")
    pipeline = tmp_path / "cascade.toml"
    pipeline.write_text(
        'name = "cascade"\n[[stages]]\nname = "lexical"\nkeep = 3\nscorer = { type = "bm25" }\n'
        '[[stages]]\nname = "overlap"\nscorer = { type = "jaccard" }\n'
    )
    argv = ["eval", "--data", str(folder), "--rerankers", f"bm25,{pipeline}", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = {r["pipeline"]: r for r in results["results"]}
    assert rows["bm25"]["stage_mean_ms"] is None  # no stages
    stages = rows["cascade"]["stage_mean_ms"]
    assert list(stages) == ["lexical", "overlap"] and all(ms > 0 for ms in stages.values())
    assert sum(stages.values()) <= rows["cascade"]["mean_ms"]  # within the query's time
    slowest = max(stages, key=stages.get)
    said = (
        f"the slowest stage (stage_mean_ms in results.json): cascade's {slowest!r} at "
        f"{stages[slowest]:.1f} ms of its {rows['cascade']['mean_ms']:.1f} ms mean"
    )
    assert said in results["latency_note"] and results["latency_note"] in printed
    table = [line for line in printed.splitlines() if line.startswith("|")]
    assert not any("lexical" in line or "overlap" in line for line in table)  # under it only


def test_only_a_row_with_several_stages_gets_a_slowest_stage():
    one = {**_row("one"), "stage_mean_ms": {"only": 5.0}}
    two = {**_row("two"), "stage_mean_ms": {"bm25": 1.0, "judge": 8.3}}
    note = latency_note([_row("first stage"), one, two])
    assert "two's 'judge' at 8.3 ms of its 10.0 ms mean" in note and "one's" not in note
