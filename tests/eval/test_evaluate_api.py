"""``rerankit.eval.evaluate``: ``rerankit eval`` in one call from Python. The command prints
the result's text; the result holds the rows, the comparison with a baseline, the summary
over several collections, plain data and the same files ``--out`` writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from eval_tiny import CORPUS, QRELS, QUERIES, tiny_dataset

import rerankit
from rerankit.cli import main
from rerankit.errors import ConfigError, InputError, ModelLoadError
from rerankit.eval import CollectionEvaluation, Evaluation, evaluate, load_beir
from rerankit.eval.data import Dataset
from rerankit.scorers import BM25Scorer

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO / "examples" / "scifact-mini"


def _tiny() -> Dataset:
    """A collection built in memory (no files)."""
    return tiny_dataset()


def _write(folder: Path, data: Dataset, split: str = "test") -> Path:
    """``data`` as a BEIR-layout folder."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, **d}) + "\n" for i, d in data.corpus.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in data.queries.items())
    )
    rows = [f"{q}\t{d}\t{g}" for q, j in data.qrels.items() for d, g in j.items()]
    (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows))
    return folder


def _timeless(text: str) -> str:
    """The printed text with the latency cells (mean ms, p95 ms) blanked: they differ run
    to run."""
    return re.sub(r"\| [\d.]+ \| [\d.]+ \| (\d+) \| (\d+) \|", r"| _ | _ | \1 | \2 |", text)


def _spy(monkeypatch) -> list[Evaluation]:
    """Keep what ``rerankit eval`` got from the real ``evaluate``."""
    import rerankit.cli.eval as command

    got: list[Evaluation] = []

    def keep(*args, **kwargs):
        got.append(evaluate(*args, **kwargs))
        return got[-1]

    monkeypatch.setattr(command, "evaluate", keep)
    return got


def test_the_command_prints_the_text_of_the_result_it_got(monkeypatch, capsys):
    """stdout is ``str(result)`` exactly, and the same call from Python gives the same text
    but for the timings."""
    got = _spy(monkeypatch)
    argv = ["eval", "--data", str(SCIFACT), "--rerankers", "bm25,text", "--candidates", "10"]
    assert main([*argv, "--max-queries", "6", "--no-progress"]) == 0
    assert capsys.readouterr().out == str(got[-1]) + "\n"
    mine = evaluate(SCIFACT, "bm25,text", candidates=10, max_queries=6)
    assert _timeless(str(mine)) == _timeless(str(got[-1])) and "| text |" in str(mine)
    assert str(mine).startswith("scifact-mini, test split, 6 queries; first stage: BM25")


def test_over_several_collections_the_command_prints_the_result_and_its_files(
    tmp_path, monkeypatch, capsys
):
    got = _spy(monkeypatch)
    pool = tmp_path / "pool"
    _write(pool / "one", _tiny())
    _write(pool / "two", _tiny())
    out = tmp_path / "out"
    argv = ["eval", "--data", str(pool), "--rerankers", "bm25", "--baseline", "first-stage"]
    assert main([*argv, "--candidates", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr()
    result = got[-1]
    assert printed.out == str(result) + "\n" and result.several
    assert "nDCG@10 x 100 by collection" in printed.out
    assert "minus first stage's by collection" in printed.out
    assert result.summary_file == out / "summary.json"
    written = [p for c in result.collections for p in c.written] + [result.summary_file]
    # results.json, two runs, the chart, candidates.jsonl and (with a baseline) per_query.csv
    # each; the summary
    assert len(written) == 13
    assert [line for line in printed.err.splitlines() if line.startswith("wrote ")] == [
        f"wrote {p}" for p in written
    ]
    mine = evaluate([pool], "bm25", baseline="first-stage", candidates=3)
    assert _timeless(str(mine)) == _timeless(printed.out.rstrip("\n"))


def test_the_result_holds_rows_comparison_and_plain_data():
    result = evaluate(_tiny(), ["bm25", "text"], candidates=3, baseline="bm25")
    assert [r["pipeline"] for r in result.rows] == ["first stage", "bm25", "text"]
    by_name = {r["pipeline"]: r for r in result.rows}
    # q3 "pasta" has one candidate, the relevant one: every pipeline ranks it first
    assert by_name["bm25"]["per_query_ndcg@10"]["q3"] == 1.0
    assert all(0 <= r["ndcg@10"] <= 1 for r in result.rows)
    against = {e["pipeline"]: e for e in result.against}
    assert set(against) == {"first stage", "text"}
    for name in ("first stage", "text"):
        mine, base = by_name[name]["per_query_ndcg@10"], by_name["bm25"]["per_query_ndcg@10"]
        diff = sum(mine[q] - base[q] for q in base) / len(base)
        assert against[name]["diff"] == pytest.approx(diff)
    plain = result.to_dict()
    assert json.loads(json.dumps(plain, allow_nan=False)) == plain  # strict JSON
    (one,) = plain["collections"]
    assert one["collection"] == "tiny" and one["split"] == "test" and one["baseline"] == "bm25"
    assert one["results"] == result.rows and one["against_baseline"] == result.against
    assert plain["mean_ndcg@10"] == {r["pipeline"]: r["ndcg@10"] for r in result.rows}
    assert [e["pipeline"] for e in plain["mean_against_baseline"]] == ["first stage", "text"]
    assert str(result).startswith("tiny, test split, 3 queries; first stage: BM25 over")
    assert str(result) == result.table() == str(result.collections[0])


def test_over_several_collections_the_summary_is_the_mean(tmp_path):
    data = _tiny()
    half = Dataset("half", data.corpus, {"q1": QUERIES["q1"]}, {"q1": QRELS["q1"]})
    result = evaluate([data, _write(tmp_path / "folder", half)], "bm25", candidates=2)
    assert [c.collection for c in result.collections] == ["tiny", "folder"]
    assert all(isinstance(c, CollectionEvaluation) for c in result.collections)
    means = result.mean_ndcg()
    for name in ("first stage", "bm25"):
        each = [
            next(r["ndcg@10"] for r in c.rows if r["pipeline"] == name) for c in result.collections
        ]
        assert means[name] == pytest.approx(sum(each) / 2)
    assert result.summary().startswith("nDCG@10 x 100 by collection")
    assert f"| mean | | | {100 * means['first stage']:.2f} |" in result.summary()
    assert result.mean_against() is None  # no baseline
    with pytest.raises(InputError, match=r"2 collections \(tiny, folder\): read each"):
        result.rows  # noqa: B018


def test_a_loaded_dataset_is_evaluated_as_its_folder_and_left_as_it_was(tmp_path):
    folder = _write(tmp_path / "tiny", _tiny())
    loaded = load_beir(folder)
    queries = dict(loaded.queries)
    from_data = evaluate(loaded, "bm25", candidates=3, max_queries=2)
    from_folder = evaluate(folder, "bm25", candidates=3, max_queries=2)
    assert loaded.queries == queries  # max_queries cut a copy
    strip = ("mean_ms", "p95_ms", "max_ms", "load_s")
    assert [{k: v for k, v in r.items() if k not in strip} for r in from_data.rows] == [
        {k: v for k, v in r.items() if k not in strip} for r in from_folder.rows
    ]
    assert from_data.collections[0].meta["queries"] == 2
    odd = load_beir(folder, "test:odd")  # the split a dataset was loaded with is reported
    assert evaluate(odd, "bm25").collections[0].meta["split"] == "test:odd"


def test_rerankers_are_names_files_objects_or_labelled(tmp_path):
    pipeline = tmp_path / "mine.toml"
    pipeline.write_text('name = "declared"\n[scorer]\ntype = "coverage"\n')
    result = evaluate(_tiny(), ["bm25", str(pipeline), BM25Scorer(), rerankit.load("text")])
    assert [r["pipeline"] for r in result.rows] == [
        "first stage",
        "bm25",
        "declared",
        "bm25-2",  # an object is shown by its name, numbered when an earlier one has it
        "text",
    ]
    rows = {r["pipeline"]: r["ndcg@10"] for r in result.rows}
    assert rows["bm25"] == rows["bm25-2"]  # the name and the object are one ranker
    labelled = evaluate(_tiny(), {"lexical": "bm25", "mine": pipeline})
    assert [r["pipeline"] for r in labelled.rows] == ["first stage", "lexical", "mine"]
    assert labelled.collections[0].meta["pipelines"]["mine"]["scorers"][0]["type"] == (
        "CoverageScorer"
    )


def test_titles_run_each_reranker_per_layout_over_the_same_candidates():
    result = evaluate(_tiny(), "bm25", titles=["drop", "space"], candidates=2)
    names = [r["pipeline"] for r in result.rows]
    assert names == ["first stage", "bm25 (drop)", "bm25 (space)"]
    assert result.collections[0].meta["titles"] == ["drop", "space"]
    runs = {r.name: r.run for r in result.collections[0].runs}
    assert {q: set(r) for q, r in runs["bm25 (drop)"].items()} == {
        q: set(r) for q, r in runs["first stage"].items()
    }


def test_progress_and_notes_go_to_the_callables_given(tmp_path):
    folder = _write(tmp_path / "tiny", _tiny())
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "\nq9\td1\t1")  # q9 is not in queries.jsonl
    labels, notes, seen = [], [], []

    def progress(label):
        labels.append(label)
        return lambda items: list(items)

    evaluate(folder, "bm25,text", progress=progress, note=notes.append, on_collection=seen.append)
    assert labels == ["bm25", "text"]
    assert notes == [
        f"warning: {qrels}: 1 of its 4 judged queries is not in queries.jsonl and is left "
        "out ('q9')"
    ]
    assert len(seen) == 1 and seen[0].collection == "tiny"


def test_write_gives_the_files_out_writes(tmp_path):
    pytest.importorskip("matplotlib", reason="the chart needs the 'eval' extra")
    result = evaluate(_tiny(), "bm25", candidates=3, out=tmp_path / "during")
    written = result.write(tmp_path / "after")
    assert [p.relative_to(tmp_path / "after") for p in written] == [
        p.relative_to(tmp_path / "during") for p in result.collections[0].written
    ]
    for name in ("runs/first_stage.trec", "runs/bm25.trec"):
        assert (tmp_path / "after" / name).read_text() == (tmp_path / "during" / name).read_text()
    during, after = (
        json.loads((tmp_path / d / "results.json").read_text()) for d in ("during", "after")
    )
    assert {k: v for k, v in during.items() if k != "date"} == {
        k: v for k, v in after.items() if k != "date"
    }
    assert after["results"] == result.rows and after["dataset"] == "tiny"


def test_rerankit_evaluate_is_the_same_function_and_loads_lazily():
    import subprocess
    import sys

    assert rerankit.evaluate is evaluate and "evaluate" in rerankit.__all__
    code = (
        "import sys, rerankit.eval\n"
        "assert 'rerankit.rerankers' not in sys.modules\n"
        "assert rerankit.eval.evaluate.__module__ == 'rerankit.eval.evaluation'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda d: evaluate(d, "bm25,nope"), ConfigError, r"unknown reranker 'nope'"),
        (
            lambda d: evaluate("/no/such/folder", "bm25"),
            InputError,
            r"/no/such/folder: no such folder",
        ),
        (
            lambda d: evaluate(d, "bm25,text", baseline="hybrid"),
            InputError,
            r"^baseline='hybrid' \(--baseline\): is not among the evaluated pipelines "
            r"\('first-stage', 'bm25', 'text'\)",
        ),
        (
            lambda d: evaluate(d, "bm25", titles="space,comma"),
            InputError,
            r"^titles='space,comma' \(--titles\): expected one or more of",
        ),
        (
            lambda d: evaluate(d, "bm25", titles=["space", "none"]),
            InputError,
            r"^titles=\['space', 'none'\] \(--titles\): expected one or more of",
        ),
        (lambda d: evaluate(d, "bm25", candidates=0), InputError, r"candidates: expected a pos"),
        (lambda d: evaluate(d, "bm25", max_queries=-1), InputError, r"max_queries: expected a"),
        (lambda d: evaluate(d, "bm25", engine="ray"), InputError, r"engine=rerankit\.batch\.ray_"),
        (lambda d: evaluate(d, []), InputError, r"rerankers: none given"),
        (lambda d: evaluate(d, 42), InputError, r"rerankers: expected names, .* got int"),
        (lambda d: evaluate({"q": "x"}, "bm25"), InputError, r"data: expected a BEIR-layout"),
        (lambda d: evaluate([d, 3], "bm25"), InputError, r"data: expected a folder .* got int"),
        (lambda d: evaluate(d, {"first stage": "bm25"}), InputError, r"names the first stage"),
    ],
)
def test_bad_input_is_an_error_naming_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call(_tiny())


def test_a_bad_baseline_is_refused_before_any_reranker_loads(tmp_path):
    """The names are checked first: an unloadable reranker is not reached."""
    broken = tmp_path / "broken.toml"
    broken.write_text('[scorer]\ntype = "no-such-scorer"\n')
    with pytest.raises(InputError, match=r"baseline='bm25' \(--baseline\): is not among"):
        evaluate(_tiny(), [str(broken)], baseline="bm25")
    with pytest.raises(ConfigError, match="no-such-scorer"):
        evaluate(_tiny(), [str(broken)])


def test_document_vectors_are_kept_on_disk_as_the_command_keeps_them(tmp_path, monkeypatch):
    """From Python as from the command: the vectors go to a file (here the one named), so a
    second evaluation encodes nothing new; the environment is as it was afterwards."""
    pytest.importorskip("sentence_transformers", reason="the embedding reranker needs torch")
    import os
    import sqlite3

    from rerankit.cache import EMBEDDING_CACHE_ENV

    monkeypatch.delenv(EMBEDDING_CACHE_ENV, raising=False)
    vectors = tmp_path / "vectors.sqlite"

    def stored() -> int:
        with sqlite3.connect(vectors) as db:
            return db.execute("SELECT COUNT(*) FROM rerankit_embedding").fetchone()[0]

    first = evaluate(_tiny(), "embedding", embedding_cache=vectors)
    assert EMBEDDING_CACHE_ENV not in os.environ
    kept = stored()
    assert kept >= len(CORPUS)  # every document's vector
    again = evaluate(_tiny(), "embedding", embedding_cache=vectors)
    assert again.rows[1]["ndcg@10"] == first.rows[1]["ndcg@10"] and stored() == kept


def test_a_reranker_that_cannot_load_fails_before_any_reranker_runs(tmp_path):
    missing = {"scorer": {"type": "cross-encoder", "model": str(tmp_path / "no-such-model")}}
    labels = []

    def progress(label):
        labels.append(label)
        return lambda items: list(items)

    with pytest.raises(ModelLoadError, match="no-such-model: no such folder"):
        evaluate(_tiny(), {"bm25": "bm25", "broken": missing}, progress=progress)
    assert labels == []  # bm25, listed first, never reranked a query
