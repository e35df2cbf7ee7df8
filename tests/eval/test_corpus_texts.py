"""A corpus whose texts sit under other field names is refused, naming the fields found,
instead of being ranked as empty documents; a corpus where only some documents have no
text is read, with a note counting them."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from rerankit.cli.main import main
from rerankit.errors import InputError
from rerankit.eval import load_beir
from rerankit.training.clicks.from_log import read_corpus

HEAD = "query-id\tcorpus-id\tscore\n"


def _collection(folder, docs):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha"}\n')
    (folder / "qrels" / "test.tsv").write_text(HEAD + "q1\td1\t1\nq1\td2\t0\n")
    return folder


COMPANY = [  # a company's export: its own field names
    {"_id": "d1", "headline": "alpha", "body": "alpha beta"},
    {"_id": "d2", "headline": "gamma", "body": "delta"},
]


def test_a_corpus_with_no_text_field_is_an_error_naming_the_fields_found(tmp_path):
    folder = _collection(tmp_path / "data", COMPANY)
    with pytest.raises(InputError) as caught:
        load_beir(folder)
    assert str(caught.value) == (
        f"{folder / 'corpus.jsonl'}:1: the document has no 'text' field (found 'headline', "
        "'body'), and no document of the file has one: BEIR files name a document's text "
        "'text' and its title 'title'; rename the fields"
    )


def test_eval_with_a_run_refuses_it_instead_of_scoring_empty_documents(tmp_path, capsys):
    folder = _collection(tmp_path / "data", COMPANY)
    run = tmp_path / "retriever.run"
    run.write_text("q1 Q0 d2 1 2.0 mine\nq1 Q0 d1 2 1.0 mine\n")
    argv = ["eval", "--data", str(folder), "--first-stage", str(run), "--rerankers", "bm25"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "corpus.jsonl:1: the document has no 'text' field (found 'headline', 'body')" in err
    assert not (tmp_path / "out").exists()


def test_a_corpus_whose_texts_are_all_empty_is_an_error(tmp_path):
    folder = _collection(tmp_path / "data", [{"_id": "d1", "text": ""}, {"_id": "d2", "text": " "}])
    with pytest.raises(InputError, match=r"corpus\.jsonl: no document has any text"):
        load_beir(folder)


def test_some_documents_without_text_are_counted_in_a_note(tmp_path, caplog):
    docs = [
        {"_id": "d1", "text": "alpha"},
        {"_id": "d2", "title": "beta only", "text": ""},  # ranked by its title: not counted
        {"_id": "d3", "body": "gamma"},
        {"_id": "d4", "text": ""},
    ]
    folder = _collection(tmp_path / "data", docs)
    caplog.set_level(logging.WARNING)
    data = load_beir(folder)
    said = (
        f"{folder / 'corpus.jsonl'}: 2 of 4 documents have no text (the first, line 3, 'd3': "
        "no 'text' field (found 'body')); each is ranked by its title alone, or as an empty "
        "document when it has none"
    )
    assert data.notes == [said]
    assert said in [r.getMessage() for r in caplog.records]
    assert data.text("d2") == "beta only" and data.text("d3") == ""


def test_a_click_logs_corpus_is_checked_the_same_way(tmp_path):
    folder = _collection(tmp_path / "data", COMPANY)
    with pytest.raises(InputError, match=r"corpus\.jsonl:1: the document has no 'text' field"):
        read_corpus(folder)
    (folder / "corpus.jsonl").write_text('{"id": "d1", "text": "alpha"}\n')
    assert read_corpus(folder) == {"d1": "alpha"}


def test_the_converter_evaluation_md_shows_makes_a_folder_eval_reads(tmp_path, monkeypatch):
    """docs/evaluation.md's converter, run on a company's files (a judgments CSV, documents
    with other field names) and evaluated with its TREC run of more queries than judged."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text()
    code = re.search(r"```python\n(# to_layout\.py.*?)```", page, flags=re.S).group(1)
    docs = [
        {"doc_id": i, "headline": f"topic {i % 3}", "body": f"about {i % 3} {i}"} for i in range(9)
    ]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    rows = ["query_id,query,doc_id,label"]
    rows += [f"q{q},about {q % 3},{d},{int(d % 3 == q % 3)}" for q in range(6) for d in range(9)]
    (tmp_path / "judgments.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "to_layout.py", "exec"), {})
    train, test = load_beir("my-data", "train"), load_beir("my-data", "test")
    assert len(test.queries) == 2 and len(train.queries) == 4
    assert not set(train.queries) & set(test.queries)
    assert train.corpus["4"] == {"title": "topic 1", "text": "about 1 4"}
    judged = {**train.qrels, **test.qrels}
    assert judged["q1"]["4"] == 1 and judged["q1"]["3"] == 0 and len(judged) == 6
    run = [
        f"q{q} Q0 {d} {d + 1} {9 - d} mine" for q in range(8) for d in range(9)
    ]  # q6, q7: not judged
    (tmp_path / "retriever.run").write_text("\n".join(run) + "\n")
    argv = ["eval", "--data", "my-data", "--first-stage", "retriever.run", "--rerankers", "bm25"]
    assert main([*argv, "--no-progress"]) == 0
