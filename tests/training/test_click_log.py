"""The click log: the format's round trip, privacy options, rotation, restarts, write
failures counted and never raised, threads, and the reader's join (duplicates, orphans,
clicks by index or id)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from rerankit.errors import InputError
from rerankit.training.clicks import (
    ClickLog,
    Feedback,
    collect,
    parse_record,
    read_log,
    text_hash,
)
from rerankit.training.clicks.from_log import learn_from_log
from rerankit.training.clicks.log import log_files
from rerankit.training.clicks.sessions import CorpusTexts, records, with_texts
from rerankit.training.clicks.simulate import PositionBasedModel, simulate_query

DOCS = [
    {"id": "d0", "text": "solar panels on roofs", "first_stage_score": 3.5},
    {"id": "d1", "text": "wind turbines at sea", "first_stage_score": 2.0},
    {"id": "d2", "text": "the price of pasta", "first_stage_score": 1.0},
]


def test_an_impression_and_its_feedback_round_trip(tmp_path):
    log = ClickLog(tmp_path / "clicks.jsonl")
    assert log.log_impression(
        "a1",
        "renewable energy",
        DOCS,
        [1, 0, 2],
        scores=[0.9, 0.5, 0.1],
        pipeline="hybrid",
        time=100.0,
    )
    assert log.log_feedback("a1", [0, "d1"], dwell_ms=[1200, 300], time=105.0)
    lines = (tmp_path / "clicks.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first == {
        "type": "impression",
        "id": "a1",
        "time": 100.0,
        "pipeline": "hybrid",
        "query": "renewable energy",
        "documents": DOCS,
        "shown": [1, 0, 2],
        "scores": [0.9, 0.5, 0.1],
    }
    sessions, report = read_log(tmp_path / "clicks.jsonl")
    assert report.impressions == 1 and report.feedback == 1 and report.malformed == 0
    (s,) = sessions
    assert s.impression == parse_record(first)
    assert s.clicks == (0, 1)  # "d1" resolved to its index
    assert s.dwell_ms == {0: 1200.0, 1: 300.0}
    assert s.clicked_positions() == [1, 2]  # d1 was shown first, d0 second


@pytest.mark.parametrize(
    ("store", "kept"),
    [
        ("text", {"text"}),
        ("hash", {"sha256"}),
        ("id", set()),
    ],
)
def test_privacy_options_keep_what_they_say(tmp_path, store, kept):
    log = ClickLog(tmp_path / "c.jsonl", store=store)
    log.log_impression("a", "q", DOCS, [0, 1, 2])
    (doc, *_) = json.loads((tmp_path / "c.jsonl").read_text())["documents"]
    assert set(doc) - {"id", "first_stage_score"} == kept
    if store == "hash":
        assert doc["sha256"] == text_hash("solar panels on roofs")
    assert ("solar" in (tmp_path / "c.jsonl").read_text()) == (store == "text")


def test_a_log_kept_as_hashes_is_read_with_the_corpus(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl", store="hash")
    log.log_impression("a", "energy", DOCS, [0, 1, 2])
    sessions, _ = read_log(tmp_path / "c.jsonl")
    (q,) = collect(sessions).values()
    assert q.texts == [None, None, None]
    assert q.hashes == [text_hash(d["text"]) for d in DOCS]
    np.testing.assert_allclose(q.first_stage, [3.5, 2.0, 1.0])


def test_a_logged_hash_no_corpus_text_has_is_found_by_id_and_said(tmp_path):
    """A corpus whose text differs from the one hashed (say, built without the titles the
    ranker read): the document is found by its id, and the read report says how many."""
    log = ClickLog(tmp_path / "c.jsonl", store="hash")
    log.log_impression("a", "energy", DOCS, [0, 1, 2])
    corpus = {d["id"]: d["text"] for d in DOCS}
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert len(with_texts(sessions, CorpusTexts(corpus), report)) == 1
    assert report.found_by_id == 0 and "found by id" not in report.describe()
    corpus["d1"] = "Wind\nwind turbines at sea"  # a title the log's hash was not taken with
    texts = CorpusTexts(corpus)
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert len(with_texts(sessions, texts, report)) == 1  # still learned from, by its id
    assert report.found_by_id == 1 and texts.found_by_id == {"d1": text_hash(DOCS[1]["text"])}
    described = report.describe()
    assert "1 document found by id: the logged hash matches no text of the corpus" in described
    assert "document 'd1': its logged hash" in described


def test_duplicate_feedback_is_idempotent_and_later_feedback_adds(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    log.log_impression("a", "q", DOCS, [0, 1, 2])
    log.log_feedback("a", [2])
    log.log_feedback("a", [2])  # the client retried
    once, _ = read_log(tmp_path / "c.jsonl")
    log.log_feedback("a", ["d0"])  # a later click
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert once[0].clicks == (2,)
    assert sessions[0].clicks == (0, 2)
    assert report.repeated_feedback == 1
    assert len(sessions) == 1


def test_feedback_past_the_maximum_delay_is_left_out_and_counted(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    log.log_impression("a", "q", DOCS, [0, 1, 2], time=1000.0)
    log.log_feedback("a", [1], time=1030.0)  # 30 s after the answer
    log.log_feedback("a", [2], time=1000.0 + 7200)  # two hours after
    log.log_impression("b", "q", DOCS, [0, 1, 2], time=2000.0)
    log.log_feedback("b", [0], time=2000.0 + 3600)  # exactly at the limit: kept
    (tmp_path / "c.jsonl").open("a").write('{"type": "feedback", "id": "b", "clicks": [2]}\n')
    everything, report = read_log(tmp_path / "c.jsonl")
    assert [s.clicks for s in everything] == [(1, 2), (0, 2)] and report.late_feedback == 0
    prompt, report = read_log(tmp_path / "c.jsonl", max_feedback_delay=3600)
    # a's two-hour click is left out; b's record without a time cannot be judged: kept
    assert [s.clicks for s in prompt] == [(1,), (0, 2)]
    assert report.late_feedback == 1 and report.feedback == 4
    assert "1 feedback later than the maximum delay after its impression" in report.describe()
    with pytest.raises(ValueError, match="max_feedback_delay"):
        read_log(tmp_path / "c.jsonl", max_feedback_delay=-1)


def test_learning_from_a_log_without_clicks_says_what_it_read(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    for n in range(3):
        log.log_impression(f"a{n}", "q", DOCS, [0, 1, 2], time=1000.0)
        log.log_feedback(f"a{n}", [1], time=5000.0)
    with pytest.raises(InputError) as caught:
        learn_from_log(tmp_path / "c.jsonl", max_feedback_delay=60)
    assert str(caught.value) == (
        f"{tmp_path / 'c.jsonl'}: no clicks to learn from: 3 impressions, 3 feedback records; "
        "3 left out as later than max_feedback_delay; only clicks in the first 10 positions "
        "count; log more sessions (rerankit check --clicks LOG counts them in seconds; a log "
        "rerankit simulate-clicks wrote: run it again with a higher --sessions), or rehearse "
        "the loop on a judged collection with rerankit simulate-clicks (docs/clicks.md)"
    )


def test_orphan_and_unknown_clicks_are_counted_not_invented(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    log.log_feedback("nobody", [0])  # before, and without, an impression
    log.log_impression("a", "q", DOCS, [0, 1])
    assert not log.log_feedback("a", [7, "d9", 1])  # the writer of "a" refuses them
    ClickLog(tmp_path / "c.jsonl").log_feedback("a", [7, "d9", 1])  # another one cannot check
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert report.orphan_feedback == 1
    assert report.unknown_clicks == 2
    assert sessions[0].clicks == (1,)
    assert any("d9" in p for p in report.problems)
    first, *problems = report.describe().splitlines()
    assert first == (
        "read 1 file: 1 impression, 2 feedback records (1 feedback record names an answer in "
        "none of the logs read, "
        "2 clicks naming no document (1 an integer past the documents: an integer click is "
        "an index; send ids as strings))"
    )
    assert problems == [f"  {p}" for p in report.problems]


def test_an_integer_click_is_an_index_so_numeric_ids_go_as_strings(tmp_path):
    skus = [{"id": 1001, "text": "red shoes"}, {"id": 1002, "text": "blue shoes"}]
    log = ClickLog(tmp_path / "c.jsonl")
    log.log_impression("a", "shoes", skus, [1, 0])
    log.log_impression("b", "shoes", skus, [0, 1])
    assert not log.log_feedback("a", [1001])  # an index: past the 2 documents, names nothing
    assert "1001 names none of the answer's 2 documents (an integer is an index" in (log.last_error)
    assert ClickLog(tmp_path / "c.jsonl").log_feedback("a", [1001])  # a writer that cannot check
    assert log.log_feedback("b", ["1002"])  # the id as a string: the second document
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert [s.clicks for s in sessions] == [(), (1,)]
    assert (report.unknown_clicks, report.index_clicks) == (1, 1)
    assert (
        report.describe()
        .splitlines()[0]
        .endswith(
            "(1 click naming no document (1 an integer past the documents: an integer click is "
            "an index; send ids as strings))"
        )
    )
    assert report.problems == [
        "feedback a: click 1001 names none of its documents (an integer click is an index "
        f"into its 2 documents; send ids as strings) ({tmp_path / 'c.jsonl'}, line 3)"
    ]


def test_malformed_lines_are_counted_with_their_place_or_raised_when_strict(tmp_path):
    path = tmp_path / "c.jsonl"
    log = ClickLog(path)
    log.log_impression("a", "q", DOCS, [0])
    with open(path, "a", encoding="utf-8") as f:
        f.write("{not json\n")
        f.write(
            json.dumps(
                {
                    "type": "impression",
                    "id": "b",
                    "query": "q",
                    "documents": [{"id": "x"}],
                    "shown": [3],
                }
            )
            + "\n"
        )
    sessions, report = read_log(path)
    assert len(sessions) == 1 and report.malformed == 2
    assert report.problems[0].startswith(f"{path}:2: ")  # FILE:LINE, as every reader says it
    assert report.problems[1].startswith(f"{path}:3: ") and "shown" in report.problems[1]
    with pytest.raises(InputError, match=f"{path}:2: "):
        read_log(path, strict=True)


def test_the_writer_rotates_by_size_and_the_reader_reads_every_file_in_order(tmp_path):
    path = tmp_path / "c.jsonl"
    log = ClickLog(path, max_bytes=600, backups=2)
    for i in range(12):
        assert log.log_impression(f"a{i}", "q", DOCS, [0, 1, 2], time=float(i))
    files = log_files(path)
    assert [f.name for f in files] == ["c.jsonl.2", "c.jsonl.1", "c.jsonl"]
    assert all(f.stat().st_size <= 600 for f in files)
    sessions, _ = read_log(path)
    ids = [s.impression.id for s in sessions]
    assert ids == sorted(ids, key=lambda x: int(x[1:]))  # oldest first
    assert ids[-1] == "a11" and len(ids) < 12  # the oldest rotated away (retention)


_WRITER = """
import sys
from rerankit.training.clicks import ClickLog
log = ClickLog(sys.argv[1], max_bytes=60_000, backups=1_000)
docs = [{"id": f"d{i}", "text": "x" * 200} for i in range(10)]
for n in range(int(sys.argv[3])):
    log.log_impression(f"{sys.argv[2]}-{n}", "q", docs, list(range(10)))
print(log.written, log.write_errors)
"""


@pytest.mark.skipif(os.name != "posix", reason="the lock between processes is POSIX's flock")
def test_processes_writing_one_rotating_log_lose_nothing(tmp_path):
    """As the workers of ``serve --workers`` do: each append and rotation holds a lock, so
    no record is lost to two processes rotating at once."""
    path, n = tmp_path / "c.jsonl", 1500
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), name, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("a", "b")
    ]
    outputs = [w.communicate(timeout=120)[0].split() for w in writers]
    assert outputs == [[str(n), "0"], [str(n), "0"]]
    sessions, report = read_log(path)
    assert len(log_files(path)) > 20  # it rotated often, from both processes
    assert sorted(s.impression.id for s in sessions) == sorted(
        f"{w}-{i}" for w in "ab" for i in range(n)
    )
    assert report.malformed == 0


def test_a_restarted_writer_appends(tmp_path):
    path = tmp_path / "c.jsonl"
    ClickLog(path).log_impression("a", "q", DOCS, [0])
    again = ClickLog(path)  # a new process
    again.log_feedback("a", [0])
    sessions, _ = read_log(path)
    assert sessions[0].clicks == (0,)


def test_write_failures_are_counted_and_never_raised(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the log's folder should be")
    log = ClickLog(blocker / "c.jsonl")
    assert log.log_impression("a", "q", DOCS, [0]) is False
    assert log.log_feedback("a", [0]) is False
    assert log.log_impression("b", "q", DOCS, [5]) is False  # a bad index: counted too
    assert log.write_errors == 3 and log.written == 0
    assert log.last_error


def test_threads_write_whole_lines(tmp_path):
    path = tmp_path / "c.jsonl"
    log = ClickLog(path, max_bytes=0)

    def work(t: int) -> None:
        for i in range(50):
            log.log_impression(f"{t}-{i}", "q", DOCS, [0, 1, 2])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sessions, report = read_log(path)
    assert len(sessions) == 200 and report.malformed == 0 and log.written == 200


def test_background_writing_drops_and_counts_when_its_queue_is_full(tmp_path):
    with ClickLog(tmp_path / "c.jsonl", background=True, queue_size=10_000) as log:
        for i in range(100):
            assert log.log_impression(f"a{i}", "q", DOCS, [0])
    sessions, _ = read_log(tmp_path / "c.jsonl")
    assert len(sessions) == 100
    tiny = ClickLog(tmp_path / "d.jsonl", background=True, queue_size=1)
    tiny._lock.acquire()  # the writer thread is stuck on the disk
    try:
        results = [tiny.log_feedback("x", [0]) for _ in range(5)]
    finally:
        tiny._lock.release()
    tiny.close()
    assert results.count(False) >= 3 and tiny.dropped == results.count(False)


def test_simulated_sessions_survive_the_log_unchanged(tmp_path):
    rng = np.random.default_rng(3)
    ids = [f"d{i}" for i in range(15)]
    sim = simulate_query(
        PositionBasedModel(eta=1.0),
        key="q7",
        query="a query",
        doc_ids=ids,
        order=rng.permutation(15),
        grades=rng.integers(0, 5, 15),
        sessions=40,
        rng=rng,
        first_stage=rng.random(15).tolist(),
        explore=0.3,
        pipeline="hybrid",
    )
    log = ClickLog(tmp_path / "c.jsonl", store="id")
    for impression, feedback in records(sim):
        assert log.write(impression)
        if feedback is not None:
            assert log.write(feedback)
    (back,) = collect(read_log(tmp_path / "c.jsonl")[0]).values()
    assert back.doc_ids == sim.doc_ids and back.key == "q7"
    np.testing.assert_array_equal(back.shown, sim.shown)
    np.testing.assert_array_equal(back.clicked, sim.clicked)
    np.testing.assert_allclose(back.first_stage, sim.first_stage)
    assert sim.clicked.any()


def test_feedback_records_are_checked():
    with pytest.raises(ValueError, match="clicks"):
        parse_record({"type": "feedback", "id": "a", "clicks": [True]})
    with pytest.raises(ValueError, match="dwell_ms"):
        parse_record({"type": "feedback", "id": "a", "clicks": [0, 1], "dwell_ms": [5]})
    with pytest.raises(ValueError, match="type"):
        parse_record({"type": "click", "id": "a"})
    got = parse_record(
        {"type": "feedback", "id": "a", "clicks": [0], "time": "2026-01-01T00:00:00Z"}
    )
    assert isinstance(got, Feedback) and got.time == 1767225600.0


def test_min_dwell_keeps_satisfied_clicks_only(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    log.log_impression("a", "q", DOCS, [0, 1, 2])
    log.log_feedback("a", [0, 1, 2], dwell_ms=[5000, 200, None])
    (q,) = collect(read_log(tmp_path / "c.jsonl")[0], min_dwell_ms=1000).values()
    assert q.clicked[0, :3].tolist() == [True, False, True]  # no dwell: counted


def test_write_failures_are_logged_naming_the_record(tmp_path, caplog):
    log = ClickLog(tmp_path / "c.jsonl")
    with caplog.at_level("WARNING", logger="rerankit.training.clicks.log"):
        assert log.log_impression("answer-7", "q", DOCS, [5]) is False
    assert "impression 'answer-7' not written (ValueError: shown must be" in caplog.text


def test_string_documents_are_logged_by_their_index_and_marked_positional(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl", store="text")
    texts = ["solar panels", "wind farms", {"text": "tidal power"}]
    assert log.log_impression("a", "energy", texts, [1, 0, 2]) is True
    assert log.write_errors == 0 and log.written == 1
    (record,) = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert record["documents"] == [
        {"id": "0", "positional": True, "text": "solar panels"},
        {"id": "1", "positional": True, "text": "wind farms"},
        {"id": "2", "positional": True, "text": "tidal power"},
    ]
    (session,), _ = read_log(tmp_path / "c.jsonl")
    assert [d.positional for d in session.impression.documents] == [True] * 3
    old = {**record, "documents": [{"id": "0"}], "shown": [0], "scores": None}
    assert parse_record(old).documents[0].positional is False  # a log written before


def test_a_titled_document_is_kept_and_hashed_as_a_reranker_reads_it(tmp_path):
    import rerankit

    doc = {"id": "d1", "title": "Solar", "text": "Panels on roofs."}
    read = rerankit.rerank("solar", [doc], reranker="bm25")[0].text
    assert read == "Solar\nPanels on roofs."
    for store, field, value in (("text", "text", read), ("hash", "sha256", text_hash(read))):
        log = ClickLog(tmp_path / f"{store}.jsonl", store=store)
        log.log_impression("a", "solar", [doc], [0])
        (record,) = _lines(tmp_path / f"{store}.jsonl")
        assert record["documents"][0][field] == value


@pytest.mark.parametrize("store", ["id", "hash"])
def test_a_positional_id_never_finds_a_corpus_document_by_id(tmp_path, store):
    from rerankit.training.clicks.sessions import CorpusTexts

    log = ClickLog(tmp_path / "c.jsonl", store=store)
    log.log_impression("a", "energy", ["solar panels", "wind farms"], [0, 1])
    log.log_impression("b", "energy", [{"id": "0", "text": "solar panels"}], [0])
    (positional, named), _ = read_log(tmp_path / "c.jsonl")
    corpus = CorpusTexts({"0": "an unrelated corpus document"})  # its id is "0"
    assert corpus.why_not(positional.impression) is not None  # left out, not mismatched
    assert corpus.why_not(named.impression) is None  # a real id is looked up as before
    assert corpus.text("0", None, None) == "an unrelated corpus document"


def test_documents_logged_by_position_are_told_apart_across_impressions(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl", store="text")
    log.log_impression("a", "energy", ["solar panels", "wind farms"], [0, 1])
    log.log_impression("b", "energy", ["tidal power", "solar panels"], [0, 1])
    (q,) = collect(read_log(tmp_path / "c.jsonl")[0]).values()
    # three distinct documents (index 0 named two of them), the same text one document
    assert sorted(q.texts) == ["solar panels", "tidal power", "wind farms"]
    assert all(d.startswith("#") for d in q.doc_ids)
    assert q.shown[:, :2].tolist() == [[0, 1], [2, 0]]


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_feedback_without_clicks_is_a_session_shown_and_not_clicked(tmp_path):
    log = ClickLog(tmp_path / "c.jsonl")
    for rid in ("a", "b"):
        log.log_impression(rid, "energy", DOCS, [0, 1, 2])
    log.log_feedback("a", [])  # seen, nothing clicked: as if no feedback came
    sessions, report = read_log(tmp_path / "c.jsonl")
    assert report.feedback == 1 and report.orphan_feedback == report.unknown_clicks == 0
    assert [s.clicks for s in sessions] == [(), ()]
    (q,) = collect(sessions).values()
    assert q.sessions == 2 and not q.clicked.any()  # both examined, neither clicked
    log.log_feedback("a", [1])  # a later click still counts
    (a, _), _ = read_log(tmp_path / "c.jsonl")
    assert a.clicks == (1,)
