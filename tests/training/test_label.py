"""``rerankit label`` through the real OpenAI SDK against a local provider that answers as an
oracle from the collection's own qrels (which the labeller is never given)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

pytest.importorskip("openai", reason="the judge runs through the 'openai' extra")

from rerankit.cli.main import main
from rerankit.errors import InputError
from rerankit.eval.data import load_beir, load_qrels
from rerankit.llm.testing import FakeLLMServer, Reply
from rerankit.training.labelling import check_budget, grade_pointwise

K = 5
QUERY = re.compile(r'Query \(a JSON string\): ("(?:[^"\\]|\\.)*")')
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')


class Oracle:
    """Grades 9 what the qrels judge relevant and 1 the rest; documents whose id is in
    ``unreadable`` get an answer with no score in it."""

    def __init__(self, folder, unreadable=()):
        data = load_beir(folder, "train")
        self.by_text = {}
        for qid, text in data.queries.items():
            self.by_text.setdefault(text, set()).update(
                d for d, g in data.qrels[qid].items() if g > 0
            )
        self.unreadable = set(unreadable)
        self.seen: list[str] = []

    def __call__(self, request):
        query = json.loads(QUERY.search(request.prompt).group(1))
        doc = json.loads(DOC.search(request.prompt).group(1))
        self.seen.append((query, doc))
        if doc in self.unreadable:
            return Reply(text="I cannot tell.", input_tokens=100, output_tokens=5)
        score = 9 if doc in self.by_text[query] else 1
        return Reply(
            text=json.dumps({"id": doc, "score": score}), input_tokens=100, output_tokens=8
        )


@pytest.fixture
def collection(tmp_path, synthetic):
    return synthetic(tmp_path / "data")


def judge_file(tmp_path, server, monkeypatch, model="gpt-4o-mini", kind="pointwise"):
    monkeypatch.setenv("RERANKIT_TEST_KEY", "k")
    path = tmp_path / "judge.toml"
    path.write_text(
        "[scorer]\n"
        f'type = "llm_{kind}"\n'
        'provider = "openai"\n'
        f'model = "{model}"\n'
        f'base_url = "{server.openai_url}"\n'
        'api_key_env = "RERANKIT_TEST_KEY"\n'
        f'cache = "{tmp_path / "judgments.sqlite"}"\n'
    )
    return path


def run_label(collection, judge, out, *extra):
    args = ["label", "--data", str(collection), "--judge", str(judge), "--k", str(K)]
    return main([*args, "--out", str(out), "--no-progress", *extra])


def test_labels_are_the_judges_grades_and_the_folder_is_a_dataset(
    tmp_path, collection, monkeypatch, capsys
):
    oracle = Oracle(collection)
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=oracle) as server:
        assert run_label(collection, judge_file(tmp_path, server, monkeypatch), out) == 0
    err = capsys.readouterr().err
    assert "up to 150 calls" in err and "$" in err  # the estimate, printed first
    human = load_beir(collection, "train")
    made = load_qrels(out / "qrels" / "train.tsv")
    assert set(made) == set(human.queries)  # every training query, nothing else
    for qid, labels in made.items():
        assert len(labels) == K
        relevant = oracle.by_text[human.queries[qid]]  # queries with one text share them
        assert labels == {d: grade_pointwise(9 if d in relevant else 1) for d in labels}
    assert any(g == 3 for labels in made.values() for g in labels.values())
    report = json.loads((out / "label_report.json").read_text())
    # queries that share a text share judgments: the cache answers the repeats
    assert report["estimated_calls"] == 30 * K == report["calls"] + report["cache_hits"]
    assert report["calls"] == len(oracle.seen) == len(set(oracle.seen)) < 30 * K
    assert report["failed"] == 0 and report["labels"] == 30 * K
    assert report["input_tokens"] == 100 * report["calls"]  # the provider's counts
    assert report["cost_usd"] == pytest.approx((100 * 0.15 + 8 * 0.60) * report["calls"] / 1e6)
    # the learning commands read it as it is
    data = load_beir(out, "train")
    assert data.qrels == made and len(data.corpus) == len(human.corpus)
    tuned = tmp_path / "tuned.toml"
    tune = ["tune", "--data", str(out), "--train-split", "train", "--method", "fusion"]
    assert main([*tune, "--k", "10", "--out", str(tuned), "--no-progress"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert tuned.is_file() and "no test split" in printed
    # tune ranks another depth than the judge saw, and says so
    said = (
        f"judged the candidates of first stage auto, top {K}; this run ranks "
        "--first-stage auto, --candidates 10"
    )
    assert said in captured.out + captured.err
    assert report["first_stage"] == "auto" and report["candidates"] == K
    # a judge's labels: adopting asks for twice the noise, and says so
    assert re.search(r"beats the default by more than 2(\.\d+)? x the noise", printed)
    assert "adopted only when the gain exceeds twice the noise" in printed
    # and reports on the judged collection's own test queries when told where they are
    assert (
        main(
            [
                *tune,
                "--k",
                "10",
                "--out",
                str(tuned),
                "--no-progress",
                "--test-data",
                str(collection),
            ]
        )
        == 0
    )
    assert "test split, 10 queries" in capsys.readouterr().out


CHUNKS = re.compile(
    r"Chunks \(JSON array\):\n(.*)\n\nQuestion \(a JSON string\): (\".*\")\s*$", re.S
)


class ListwiseOracle:
    """Orders a window: what the qrels judge relevant first (best grade first), then the
    rest in the reverse of the order it was given, so the order differs from the input's."""

    def __init__(self, folder):
        data = load_beir(folder, "train")
        self.grades = {}  # query text -> document text -> grade
        for qid, text in data.queries.items():
            judged = self.grades.setdefault(text, {})
            judged.update({data.text(d): g for d, g in data.qrels[qid].items()})
        # (query text, its candidates' texts in the order given) -> the texts, best first
        self.orders: dict[tuple[str, tuple[str, ...]], list[str]] = {}

    def __call__(self, request):
        chunks, question = CHUNKS.search(request.prompt).groups()
        texts, query = json.loads(chunks), json.loads(question)
        grades = self.grades[query]
        order = sorted(range(len(texts)), key=lambda i: (-grades.get(texts[i], 0), -i))
        self.orders[query, tuple(texts)] = [texts[i] for i in order]
        answer = {"reranked_indices": order, "is_rejected": False, "rejection_reason": ""}
        return Reply(text=json.dumps(answer), input_tokens=300, output_tokens=20)


def test_a_listwise_order_becomes_grades_by_position(tmp_path, collection, monkeypatch):
    data = load_beir(collection, "train")
    assert len({data.text(d) for d in data.corpus}) == len(data.corpus)  # texts name them
    oracle = ListwiseOracle(collection)
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=oracle) as server:
        judge = judge_file(tmp_path, server, monkeypatch, kind="listwise")
        assert run_label(collection, judge, out, "--positions", "1,3") == 0
    made = load_qrels(out / "qrels" / "train.tsv")
    assert set(made) == set(data.queries)
    moved = 0
    for qid, labels in made.items():
        given = tuple(data.text(d) for d in labels)  # labels are in the candidates' order
        order = oracle.orders[data.queries[qid], given]
        assert len(labels) == len(order) == K
        expected = {t: 2 if r < 1 else 1 if r < 3 else 0 for r, t in enumerate(order)}
        assert {data.text(d): g for d, g in labels.items()} == expected
        moved += list(given) != order
    assert moved  # the judge reordered the candidates of some queries
    report = json.loads((out / "label_report.json").read_text())
    assert report["judge"] == "listwise" and report["failed"] == 0


def test_a_run_stopped_by_max_calls_writes_what_it_did_and_resumes(
    tmp_path, collection, monkeypatch, capsys
):
    oracle = Oracle(collection)
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=oracle) as server:
        judge = judge_file(tmp_path, server, monkeypatch)
        # stopped partly: what it labelled is written, and the exit status says so (3)
        assert run_label(collection, judge, out, "--max-calls", "12") == 3
        first = load_qrels(out / "qrels" / "train.tsv")
        report = json.loads((out / "label_report.json").read_text())
        assert len(first) == 2 and report["calls"] == 10  # a third query would pass 12
        assert report["stopped"].startswith("max calls")
        assert "run again with a higher --max-calls to go on" in capsys.readouterr().err
        assert run_label(collection, judge, out) == 0  # resumes: the cache answers
    report = json.loads((out / "label_report.json").read_text())
    assert report["cache_hits"] >= 10 and report["calls"] + report["cache_hits"] == 30 * K
    assert len(oracle.seen) == len(set(oracle.seen))  # nothing judged twice
    final = load_qrels(out / "qrels" / "train.tsv")
    assert len(final) == 30 and all(final[q] == first[q] for q in first)


def test_failed_judgments_are_counted_and_left_out(tmp_path, collection, monkeypatch, capsys):
    unreadable = {"d0-1", "d2-3"}
    oracle = Oracle(collection, unreadable)
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=oracle) as server:
        # partly labelled: exit 3, as a run that --budget stopped
        assert run_label(collection, judge_file(tmp_path, server, monkeypatch), out) == 3
    err = capsys.readouterr().err  # the reasons are printed, not only counted
    assert re.search(
        r"label: failed: query \S+: document \d+ \(id '\S+'\): no score \(.*I cannot", err
    )
    made = load_qrels(out / "qrels" / "train.tsv")
    asked = [d for _, d in oracle.seen if d in unreadable]
    assert asked  # the oracle was asked about them ...
    assert not unreadable & {d for labels in made.values() for d in labels}  # ... not written
    report = json.loads((out / "label_report.json").read_text())
    assert report["failed"] == len(asked) and report["labels"] == 30 * K - len(asked)


def test_a_budget_without_a_price_names_the_keyword_to_pass_it_by():
    """label() and check_budget are called from Python too: the keyword, with the flag."""
    judge = SimpleNamespace(client=SimpleNamespace(model="house-model"))
    with pytest.raises(InputError) as refused:
        check_budget(judge, 1.0, prices={})
    assert str(refused.value) == (
        "no price for model 'house-model': pass its prices with prices= (--prices) to use a budget"
    )
    check_budget(judge, 1.0, prices={"house-model": (1.0, 2.0)})  # priced: taken


def test_dry_run_and_a_budget_without_a_price(tmp_path, collection, monkeypatch, capsys):
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=Oracle(collection)) as server:
        judge = judge_file(tmp_path, server, monkeypatch, model="house-model")
        assert run_label(collection, judge, out, "--dry-run") == 0
        said = capsys.readouterr().err
        assert "cost unknown (no list price for model 'house-model': --prices FILE)" in said
        assert not out.exists()
        assert run_label(collection, judge, out, "--budget", "1") == 1
        said = capsys.readouterr().err
        assert "no price for model 'house-model': pass its prices with --prices to use" in said
        # the dry run refuses the same budget, after its estimate
        assert run_label(collection, judge, out, "--budget", "1", "--dry-run") == 1
        said = capsys.readouterr().err
        assert "calls, about" in said and "no price for model 'house-model'" in said
        unpriced = tmp_path / "unpriced"  # without a budget it runs, and says what it knows
        assert run_label(collection, judge, unpriced, "--max-queries", "1") == 0
        assert "1/1 queries, 5 labels, 0 failed, 5 calls (0 cached), cost unknown in" in (
            capsys.readouterr().err
        )
        assert json.loads((unpriced / "label_report.json").read_text())["cost_usd"] is None
        prices = tmp_path / "prices.json"
        prices.write_text(json.dumps({"house-model": {"input": 1000.0, "output": 0.0}}))
        # $1000 per million input tokens: 500 tokens, $0.50, a query
        assert run_label(collection, judge, out, "--budget", "2", "--prices", str(prices)) == 3
        report = json.loads((out / "label_report.json").read_text())
        assert report["stopped"].startswith("budget") and 0 < report["labelled_queries"] < 30
        assert report["cost_usd"] == pytest.approx(report["input_tokens"] * 1000 / 1e6)
        assert report["cost_usd"] <= 2


def test_a_dry_run_needs_no_api_key_and_a_real_run_still_does(
    tmp_path, collection, monkeypatch, capsys
):
    """The estimate sends nothing, so it runs before a key is set; the labelling itself
    still refuses, naming the key, and nothing is written either way."""
    pytest.importorskip("openai")
    for name in ("OPENAI_API_KEY", "RERANKIT_TEST_KEY"):
        monkeypatch.delenv(name, raising=False)
    default_key = tmp_path / "judge.toml"  # the shipped judge's form: OpenAI's own variable
    default_key.write_text('[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\n')
    named_key = tmp_path / "named.toml"
    named_key.write_text(
        '[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\napi_key_env = "RERANKIT_TEST_KEY"\n'
    )
    out = tmp_path / "labelled"
    for judge, missing in ((default_key, "OPENAI_API_KEY"), (named_key, "RERANKIT_TEST_KEY")):
        assert run_label(collection, judge, out, "--dry-run") == 0
        said = capsys.readouterr().err
        assert "calls, about" in said
        # warned now, the moment the set-up is checked, that the real run would stop
        warning = next(line for line in said.splitlines() if "rerankit: warning:" in line)
        assert warning.startswith(
            f"rerankit: warning: without --dry-run this stops: {judge}: scorer: "
        )
        assert missing in warning
        # a few hundredths of a cent at gpt-4o-mini's price: said, not rounded to $0.00
        cost = float(re.search(r"tokens, about \$([0-9.]+)\b", said).group(1))
        assert 0 < cost < 0.01
        assert run_label(collection, judge, out) != 0
        assert missing in capsys.readouterr().err
        assert not out.exists()
    from rerankit.llm.base import KEYS_OPTIONAL

    assert KEYS_OPTIONAL.get() is False  # the estimate's leave is not kept


def test_a_run_where_every_judgment_failed_says_why_and_fails(
    tmp_path, collection, monkeypatch, capsys
):
    out = tmp_path / "labelled"
    with FakeLLMServer(responder=lambda r: Reply(status=500, text="judge is down")) as server:
        judge = judge_file(tmp_path, server, monkeypatch)
        with judge.open("a") as f:  # one attempt, so the failures come at once
            f.write("retry = { attempts = 1 }\n")
        assert run_label(collection, judge, out, "--max-queries", "2") == 1
    err = capsys.readouterr().err
    assert "rerankit label: error: no label written: all 10 judgments failed" in err
    assert "judge is down" in err and "label: wrote" not in err
    report = json.loads((out / "label_report.json").read_text())
    assert report["labels"] == 0 and "HTTP 500" in report["failure_reasons"][0]


def test_tune_is_told_when_it_ranks_other_candidates_than_the_judge_saw(tmp_path):
    from rerankit.training.labelling import first_stage_mismatch

    run = tmp_path / "candidates.jsonl"
    run.write_text("")
    report = {"first_stage": str(run.resolve()), "candidates": 10}
    (tmp_path / "label_report.json").write_text(json.dumps(report))
    assert first_stage_mismatch(tmp_path, str(run), 10) is None
    said = first_stage_mismatch(tmp_path, "bm25", 10)
    assert "ranks first_stage='bm25' (--first-stage), candidates=10 (--candidates)" in said
    assert first_stage_mismatch(tmp_path, str(run), 20) is not None
    assert first_stage_mismatch(tmp_path / "nowhere", "bm25", 10) is None  # not labelled


@pytest.mark.parametrize("written", ["[1, 2]", '"made"', "{not json", ""])
def test_a_label_report_that_is_no_record_is_read_alike_by_every_reader(tmp_path, written):
    """``label_report.json`` is read by one reader: what it spent and which candidates it
    judged agree that a file holding no JSON object records nothing (neither raises)."""
    from rerankit.training.labelling import first_stage_mismatch, read_label_report, spent_on

    (tmp_path / "label_report.json").write_text(written)
    assert read_label_report(tmp_path) is None
    assert spent_on(tmp_path).calls == 0
    assert first_stage_mismatch(tmp_path, "bm25", 10) is None
    (tmp_path / "label_report.json").write_text('{"first_stage": "bm25", "candidates": 10}')
    assert read_label_report(tmp_path) == {"first_stage": "bm25", "candidates": 10}
    assert first_stage_mismatch(tmp_path, "bm25", 20) is not None


def test_the_example_local_judge_serves_label_on_the_port_it_is_given(
    tmp_path, collection, monkeypatch
):
    """examples/learn/local_judge.py, started as docs/learning.md starts it (here on a free
    port): `rerankit label` reads its answers with no API key set, every candidate gets a
    label, and a document with more of the query's words gets a grade at least as high."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples" / "learn"
    shipped = (examples / "local_judge.toml").read_text()
    assert 'base_url = "http://127.0.0.1:8011/v1"' in shipped  # the script's default port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = tmp_path / "judge.toml"
    judge.write_text(shipped.replace(":8011/", f":{port}/"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = subprocess.Popen(
        [sys.executable, str(examples / "local_judge.py"), "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert f"judge listening at http://127.0.0.1:{port}/v1" in server.stdout.readline()
        assert run_label(collection, judge, tmp_path / "labels") == 0
    finally:
        server.terminate()
        server.wait(timeout=10)
    data = load_beir(collection, "train")
    made = load_qrels(tmp_path / "labels" / "qrels" / "train.tsv")
    assert set(made) == set(data.queries) and all(len(v) == K for v in made.values())

    def overlap(qid, doc):
        words = lambda text: set(re.findall(r"\w+", text.lower()))  # noqa: E731
        asked = words(data.queries[qid])
        return len(asked & words(data.text(doc))) / len(asked)

    for qid, labels in made.items():
        ranked = sorted(labels, key=lambda d: overlap(qid, d))
        assert [labels[d] for d in ranked] == sorted(labels[d] for d in ranked)


def test_a_judge_files_mistake_is_named_as_the_file_has_it(tmp_path, collection, capsys):
    """A judge file is one [scorer] table: its mistakes are located there (``scorer``), not
    in a ``stages[0]`` the file does not have."""
    judge = tmp_path / "judge.toml"
    judge.write_text('[scorer]\ntype = "llm_pointwise"\nprovider = "openai"\nmodle = "x"\n')
    assert run_label(collection, judge, tmp_path / "out", "--dry-run") == 1
    err = capsys.readouterr().err
    assert f"error: {judge}: scorer: an llm_pointwise scorer has no key 'modle'" in err
    assert "stages[0]" not in err
