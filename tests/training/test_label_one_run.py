"""One retriever's run over all of a company's queries, given to ``label`` for the folder of
unjudged queries and to ``tune`` for the folder of labels and the folder of human
judgments (``--test-data``): each folder reads its own queries' lines. ``tune`` warns that
it ranks other candidates than the judge saw by comparing the candidates, not file names."""

from __future__ import annotations

import json
import re
import shutil

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.eval.data import load_beir
from rerankit.llm.testing import FakeLLMServer, Reply

K = 5
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')


@pytest.fixture(autouse=True)
def _embedding_cache(tmp_path_factory, monkeypatch):
    """The session's embedding cache, as tests/training/test_tune_api.py keeps it: the
    synthetic collection's documents are encoded once for every test that tunes on it."""
    folder = tmp_path_factory.getbasetemp() / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("RERANKIT_EMBEDDING_CACHE", str(folder / "embeddings.sqlite"))


def _judge(request):
    """Grades 9 the first two documents of each topic, 2 the rest."""
    doc = json.loads(DOC.search(request.prompt).group(1))
    score = 9 if doc.endswith(("-0", "-1")) else 2
    return Reply(text=json.dumps({"id": doc, "score": score}), input_tokens=50, output_tokens=5)


def _folder(source, target, qids, qrels=()):
    """A folder of ``source``'s corpus with the queries ``qids`` and the splits ``qrels``
    (names) of ``source`` cut to those queries; no run file."""
    target.mkdir()
    shutil.copy(source / "corpus.jsonl", target / "corpus.jsonl")
    rows = [json.loads(line) for line in (source / "queries.jsonl").read_text().splitlines()]
    keep = [r for r in rows if r["_id"] in qids]
    (target / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    for split in qrels:
        (target / "qrels").mkdir(exist_ok=True)
        lines = (source / "qrels" / f"{split}.tsv").read_text().splitlines()
        kept = [lines[0], *(x for x in lines[1:] if x.split("\t")[0] in qids)]
        (target / "qrels" / f"{split}.tsv").write_text("\n".join(kept) + "\n")
    return target


@pytest.fixture
def company(tmp_path, synthetic):
    """``pool`` (q0-q19, nobody judged them), ``few`` (q20-q29 judged for training, q30-q39
    for testing) and ``run``: the retriever's run over all 40 queries and one more."""
    whole = synthetic(tmp_path / "whole")
    pool = _folder(whole, tmp_path / "pool", {f"q{i}" for i in range(20)})
    few = _folder(whole, tmp_path / "few", {f"q{i}" for i in range(20, 40)}, ("train", "test"))
    run = tmp_path / "retriever.run"
    run.write_text((whole / "first.run.trec").read_text() + "q99 Q0 d0-0 1 1.0 fs\n")
    return pool, few, run


def _label(pool, run, out, tmp_path, monkeypatch, server):
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    judge = tmp_path / "judge.toml"
    judge.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        f'base_url = "{server.openai_url}"\napi_key_env = "RERANKIT_TEST_KEY"\n'
        f'cache = "{tmp_path / "judgments.sqlite"}"\n'
    )
    args = ["label", "--data", str(pool), "--judge", str(judge), "--first-stage", str(run)]
    return main([*args, "--candidates", str(K), "--out", str(out), "--no-progress"])


def test_label_and_tune_take_a_run_of_more_queries_than_each_folder(
    tmp_path, company, monkeypatch, capsys
):
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    pool, few, run = company
    labels = tmp_path / "labels"
    with FakeLLMServer(responder=_judge) as server:
        assert _label(pool, run, labels, tmp_path, monkeypatch, server) == 0, (
            capsys.readouterr().err
        )
    assert set(load_beir(labels, "train").queries) == {f"q{i}" for i in range(20)}
    capsys.readouterr()
    tuned = tmp_path / "tuned.toml"
    argv = ["tune", "--data", str(labels), "--first-stage", str(run), "--test-data", str(few)]
    code = main([*argv, "--candidates", str(K), "--out", str(tuned), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "few, test split, 10 queries" in captured.out  # reported on the human judgments
    # the ECE under that table was measured on them, so its refit advice names their folder
    # (the judge's labels are what the ECE is not about); without --test-data it names
    # --data's (tests/training/test_tune_api.py)
    advice = captured.out.split("refit before relying on a threshold")[1].split("\n")[0]
    assert f"rerankit tune --data {few} --first-stage {run} --candidates {K}" in advice
    # the run ranks few's training queries too: tune's own splits, not the test split's halves
    assert "--calibrate" in advice and "--train-split" not in advice
    assert str(labels) not in advice
    assert "judged the candidates" not in captured.out + captured.err  # the same candidates


def test_tune_compares_the_candidates_the_judge_saw_not_the_file_names(
    tmp_path, company, monkeypatch, capsys
):
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    pool, _, run = company
    labels = tmp_path / "labels"
    with FakeLLMServer(responder=_judge) as server:
        assert _label(pool, run, labels, tmp_path, monkeypatch, server) == 0

    def tune(source):
        capsys.readouterr()
        argv = ["tune", "--data", str(labels), "--first-stage", str(source), "--no-progress"]
        assert main([*argv, "--candidates", str(K), "--out", str(tmp_path / "t.toml")]) == 0
        captured = capsys.readouterr()
        return captured.out + captured.err

    # the same candidates from another file: nothing to say
    copy = tmp_path / "labelled-queries.run"
    copy.write_text("".join(x for x in run.read_text().splitlines(True) if int(x[1:3]) < 20))
    assert "judged the candidates" not in tune(copy)
    # other candidates from the file of the same name: said, with how many queries differ
    lines = run.read_text().splitlines(True)
    run.write_text(
        "".join(x.replace("d0-0 ", "d4-7 ") if x.startswith("q0 ") else x for x in lines)
    )
    assert (
        f"judged the candidates of first stage {run}, top {K}; this run ranks "
        f"--first-stage {run}, --candidates {K}, which gives "
        "other candidates for 1 of the 20 labelled queries: pass the same to learn and "
        "measure on the candidates the judge saw"
    ) in tune(run)


@pytest.mark.slow  # about 5 s: learning to rank
def test_human_judgments_and_labels_joined_as_learning_md_shows(
    tmp_path, company, monkeypatch, capsys
):
    """learning.md's recipe: label the pool, copy the labels, `cat` both qrels files (the
    repeated header is skipped; the people's grade wins a pair in both) and both queries
    files, then tune with --unjudged negative on the people's and the judge's queries."""
    pytest.importorskip("sentence_transformers", reason="tune's embedding needs 'torch'")
    pytest.importorskip("lightgbm", reason="learning to rank needs the 'learn' extra")
    pool, few, run = company
    labels, mixed = tmp_path / "labels", tmp_path / "mixed"
    with FakeLLMServer(responder=_judge) as server:
        assert _label(pool, run, labels, tmp_path, monkeypatch, server) == 0
    shutil.copytree(labels, mixed, symlinks=True)  # cp -r
    human = few / "qrels" / "train.tsv"
    human.write_text(human.read_text() + "q0\td0-3\t1\n")  # a pair the judge graded too
    for name in ("qrels/train.tsv", "queries.jsonl"):  # cat
        (mixed / name).write_text((labels / name).read_text() + (few / name).read_text())
    data = load_beir(mixed, "train")
    assert len(data.queries) == 30 and data.qrels["q0"]["d0-3"] == 1  # the judge said 0
    assert "judges document 'd0-3' twice with different grades" in data.notes[0]
    capsys.readouterr()
    argv = ["tune", "--data", str(mixed), "--method", "ltr", "--unjudged", "negative"]
    argv += ["--first-stage", str(run), "--candidates", str(K), "--test-data", str(few)]
    assert main([*argv, "--out", str(tmp_path / "mixed.toml"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "learning to rank on 30 train queries" in printed
    assert "few, test split, 10 queries" in printed
