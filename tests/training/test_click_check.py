"""``check_log``: a click log checked before learning, each problem named by file and line."""

from __future__ import annotations

import json

import pytest

from rerankit.training.clicks import check_log, text_hash


def _write(path, rows, extra_lines=()):
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        for line in extra_lines:
            out.write(line + "\n")


def _impression(q, docs, **more):
    return {"type": "impression", "id": f"a{q}", "query": f"query {q}", "documents": docs,
            "shown": list(range(len(docs))), **more}  # fmt: skip


def test_a_converted_log_s_mistakes_are_named_by_file_and_line(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = []
    for q in range(5):
        docs = [{"id": f"d{q}-{i}", "text": f"text {q} {i}"} for i in range(3)]
        rows.append(_impression(q, docs, dwell=1))
        rows.append({"type": "feedback", "id": f"a{q}", "clicks": [0], "dwel_ms": 300})
    rows.append({"type": "feedback", "id": "a1", "clicks": [7]})  # line 11: past the documents
    _write(log, rows, ['{"type": "impression", "id": "cut', '{"type": "impresion", "id": "x"}'])
    found = check_log(log)
    said = found.describe()
    # the bad lines are mistakes, each named: the reader would skip them
    assert found.mistakes() == ["2 bad lines (the reader skips them): see the lines named below"]
    assert f"{log}:12: " in said and f"{log}:13: type must be 'impression' or 'feedback'" in said
    # a field the format lacks, where it first is, and the one meant
    assert (
        f"{log}:2: feedback field 'dwel_ms' is not in the format, and the reader ignores it "
        "(5 records; did you mean 'dwell_ms'?)"
    ) in found.warnings()
    assert any(w.startswith(f"{log}:1: impression field 'dwell'") for w in found.warnings())
    # a click naming nothing: its feedback's file and line
    assert "click 7 names none of its documents" in said and f"({log}, line 11)" in said
    assert (found.sessions, found.queries, found.clicked_queries) == (5, 5, 5)
    assert found.counted_clicks == 5 and found.kept == {"text": 15}


def test_too_few_queries_with_a_click_says_how_many_and_how_many_are_needed(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = [_impression(q, [{"id": f"d{q}", "text": "t"}]) for q in range(6)]
    rows += [{"type": "feedback", "id": f"a{q}", "clicks": [0]} for q in range(3)]
    _write(log, rows)
    (mistake,) = check_log(log).mistakes()
    assert "3 of the 6 queries have a click in the first 10 positions" in mistake
    assert "learning needs at least 4" in mistake


def test_a_log_of_hashes_needs_the_corpus_and_says_which_hashes_it_lacks(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = []
    for q in range(4):  # the ranker read "Title\ntext": the log keeps that text's hash
        docs = [{"id": f"d{q}", "sha256": text_hash(f"Title\ntext {q}")}]
        rows += [_impression(q, docs), {"type": "feedback", "id": f"a{q}", "clicks": [0]}]
    _write(log, rows)
    alone = check_log(log)
    assert alone.mistakes() == [
        "no impression can be learned from: each has a document without a text (pass the "
        "corpus: --data)"
    ]
    same = {f"d{q}": f"Title\ntext {q}" for q in range(4)}
    assert check_log(log, data=same).mistakes() == [] and check_log(log, data=same).hash_misses == 0
    # data=, as --data names it: a corpus folder too; corpus=, its earlier name, still works
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": k, "title": "Title", "text": f"text {q}"}) + "\n"
            for q, k in enumerate(same)
        )
    )
    for check in (check_log(log, data=folder), check_log(log, corpus=same)):
        assert check.mistakes() == [] and check.hash_misses == 0
        assert check.describe() == check_log(log, data=same).describe()
    with pytest.raises(TypeError, match="got data= and its earlier name corpus="):
        check_log(log, data=same, corpus=same)
    # a corpus without the titles: found by id, but not the text the ranker read
    other = check_log(log, corpus={f"d{q}": f"text {q}" for q in range(4)})
    assert other.hash_misses == 4 and other.mistakes() == []
    assert any("4 documents whose logged hash no corpus text has" in w for w in other.warnings())


def test_documents_sent_without_an_id_and_logged_as_ids_are_said_to_need_no_corpus(tmp_path):
    """What the service logs with store = "id" for a /v2/rerank request (its documents are
    strings: logged by their index, marked positional): no corpus can give their texts, so
    the advice is to send ids (or keep texts or hashes), not to pass --data."""
    from rerankit.errors import InputError
    from rerankit.training.clicks import ClickLog, learn_from_log

    log = tmp_path / "log.jsonl"
    clicks = ClickLog(log, store="id")
    for q in range(4):
        clicks.log_impression(f"a{q}", f"query {q}", ["Solar panels.", "Wind farms."], [0, 1])
        clicks.log_feedback(f"a{q}", [0])
    clicks.close()
    for corpus in (None, {"0": "an unrelated document"}):
        (mistake,) = check_log(log, corpus=corpus).mistakes()
        assert "each has a document without a text, which no corpus can give" in mistake
        assert "it came without an id" in mistake and "/v1/rerank" in mistake
        assert 'store = "text" or "hash"' in mistake and "--data" not in mistake
    try:
        learn_from_log(log, corpus={"0": "an unrelated document"})
    except InputError as e:
        said = str(e)
    assert "no corpus can give its text" in said and "it is not in the corpus given" not in said
    # mixed with a log of texts: a warning, with the example
    _write(tmp_path / "more.jsonl", [_impression(9, [{"id": "d9", "text": "t"}])])
    (warning,) = check_log([log, tmp_path / "more.jsonl"]).warnings()
    assert "4 impressions with a document without a text (which no corpus can give)" in warning
    assert "e.g. impression a0: query 'query 0': no text for document '0'" in warning
