"""Before a first evaluation whose embedding cache holds no vectors yet, ``evaluate`` says
that the pipelines that embed encode the candidates' texts first (minutes on a CPU for a few
thousand), so the wait is not a surprise; a later run, which reads the cache, says nothing."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sentence_transformers", reason="the embedding scorer needs the 'torch' extra")

from rerankit.eval import evaluate


def _data(folder):
    folder.mkdir()
    (folder / "qrels").mkdir()
    docs = {"d1": "solar panels turn sunlight into power", "d2": "how to cook pasta"}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in docs.items())
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "solar power"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_a_first_run_with_an_empty_embedding_cache_is_announced_once(tmp_path, tiny_st):
    data = _data(tmp_path / "data")
    cache = tmp_path / "embeddings.sqlite"
    pipelines = {"bm25": "bm25", "mine": {"scorer": {"type": "embedding", "model": str(tiny_st)}}}

    def run() -> list[str]:
        said: list[str] = []
        evaluate(data, pipelines, candidates=2, embedding_cache=cache, note=said.append)
        return [s for s in said if "embedding cache" in s]

    (first,) = run()
    assert first.startswith("mine encodes the candidates' texts") and "bm25" not in first
    assert f"the embedding cache ({cache}) holds no vectors yet" in first
    assert "later runs read them from the cache" in first
    assert run() == []  # the vectors are there now
    # memory only: nothing is kept for later runs, so none is promised
    said: list[str] = []
    evaluate(data, pipelines, candidates=2, embedding_cache=False, note=said.append)
    assert not [s for s in said if "embedding cache" in s]


@pytest.mark.slow
def test_tune_says_it_too(tmp_path, tiny_st):
    from rerankit.training import Reporter, tune

    data = _data(tmp_path / "data")
    train = {"q2": "cooking pasta", "q3": "sunlight", "q4": "pasta", "q5": "solar panels"}
    with (data / "queries.jsonl").open("a") as queries:
        queries.writelines(json.dumps({"_id": q, "text": t}) + "\n" for q, t in train.items())
    judged = "q2\td2\t1\nq3\td1\t1\nq4\td2\t1\nq5\td1\t1\n"
    (data / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged)
    notes: list[str] = []
    tune(
        data,
        candidates=2,
        embedding_model=str(tiny_st),
        embedding_cache=tmp_path / "embeddings.sqlite",
        out=tmp_path / "tuned.toml",
        reporter=Reporter(note=notes.append),
    )
    said = [n for n in notes if "holds no vectors yet" in n]
    assert len(said) == 1 and said[0].startswith("tune encodes the candidates' texts")
