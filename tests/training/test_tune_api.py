"""``rerankit.training.tune`` from Python, with no argument parsing: it returns what it chose
and measured, prints nothing, and writes what ``rerankit tune`` writes for the same data."""

from __future__ import annotations

import sys

import pytest
import tomllib

from rerankit.cli import main
from rerankit.training import Reporter, TuneResult, tune

pytest.importorskip("sentence_transformers", reason="tune's embedding needs the 'torch' extra")


@pytest.fixture(autouse=True)
def _embedding_cache(tmp_path_factory, monkeypatch):
    """The embedding cache ``rerankit tune`` sets up in this session's cache folder, so
    that the collection's documents are encoded once for every test that tunes on it."""
    folder = tmp_path_factory.getbasetemp() / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(folder / "embeddings.sqlite"))


def _untimed(text: str) -> str:
    """``text`` with the timing cells of its tables (mean ms, p95 ms) blanked."""
    out, timed = [], []
    for line in text.split("\n"):
        cells = line.split(" | ")
        if "mean ms" in cells:
            timed = [cells.index("mean ms"), cells.index("p95 ms")]
        elif not line.startswith("|"):
            timed = []
        for i in timed if not line.startswith("|---") else ():
            cells[i] = ""
        out.append(" | ".join(cells))
    return "\n".join(out)


def _cli(data, out, capsys) -> str:
    capsys.readouterr()
    args = ["tune", "--data", str(data), "--k", "10", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    return capsys.readouterr().out


def test_tune_returns_the_verdict_the_spec_and_the_figures_the_command_prints(
    tmp_path, synthetic, capsys
):
    """Only the first stage knows which documents are relevant: the searched fusion beats
    the default, and the result says so with the figures the command line prints, the spec
    it writes and the test-split rows it reports."""
    data = synthetic(tmp_path / "data", misleading=True)
    out = tmp_path / "python.toml"
    result = tune(data, candidates=10, out=out)
    assert capsys.readouterr() == ("", "")  # the library prints nothing
    assert isinstance(result, TuneResult) and result.method == "fusion"
    assert result.adopted and result.learned and result.default == "hybrid"
    assert (
        result.verdict.adopt and result.verdict.gain > result.verdict.margin * result.verdict.noise
    )
    assert result.verdict.queries == 30 and len(result.verdict.fold_gains) == 5
    assert result.cross_validation.best is not None and result.chosen.startswith(
        ("weighted_average", "rrf")
    )
    assert [n for n, _ in result.learning_curve] == sorted(n for n, _ in result.learning_curve)
    weights = {s.get("name", s["type"]): s["weight"] for s in result.spec["stages"][0]["scorers"]}
    assert weights["first_stage"] >= 0.5
    assert result.path == out and tomllib.loads(out.read_text()) == result.spec
    assert out.read_text().startswith(f"# {result.comment}\n")

    printed = _cli(data, tmp_path / "cli.toml", capsys)
    written = tomllib.loads((tmp_path / "cli.toml").read_text())
    # the same pipeline, the same file, each named after itself (as serve and eval name it)
    assert result.spec["name"] == "python" and written["name"] == "cli"
    assert (tmp_path / "cli.toml").read_text() == out.read_text().replace('"python"', '"cli"')
    gain = float(printed.split("gain ")[1].split()[0])
    assert gain == pytest.approx(100 * result.verdict.gain, abs=0.005)
    assert f"adopted: {result.chosen} beats the default" in printed
    cli = tmp_path / "cli.toml"  # and how to rerank with what it wrote
    said = f"(rerank with it: `rerankit rank -r {cli}`, `rerankit serve --reranker {cli}`"
    assert said in printed
    # the account the command prints is the result's lines, the test-split report included
    account = "\n".join(result.lines).replace(str(out), str(tmp_path / "cli.toml"))
    # but for the refit advice: a call for the library's caller, a command for the shell
    # on this data, its first stage (the default: not named) and its candidates
    account = account.replace(
        f'rerankit.training.tune("{data}", candidates=10, calibrate=True, out="calibrated.toml")',
        f"rerankit tune --data {data} --candidates 10 --calibrate --out calibrated.toml",
    )
    assert _untimed(printed) == _untimed(account.replace("| python |", "| cli |") + "\n")
    assert result.test_name == "data" and result.test_queries == 10
    rows = {row["pipeline"]: row for row in result.test}
    assert set(rows) == {"first stage", "hybrid", out.stem}
    assert rows[out.stem]["ndcg@10"] > rows["hybrid"]["ndcg@10"]
    cli_tuned = float(printed.split("| cli |")[1].split("|")[0])
    assert cli_tuned == pytest.approx(100 * rows[out.stem]["ndcg@10"], abs=0.006)
    # it weighs the retriever's score, so serving it needs that score: the command says so
    assert result.reads_first_stage
    assert "cli.toml reads the retriever's score" in printed and "--first-stage-field" in printed


def test_tune_writes_the_default_when_learning_cannot_beat_it_and_tells_a_reporter(
    tmp_path, synthetic
):
    data = synthetic(tmp_path / "data", obvious=True)
    heard: list[str] = []
    result = tune(data, k=10, out=tmp_path / "t.toml", reporter=Reporter(say_to=heard.append))
    assert not result.adopted and not result.learned
    assert result.spec == {"name": "t", "stages": [{"reranker": "hybrid"}]}  # t.toml
    assert not result.reads_first_stage  # the default reads texts only
    assert "so this is the default pipeline" in result.comment
    assert any(line.startswith("not adopted:") for line in result.lines)
    assert "\n".join(heard).split("\n") == result.lines  # what the reporter heard, in order
    # served, it answers for `hybrid` too, and the account says so
    assert (
        f"(the default `hybrid`, named 't' after its file: `rerankit serve --reranker "
        f"{tmp_path / 't.toml'}` answers requests naming 't' or `hybrid` with it)"
    ) in result.lines


def test_each_long_step_is_named_before_it_starts_the_test_report_after_wrote(
    tmp_path, synthetic, capsys
):
    """Without progress bars a long step was silent: after `wrote t.toml` tune scored the
    test split for minutes (documents not yet encoded) with nothing said, as if done. Each
    step is now named on the reporter's notes (stderr) before it starts, in order."""
    data = synthetic(tmp_path / "data", obvious=True)
    heard: list[str] = []
    tune(
        data,
        k=10,
        folds=3,
        out=tmp_path / "t.toml",
        reporter=Reporter(say_to=heard.append, note=lambda m: heard.append(f"NOTE {m}")),
    )
    notes = [line for line in heard if line.startswith("NOTE tune: ")]
    assert notes == [
        "NOTE tune: scoring the candidates of the train split's 30 queries",
        "NOTE tune: cross-validating the options on 30 training queries",
        "NOTE tune: the learning curve (fitting on fewer training queries)",
        "NOTE tune: scoring t.toml and the default hybrid on the test split's 10 queries "
        "(the report on them follows)",
    ]
    wrote = next(i for i, line in enumerate(heard) if f"wrote {tmp_path / 't.toml'}" in line)
    scoring = heard.index(notes[-1])
    report = next(i for i, line in enumerate(heard) if line.startswith("\ndata, test split"))
    assert wrote < scoring < report
    # the command says them on stderr, --no-progress or not
    capsys.readouterr()
    args = ["tune", "--data", str(data), "--k", "10", "--folds", "3", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "c.toml")]) == 0
    err = capsys.readouterr().err
    assert "rerankit: tune: scoring c.toml and the default hybrid on the test split's" in err


def test_the_test_split_report_is_in_the_account_with_recall_at_the_depth_evaluated(
    tmp_path, synthetic
):
    """A first stage that gives 16 candidates a query, asked for 20: the held-out table
    says recall@16, as ``rerankit eval`` does, and is part of the lines a reporter hears;
    what reading the collection found amiss is in ``notes``."""
    data = synthetic(tmp_path / "data", obvious=True)
    qrels = data / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q30\td0-7\t-1\n")  # read as 0: nothing changes
    heard: list[str] = []
    result = tune(
        data,
        candidates=20,
        folds=3,
        out=tmp_path / "t.toml",
        reporter=Reporter(say_to=heard.append),
    )
    assert all("recall@16" in row and "recall@20" not in row for row in result.test)
    assert "\n".join(heard).split("\n") == result.lines
    assert len(result.notes) == 1 and f"{qrels}: 1 judgment has a negative grade" in result.notes[0]
    heading = (
        "data, test split, 10 queries; first stage: the dataset's run (first.run.trec), "
        "top 16 (the first stage had no more; candidates=20 (--candidates))"
    )
    at = result.lines.index(heading)
    assert result.lines[at + 2].startswith(
        "| pipeline | ndcg@10 | mrr@10 | recall@10 | recall@16 |"
    )
    assert [line.split(" | ")[0] for line in result.lines[at + 4 : at + 7]] == [
        "| first stage",
        "| hybrid",
        "| t",
    ]
    below = result.lines[at + 7 :]
    assert below[1].startswith("ECE: how far the probability scores are")
    # when hybrid encoded documents (the cache's own count says), the table says so under
    # it, so the times are not read as the pipelines' speeds; else nothing is said
    rows = {row["pipeline"]: row for row in result.test}
    encoded = (rows["hybrid"].get("embedding_cache") or {}).get("misses", 0)
    if encoded:
        assert below[2].startswith(f"(mean ms, p95 ms: hybrid encoded {encoded} documents")
        assert below[4].startswith("nDCG@10 x 100 minus hybrid's")
    else:
        assert below[3].startswith("nDCG@10 x 100 minus hybrid's")


def test_metrics_are_reported_on_the_test_split_as_eval_reports_them(tmp_path, synthetic, capsys):
    """`tune --metrics` takes what `eval --metrics` takes, parsed by the same code: the
    test split's table gets the columns (the choice stays on nDCG@10), and a mistake is
    the same usage error."""
    data = synthetic(tmp_path / "data", obvious=True)
    result = tune(data, k=10, folds=3, out=tmp_path / "t.toml", metrics="NDCG@5,map@10")
    assert all(row["ndcg@5"] >= 0 and "map@10" in row for row in result.test)
    header = next(line for line in result.lines if line.startswith("| pipeline |"))
    assert header.startswith("| pipeline | ndcg@10 | mrr@10 | recall@10 | ndcg@5 | map@10 |")
    capsys.readouterr()
    args = ["tune", "--data", str(data), "--k", "10", "--folds", "3", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "c.toml"), "--metrics", "precision@3"]) == 0
    assert "| recall@10 | precision@3 |" in capsys.readouterr().out
    errors = []
    for command in (["tune", "--data", str(data)], ["eval", "--data", str(data)]):
        with pytest.raises(SystemExit) as usage:
            main([*command, "--metrics", "ndcg"])
        assert usage.value.code == 2
        errors.append(capsys.readouterr().err.split("error: ", 1)[1].split("; see ")[0])
    assert errors[0] == errors[1] and "metric 'ndcg' needs a cut-off: ndcg@10" in errors[0]
    with pytest.raises(ValueError, match="unknown metric 'f1@5'"):  # before any work
        tune(tmp_path / "not-read", metrics=["f1@5"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"folds": 2}, "folds=2 (--folds): must be at least 3"),
        ({"strategies": ("bm25",)}, "strategies=('bm25',) (--strategies): two or more of"),
        ({"method": "forest"}, "method='forest' (--method): must be one of"),
        ({"unjudged": "all"}, "unjudged='all' (--unjudged): must be one of"),
        ({"adopt_margin": 0}, "adopt_margin=0 (--adopt-margin): must be a positive number"),
        (
            {"train_split": "test"},
            "train_split='test' (--train-split) and test_split='test' (--test-split) must differ",
        ),
        ({"out": "pipeline.json"}, "out='pipeline.json' (--out): tune writes a TOML pipeline"),
        ({"candidates": 0}, "candidates=0 (--candidates): must be a positive integer"),
        ({"k": 0}, "candidates=0 (--candidates): must be a positive integer"),  # its earlier name
        ({"max_queries": 0}, "max_queries=0 (--max-queries): must be a positive integer"),
    ],
)
def test_options_that_cannot_work_are_refused_before_any_work(tmp_path, options, message):
    """A Python caller never typed a flag: the error names the keyword it passed, with its
    value, and the command line's flag beside it."""
    with pytest.raises(ValueError) as refused:
        tune(tmp_path / "not-read", **options)
    assert message in str(refused.value)


def test_an_out_that_is_a_folder_is_named_as_the_keyword_passed(tmp_path):
    with pytest.raises(ValueError) as refused:
        tune(tmp_path / "not-read", out=tmp_path)
    assert str(refused.value).startswith(f"out={str(tmp_path)!r} (--out): is a folder")


def test_candidates_or_its_earlier_name_but_not_both(tmp_path):
    with pytest.raises(TypeError, match="candidates= or its earlier name k="):
        tune(tmp_path / "not-read", candidates=10, k=10)


def test_tune_keeps_document_vectors_on_disk_as_the_command_does(tmp_path, synthetic, monkeypatch):
    """From Python, as from ``rerankit tune``: vectors go to embeddings.sqlite in the cache
    directory unless told otherwise, so a second tune of the same folder encodes nothing;
    the environment is as it was afterwards."""
    import os
    import sqlite3

    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE")
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    data = synthetic(tmp_path / "data", obvious=True)
    tune(data, k=10, out=tmp_path / "t.toml", folds=3)
    assert "RERANKIT_EMBEDDING_CACHE" not in os.environ
    with sqlite3.connect(tmp_path / "cache" / "embeddings.sqlite") as db:
        assert (
            db.execute("SELECT COUNT(*) FROM rerankit_embedding").fetchone()[0] >= 10
        )  # the candidates
    from rerankit.cache import embedding_cache_file

    # the choices TuneOptions.embedding_cache takes (--embedding-cache, --no-embedding-cache)
    assert embedding_cache_file(tmp_path / "e.sqlite") == str(tmp_path / "e.sqlite")
    assert embedding_cache_file(False) == ""
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", "")  # set: left as it is
    assert embedding_cache_file(None) is None


def test_a_learned_ranker_that_reads_the_retriever_says_so(tmp_path, synthetic):
    data = synthetic(tmp_path / "data", misleading=True)
    result = tune(
        data, method="ltr", candidates=10, folds=3, keep_learned=True, out=tmp_path / "l.toml"
    )
    features = result.model_report["features"]
    assert any(f.startswith("first_stage") for f in features)  # the core features have it
    assert result.learned and result.reads_first_stage
    # every file it wrote is named in the account: the model, its report and the pipeline
    for name in ("l.lgb.txt", "l.lgb.json", "l.toml"):
        assert (tmp_path / name).is_file() and f"wrote {tmp_path / name}" in result.lines


def test_strategies_read_hyphens_underscores_and_spaces_alike():
    """``first-stage`` (as ``--baseline`` spells it) names the same strategy as
    ``first_stage``; an unknown one is still refused, named."""
    from rerankit.training.tuning import TuneOptions

    for given in ("first-stage,bm25", "first_stage, bm25", ("first stage", "bm25")):
        options = TuneOptions(data="d", strategies=given)
        assert options.strategy_list == ["first_stage", "bm25"]
        options.check()
    with pytest.raises(ValueError, match="unknown: \\['cosine'\\]"):
        TuneOptions(data="d", strategies="bm25,cosine").check()


def test_learning_to_rank_without_lightgbm_is_refused_before_any_work(
    tmp_path, synthetic, monkeypatch
):
    """The missing extra is said first, not after the candidates' features were built
    (minutes on a real collection)."""
    from rerankit.errors import MissingDependencyError

    data = synthetic(tmp_path / "data", obvious=True)
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # as if not installed
    heard: list[str] = []
    with pytest.raises(MissingDependencyError, match="lightgbm"):
        tune(data, method="ltr", out=tmp_path / "l.toml", reporter=Reporter(say_to=heard.append))
    assert heard == [] and not (tmp_path / "l.toml").exists()
