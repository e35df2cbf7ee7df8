"""Query by query against a baseline: ``Evaluation.per_query()`` and ``differences()``, the
queries ``rerankit eval --baseline`` prints under its table, and ``per_query.csv``."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

import rerankit
from rerankit.cli import main
from rerankit.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO / "examples" / "scifact-mini"


@pytest.fixture(scope="module")
def result():
    return rerankit.evaluate(SCIFACT, "bm25,jaccard", candidates=20, baseline="bm25")


def test_per_query_holds_every_query_s_ndcg_and_difference(result):
    rows = {r["pipeline"]: r["per_query_ndcg@10"] for r in result.rows}
    entries = result.per_query()
    assert [e["query_id"] for e in entries] == list(rows["bm25"])
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    queries = {json.loads(line)["_id"]: json.loads(line)["text"] for line in lines}
    for e in entries:
        q = e["query_id"]
        assert e["query"] == queries[q]
        assert e["ndcg@10"] == {name: rows[name][q] for name in rows}
        assert e["difference"]["jaccard"] == pytest.approx(rows["jaccard"][q] - rows["bm25"][q])
        assert set(e["difference"]) == {"first stage", "jaccard"}  # not the baseline's own
    mean = sum(e["difference"]["jaccard"] for e in entries) / len(entries)
    assert mean == pytest.approx(
        next(a["diff"] for a in result.against if a["pipeline"] == "jaccard")
    )


def test_differences_are_the_largest_either_way(result):
    most = result.differences(n=3)
    assert set(most) == {"first stage", "jaccard"}
    every = [e["difference"]["jaccard"] for e in result.per_query() if e["difference"]["jaccard"]]
    sizes = [abs(q["difference"]) for q in most["jaccard"]]
    assert len(sizes) == 3 and sizes == sorted(
        sorted(map(abs, every), reverse=True)[:3], reverse=True
    )
    # against another baseline: the same queries, the sign turned
    flipped = result.differences(baseline="jaccard", n=3)["bm25"]
    assert [(q["query_id"], -q["difference"]) for q in flipped] == [
        (q["query_id"], pytest.approx(q["difference"])) for q in most["jaccard"]
    ]
    assert result.differences(n=0)["jaccard"] == []
    with pytest.raises(InputError, match="is not among the evaluated pipelines"):
        result.differences(baseline="hybrid")
    with pytest.raises(InputError, match="n: expected a number of queries"):
        result.differences(n=-1)


def test_the_printed_queries_name_the_files_option_in_the_caller_s_words(result):
    """Python's text says ``out=FOLDER`` where the command's says ``--out``."""
    assert "every query's in per_query.csv with out=FOLDER" in str(result)
    assert "--out" not in str(result)


def test_the_command_prints_them_and_writes_per_query_csv(tmp_path, capsys, result):
    out = tmp_path / "results"
    args = ["eval", "--data", str(SCIFACT), "--rerankers", "bm25,jaccard", "--baseline", "bm25"]
    assert main([*args, "--candidates", "20", "--out", str(out), "--no-progress"]) == 0
    printed, said = capsys.readouterr()
    # the table of mean differences is one row per pipeline: its heading says a mean
    assert "minus bm25's: the mean of the queries' differences (± standard error" in printed
    assert "per query (±" not in printed
    below = printed.split("Queries where each differs most from bm25")[1]
    assert "every query's in per_query.csv with --out" in below
    shown = re.findall(r"^\| jaccard \| (\S+) \| ([-+][\d.]+) \| (.*) \|$", below, flags=re.M)
    want = result.differences(n=5)["jaccard"]
    assert [(q, float(d)) for q, d, _ in shown] == [
        (w["query_id"], pytest.approx(100 * w["difference"], abs=0.006)) for w in want
    ]
    assert all(
        w["query"].startswith(text.rstrip("…")) for (_, _, text), w in zip(shown, want, strict=True)
    )
    with open(out / "per_query.csv", newline="") as f:
        table = list(csv.DictReader(f))
    stored = json.loads((out / "results.json").read_text())["results"]
    jaccard = next(r for r in stored if r["pipeline"] == "jaccard")["per_query_ndcg@10"]
    bm25 = next(r for r in stored if r["pipeline"] == "bm25")["per_query_ndcg@10"]
    assert [r["query_id"] for r in table] == list(bm25)
    for r in table:
        q = r["query_id"]
        assert float(r["ndcg@10 jaccard"]) == pytest.approx(jaccard[q], abs=1e-5)
        assert float(r["jaccard minus bm25"]) == pytest.approx(jaccard[q] - bm25[q], abs=1e-5)
    assert f"wrote {out / 'per_query.csv'}" in said


def test_the_evaluation_page_s_example_runs(monkeypatch, capsys, result):
    page = (REPO / "docs" / "evaluation.md").read_text()
    block = page.split("tests/eval/test_per_query.py runs it there) -->\n  ```python\n")[1]
    code = "\n".join(line[2:] for line in block.split("  ```")[0].splitlines())
    monkeypatch.chdir(REPO)
    exec(compile(code, "evaluation.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    want = result.differences(n=3)["jaccard"]
    assert [line.split()[0] for line in lines] == [w["query_id"] for w in want]


def test_the_table_of_differences_applies_the_two_standard_errors_rule(result):
    """Each pipeline's row says better / worse / within noise against the baseline, by the
    documented rule (more than twice its standard error), and the legend says which
    comparison each p-value is."""
    printed = result.table()
    assert (
        "vs bm25: better or worse when the difference is more than 2 x its standard error, "
        "else within noise. p vs bm25: the paired t-test against bm25 (the table above's p "
        "is against the first stage)." in printed
    )
    assert "| pipeline | difference | vs bm25 | p vs bm25 | queries |" in printed
    shown = dict(
        re.findall(
            r"^\| (first stage|jaccard) \| [-+][\d.]+ ± [\d.]+ \| ([a-z ]+) \|", printed, re.M
        )
    )
    for e in result.against:
        beyond = abs(e["diff"]) > 2 * e["se"]
        want = ("better" if e["diff"] > 0 else "worse") if beyond else "within noise"
        assert shown[e["pipeline"]] == e["verdict"] == want
    assert shown == {
        "first stage": "within noise",
        "jaccard": "worse",
    }  # +3.59 ± 2.09, -17.49 ± 5.57


@pytest.mark.parametrize(
    ("diff", "se", "said"),
    [(0.05, 0.02, "better"), (-0.05, 0.02, "worse"), (0.04, 0.02, "within noise"), (0.1, None, "")],
)
def test_the_verdict_of_a_difference(diff, se, said):
    from rerankit.eval.compare import verdict

    assert verdict(diff, se) == said
