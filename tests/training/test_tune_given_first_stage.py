"""``tune(first_stage={query id: candidates})``: the candidates given in memory are read for
the queries tune learns from and the ones it reports on, as a run file of the same ranking
is, and its account names them by a placeholder, never writes them out."""

from __future__ import annotations

import copy

import pytest

from rerankit.errors import InputError
from rerankit.training import tune


def _as_mapping(folder):
    """The collection's run file as a notebook holds it: query id -> (doc id, score)."""
    given: dict[str, list[tuple[str, float]]] = {}
    for line in (folder / "first.run.trec").read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        given.setdefault(q, []).append((d, float(score)))
    return given


@pytest.mark.slow  # about 15 s: loads the embedding model and reports on the test split
def test_tune_reads_candidates_in_memory_for_both_splits_and_never_prints_them(
    tmp_path, synthetic, monkeypatch
):
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs the 'torch' extra")
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(tmp_path / "embeddings.sqlite"))
    data = synthetic(tmp_path / "data", misleading=True)
    given = _as_mapping(data)
    kept = copy.deepcopy(given)
    options = {"candidates": 10, "calibrate": True, "folds": 3}
    in_memory = tune(data, first_stage=given, out=tmp_path / "mine.toml", **options)
    from_file = tune(
        data, first_stage=str(data / "first.run.trec"), out=tmp_path / "file.toml", **options
    )
    assert given == kept  # the caller's mapping is left as it was
    account = "\n".join(in_memory.lines)
    assert "first stage: the candidates given in memory (40 queries)" in account
    assert in_memory.verdict.gain == from_file.verdict.gain
    measured = {r["pipeline"]: r["ndcg@10"] for r in in_memory.test}
    assert (
        measured["first stage"]
        == {r["pipeline"]: r["ndcg@10"] for r in from_file.test}["first stage"]
    )
    assert max(map(len, in_memory.lines)) < 2000 and "('d0-0'" not in account
    # the refit just tried is not advised again, with or without the mapping written out
    assert 'calibrate=True, out="calibrated.toml"' not in account


def test_a_dataframe_as_first_stage_is_refused_before_any_work_with_how_to_group_it(tmp_path):
    class Frame:  # what matters of a DataFrame: not a mapping, has groupby
        def groupby(self, key):
            raise AssertionError("not called")

    with pytest.raises(InputError, match=r"first_stage: expected .* got Frame; from a Data"):
        tune(tmp_path / "not-read", first_stage=Frame())
