"""BEIR loading, the metrics and the paired t-test, and the BM25 first stage."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit.eval import load_beir, load_qrels, load_run, mean_ndcg, ndcg_at_k
from rerankit.eval.data import Dataset
from rerankit.eval.first_stage import BM25Index
from rerankit.eval.metrics import (
    paired_t_test,
    recall_at_k,
    reciprocal_rank,
    student_t_two_sided,
)
from rerankit.scorers import BM25Scorer

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_ndcg_by_hand():
    judged = {"a": 3, "b": 1, "c": 0}
    # ranking b, x, a: dcg = 1/log2(2) + 3/log2(4); ideal a, b: 3/log2(2) + 1/log2(3)
    expected = (1 + 3 / 2) / (3 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "x", "a"], judged, 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], judged, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["c", "x"], judged, 10) == 0.0
    assert ndcg_at_k(["b", "a"], judged, 1) == pytest.approx(1 / 3)
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0  # nothing relevant: 0, not a division error
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(["a"], judged, 0)


def test_reciprocal_rank_and_recall_by_hand():
    judged = {"a": 2, "b": 1, "c": 0, "d": -1}  # c and d are judged, not relevant
    assert reciprocal_rank(["c", "d", "b", "a"], judged, 10) == pytest.approx(1 / 3)
    assert reciprocal_rank(["c", "d", "b", "a"], judged, 2) == 0.0  # none in the top 2
    assert reciprocal_rank([], judged) == 0.0
    assert recall_at_k(["c", "a", "x"], judged, 10) == pytest.approx(0.5)
    assert recall_at_k(["c", "a", "x", "b"], judged, 3) == pytest.approx(0.5)
    assert recall_at_k(["b", "a"], judged, 2) == 1.0
    assert recall_at_k(["a"], {"a": 0}, 10) == 0.0  # nothing relevant: 0


@pytest.mark.parametrize(
    ("t", "df", "p"),
    # two-sided tail areas from the t table (and 1 - 2 arctan(1) / pi = 0.5 for df = 1)
    [(1.0, 1, 0.5), (2.228, 10, 0.05), (3.169, 10, 0.01), (1.96, 1e6, 0.05), (0.0, 4, 1.0)],
)
def test_student_t_tail_matches_the_table(t, df, p):
    assert student_t_two_sided(t, df) == pytest.approx(p, abs=2e-4)
    assert student_t_two_sided(-t, df) == student_t_two_sided(t, df)


SCORE = st.integers(0, 10_000).map(lambda x: x / 10_000)  # per-query scores in [0, 1]


@settings(deadline=None)  # the first example imports scipy
@given(st.lists(st.tuples(SCORE, SCORE), min_size=2, max_size=60))
def test_the_paired_t_test_matches_scipys(pairs):
    stats = pytest.importorskip("scipy.stats")
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ours = paired_t_test(a, b)
    diffs = np.subtract(a, b)
    if np.all(diffs == diffs[0]):  # no spread: undefined when all 0, else certain
        assert ours == (None if diffs[0] == 0 else 0.0)
        return
    with np.errstate(all="ignore"):
        reference = float(stats.ttest_rel(a, b).pvalue)
    if math.isfinite(reference):
        assert ours == pytest.approx(reference, rel=1e-9, abs=1e-300)
    assert ours == paired_t_test(b, a)  # two-sided: symmetric


def test_the_paired_t_test_is_undefined_without_pairs_to_compare():
    assert paired_t_test([0.5], [0.2]) is None
    assert paired_t_test([0.1, 0.2], [0.1, 0.2]) is None
    for a, b in (([0.1, 0.2], [0.1]), ([0.1], [0.1, 0.2]), ([0.1, 0.2], [0.1, 0.2, 0.3])):
        with pytest.raises(ValueError, match="same length"):
            paired_t_test(a, b)


def test_mean_ndcg_counts_every_judged_query_as_evaluate_does():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}, "q3": {"c": 2}}
    run = {"q1": ["a"], "q2": ["b"]}  # q2: no relevant document, q3 not in the run: both 0
    assert mean_ndcg(run, qrels) == pytest.approx(1 / 3)
    texts = {"a": "solar panels make power", "b": "a bread recipe", "c": "wind at sea"}
    corpus = {d: {"title": "", "text": t} for d, t in texts.items()}
    queries = {"q1": "solar power", "q2": "bread", "q3": "wind"}
    data = Dataset(name="tiny", corpus=corpus, queries=queries, qrels=qrels)
    table = rerankit.evaluate(data, {"bm25": "bm25"}, first_stage="bm25", candidates=3)
    rows = {row["pipeline"]: row for row in table.to_dict()["collections"][0]["results"]}
    by_hand = mean_ndcg({"q1": ["a"], "q2": ["b"], "q3": ["c"]}, qrels)  # bm25's first picks
    assert rows["bm25"]["ndcg@10"] == pytest.approx(by_hand) == pytest.approx(2 / 3)


def test_loading_files(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "T", "text": "alpha beta"}\n{"_id": 2, "text": "gamma"}\n'
    )
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "alpha"}\n{"_id": "q9", "text": "unjudged"}\n'
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    (tmp_path / "bm25.run.trec").write_text("q1 Q0 2 2 1.5 x\nq1 Q0 d1 1 3.0 x\n")
    data = load_beir(tmp_path)
    assert data.queries == {"q1": "alpha"}
    assert data.text("d1") == "T\nalpha beta" and data.text("2") == "gamma"
    assert data.qrels == {"q1": {"d1": 2}}
    assert data.run == {"q1": ["d1", "2"]}
    assert data.run_file == "bm25.run.trec" and data.notes == []
    # a second run file: the first by name is used, and a note names both
    (tmp_path / "other.run.trec").write_text("q1 Q0 2 1 3.0 x\n")
    data = load_beir(tmp_path)
    assert data.run == {"q1": ["d1", "2"]} and data.run_file == "bm25.run.trec"
    assert data.notes == [
        f"{tmp_path}: 2 run files (bm25.run.trec, other.run.trec); the first, "
        "bm25.run.trec, is the first stage (name another with first_stage= (--first-stage))"
    ]
    # first_stage= names it, as the note, --first-stage and rerankit.evaluate do; run=,
    # its earlier name, still works; both at once is a TypeError naming both
    for name in ("first_stage", "run"):
        named = load_beir(tmp_path, **{name: tmp_path / "other.run.trec"})
        assert named.run == {"q1": ["2"]} and named.run_file == "other.run.trec"
    with pytest.raises(TypeError, match="got first_stage= and its earlier name run="):
        load_beir(tmp_path, first_stage=tmp_path / "other.run.trec", run=tmp_path / "x")
    (tmp_path / "other.run.trec").unlink()
    (tmp_path / "trec.qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    assert load_qrels(tmp_path / "trec.qrels") == {"q1": {"d1": 1, "d2": 0}}
    # grades written as floats ("2.0"), with no header: the first line is a judgment too
    (tmp_path / "floats.tsv").write_text("q1\td1\t2.0\nq1\td2\t0.0\n")
    assert load_qrels(tmp_path / "floats.tsv") == {"q1": {"d1": 2, "d2": 0}}
    (tmp_path / "half.tsv").write_text("q1\td1\t0.5\n")
    with pytest.raises(ValueError, match=r"half\.tsv:1: relevance must be an integer grade"):
        load_qrels(tmp_path / "half.tsv")
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1\n")
    with pytest.raises(ValueError, match=r"bad\.run:1: expected 6 columns"):
        load_run(tmp_path / "bad.run")
    with pytest.raises(ValueError, match=r"corpus\.jsonl: no such file \(BEIR layout expected"):
        load_beir(tmp_path / "qrels")


def test_bm25_index_equals_bm25_over_the_same_texts():
    texts = [
        "the immune system fights infection",
        "vaccines train the immune system",
        "markets fell on tuesday",
        "immune immune immune cells",
        "",
    ]
    index = BM25Index([f"d{i}" for i in range(len(texts))], texts, k1=1.2, b=0.75)
    query = "immune system vaccines"
    np.testing.assert_allclose(
        index.scores(query), BM25Scorer(k1=1.2, b=0.75).score_texts(query, texts), atol=1e-12
    )
    scores = index.scores(query)
    best = [f"d{i}" for i in np.argsort(-scores, kind="stable")[:2]]
    assert index.search(query, k=2) == best and best[0] == "d1"
    assert index.search("nothing matches", k=3) == []


@pytest.mark.skipif(
    not (DATA / "msmarco" / "trec-dl-2019-bm25-top100").exists(),
    reason="../shared/data (TREC DL19) is not present",
)
def test_dl19_bm25_run_scores_its_published_ndcg():
    data = load_beir(DATA / "msmarco" / "trec-dl-2019-bm25-top100")
    assert len(data.queries) == 43
    # REFERENCE_SCORES.md: Anserini's BM25 run on DL19 has nDCG@10 = 50.58
    assert round(100 * mean_ndcg(data.run, data.qrels), 2) == 50.58


def _collection(folder, queries, judged):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "alpha"}\n{"_id": "d2", "text": "beta"}\n'
    )
    (folder / "queries.jsonl").write_text(
        "".join(f'{{"_id": "{q}", "text": "alpha {q}"}}\n' for q in queries)
    )
    rows = "".join(f"{q}\td1\t1\n" for q in judged)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return folder


def test_a_split_can_be_halved_by_position_in_queries_jsonl(tmp_path):
    # q0 is unjudged: positions count the split's judged queries, in the file's order
    folder = _collection(tmp_path, ["q0", "q5", "q1", "q4", "q2"], ["q5", "q1", "q4", "q2"])
    odd, even = load_beir(folder, "test:odd"), load_beir(folder, "test:even")
    assert list(odd.queries) == ["q5", "q4"] and list(even.queries) == ["q1", "q2"]
    assert set(odd.qrels) == {"q5", "q4"} and set(even.qrels) == {"q1", "q2"}
    assert set(load_beir(folder, "test").queries) == set(odd.queries) | set(even.queries)
    with pytest.raises(ValueError, match="optionally with :odd or :even"):
        load_beir(folder, "test:third")


def test_collections_are_found_in_folders_and_take_their_own_split(tmp_path):
    from rerankit.eval.data import find_collections

    a = _collection(tmp_path / "pool" / "b-set", ["q1"], ["q1"])
    b = _collection(tmp_path / "pool" / "a-set", ["q1"], ["q1"])
    (tmp_path / "pool" / "notes").mkdir()  # not a collection: skipped
    c = _collection(tmp_path / "single", ["q1"], ["q1"])
    found = find_collections([str(tmp_path / "pool"), f"{c}@test:odd"], "test")
    assert found == [(b, "test"), (a, "test"), (c, "test:odd")]
    with pytest.raises(ValueError, match=r"a folder with no corpus\.jsonl"):
        find_collections([str(tmp_path / "pool" / "notes")])
    with pytest.raises(ValueError, match="missing: no such folder"):
        find_collections([str(tmp_path / "missing")])
    (tmp_path / "a-set.txt").write_text("")
    with pytest.raises(ValueError, match=r"a-set\.txt: not a folder"):
        find_collections([str(tmp_path / "a-set.txt")])
    with pytest.raises(ValueError, match="optionally with :odd or :even"):
        find_collections([f"{c}@test:half"])


def test_qrels_that_name_other_ids_are_reported(tmp_path, caplog):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\n'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n')
    qrels = tmp_path / "qrels" / "test.tsv"
    # d9, judged not relevant, is not in the corpus (a corpus of candidates only): it
    # changes no metric, nothing said (a relevant one is: test_data_checks.py)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t0\n")
    assert load_beir(tmp_path).notes == [] and not caplog.records
    # a judged query missing from queries.jsonl is left out, and said
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq7\td2\t1\n")
    data = load_beir(tmp_path)
    assert list(data.queries) == ["q1"]
    assert data.notes == [
        f"{qrels}: 1 of its 2 judged queries is not in queries.jsonl and is left out ('q7')"
    ]
    assert caplog.records[-1].levelname == "WARNING" and "'q7'" in caplog.records[-1].message
    # none of the judged documents in the corpus: the ids do not match, an error naming both
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tdoc-1\t1\nq1\tdoc-2\t0\n")
    with pytest.raises(
        ValueError,
        match=r"none of the 2 documents it judges is in corpus\.jsonl "
        r"\(it names 'doc-1'; the corpus has ids such as 'd1'\)",
    ):
        load_beir(tmp_path)


def test_a_collection_given_as_dot_is_named_by_its_folder(tmp_path, monkeypatch, capsys):
    """`eval --data .` (and `..`) headed its table ", test split, ..." and tune would have
    written tuned-.toml: the collection is named by the folder it stands for, as it is
    when named by its path (the name as given, never recased)."""
    from rerankit.cli import main

    folder = _collection(tmp_path / "My-Set", ["q1"], ["q1"])
    monkeypatch.chdir(folder)
    assert load_beir(".").name == load_beir(str(folder)).name == "My-Set"
    monkeypatch.chdir(folder / "qrels")
    assert load_beir("..").name == "My-Set"
    for named in ("..", str(folder)):
        assert main(["eval", "--data", named, "--rerankers", "bm25", "--no-progress"]) == 0
        assert capsys.readouterr().out.startswith("My-Set, test split, 1 queries;")
