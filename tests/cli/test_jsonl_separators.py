"""JSON Lines are cut at newlines only: a text holding U+2028, U+2029 or U+0085 (which
``json.dumps(..., ensure_ascii=False)`` writes as they are, and str.splitlines cuts at) is
one line, in a collection's files and in the documents rank reads."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main
from rerankit.eval.data import load_beir

ODD = ["line\u2028separator", "next\x85line", "para\u2029graph"]


@pytest.mark.parametrize("text", ODD)
def test_a_collection_whose_texts_hold_unicode_line_separators_reads(tmp_path, text):
    (tmp_path / "qrels").mkdir()
    rows = [{"_id": "d1", "title": "", "text": text}, {"_id": "d2", "text": "plain"}]
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": text}, ensure_ascii=False) + "\r\n", encoding="utf-8"
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    data = load_beir(tmp_path, "test")
    assert data.corpus["d1"]["text"] == text and data.queries == {"q1": text}


def test_rank_reads_documents_whose_texts_hold_them(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(ODD)
        ),
        encoding="utf-8",
    )
    assert main(["rank", "-q", "separator", "-i", str(docs), "-r", "bm25"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.strip().split("\n")]
    assert sorted(r["id"] for r in out) == [f"d{i}" for i in range(len(ODD))]
    assert {r["text"] for r in out} == set(ODD)
