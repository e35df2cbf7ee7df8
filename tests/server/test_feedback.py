"""Impressions and feedback in the service (``[server.feedback]``), and the experiments a
logged answer may be (interleaving, exploration), through the real app."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit import register_reranker
from rerankit.rerankers import ScorerReranker
from rerankit.scorers import FunctionScorer
from rerankit.server import ServerSettings, create_app
from rerankit.training.clicks import ClickLog, interleaving_report, read_log, text_hash
from rerankit.training.clicks.optimized import merges, rank_credits

KEY = {"Authorization": "Bearer sekret"}
DOCS = [f"document number {i}" for i in range(10)]


def _number(q, d):
    """The digit a document ends with (0 for the warm-up's)."""
    return float(d.text[-1]) if d.text[-1].isdigit() else 0.0


# two pipelines that order the same documents in opposite ways, by the number they end with
register_reranker(
    "test-ascending", lambda: ScorerReranker(FunctionScorer(lambda q, d: -_number(q, d)))
)
register_reranker("test-descending", lambda: ScorerReranker(FunctionScorer(_number)))


class _Probability(FunctionScorer):
    """The number a document ends with, over 10, as a calibrated probability."""

    score_scale = "probability"


register_reranker(
    "test-probability", lambda: ScorerReranker(_Probability(lambda q, d: _number(q, d) / 10))
)


class _FailsOnRequests(ScorerReranker):
    """Warms up, then fails every request (a 500)."""

    async def arerank(self, query, *args, **kwargs):
        if query == "warm up":
            return await super().arerank(query, *args, **kwargs)
        raise RuntimeError("a bug")


register_reranker("test-fails", lambda: _FailsOnRequests(FunctionScorer(_number)))


def _settings(tmp_path, **server):
    server.setdefault("feedback", {"path": str(tmp_path / "clicks.jsonl"), "store": "hash"})
    return ServerSettings(
        pipelines={
            "up": "test-ascending",
            "down": "test-descending",
            "fails": "test-fails",
            "sure": "test-probability",
        },
        default="up",
        api_keys=["sekret"],
        **server,
    )


def _records(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def _ready(client) -> None:
    """Wait while the app's pipelines warm up: a request before that is answered 503."""
    deadline = time.time() + 120
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)


def _rerank(client, path="/v2/rerank", **body):
    _ready(client)
    body = {"model": "up", "query": "which number", "documents": DOCS, **body}
    response = client.post(path, json=body, headers=KEY)
    assert response.status_code == 200, response.text
    return response.json()


def test_every_answer_with_an_id_is_logged_and_its_feedback_taken(tmp_path, caplog):
    settings = _settings(tmp_path)
    with caplog.at_level("INFO", logger="rerankit.server.feedback"):
        app = create_app(settings)
    # where the log goes is said at start, and what it keeps in clear
    said = "(queries stored in clear text, documents stored as hash; records kept until"
    assert f"logged to {tmp_path / 'clicks.jsonl'} {said}" in caplog.text
    with TestClient(app) as client:
        v2 = _rerank(client, top_n=3)
        v1 = _rerank(client, "/v1/rerank")
        explained = _rerank(client, "/v1/explain")
        tei = client.post("/rerank", json={"query": "q", "texts": DOCS}, headers=KEY)
        assert tei.status_code == 200  # no id to send feedback for: not logged
        ok = client.post("/v1/feedback", json={"id": v2["id"], "clicks": [1, "0"]}, headers=KEY)
        assert ok.status_code == 200 and ok.json() == {
            "id": v2["id"],
            "clicks": [1, 0],
            "duplicate": False,
        }
        client.app.state.feedback.flush()
    records = _records(tmp_path / "clicks.jsonl")
    impressions = [r for r in records if r["type"] == "impression"]
    assert [r["id"] for r in impressions] == [v2["id"], v1["id"], explained["id"]]
    first = impressions[0]
    assert first["pipeline"] == "up" and first["query"] == "which number"
    assert first["shown"] == [r["index"] for r in v2["results"]] == [0, 1, 2]
    assert first["scores"] == [r["relevance_score"] for r in v2["results"]]
    assert [d["id"] for d in first["documents"]] == [str(i) for i in range(10)]
    assert all("text" not in d and len(d["sha256"]) == 64 for d in first["documents"])
    sessions, report = read_log(tmp_path / "clicks.jsonl")
    assert report.malformed == 0 and sessions[0].clicked_positions() == [1, 2]


def test_the_service_logs_documents_as_the_click_log_does(tmp_path):
    """The same rule in both writers: a titled document's text as the pipeline read it
    (title, newline, text), stored or hashed alike; a document without an id by its index,
    marked positional, so learning never looks it up in a corpus by that index."""
    docs = [{"id": "d1", "title": "Solar", "text": "Panels on roofs."}, {"text": "Wind farms."}]
    with TestClient(create_app(_settings(tmp_path))) as client:
        _rerank(client, "/v1/rerank", documents=docs)
        _rerank(client, documents=["Solar panels.", "Wind farms."])
        client.app.state.feedback.flush()
    served = [r["documents"] for r in _records(tmp_path / "clicks.jsonl")]
    direct = ClickLog(tmp_path / "direct.jsonl", store="hash")
    direct.log_impression("a", "q", docs, [0, 1])
    direct.log_impression("b", "q", ["Solar panels.", "Wind farms."], [0, 1])
    assert served == [r["documents"] for r in _records(tmp_path / "direct.jsonl")]
    assert served[0] == [
        {"id": "d1", "sha256": text_hash("Solar\nPanels on roofs.")},
        {"id": "1", "positional": True, "sha256": text_hash("Wind farms.")},
    ]


def test_feedback_schema_auth_unknown_ids_and_repeats(tmp_path):
    with TestClient(create_app(_settings(tmp_path))) as client:
        objects = [{"id": "a", "text": "x 1"}, {"id": "b", "text": "y 2"}]
        rid = _rerank(client, "/v1/rerank", documents=objects)["id"]

        def post(body, headers=KEY):
            return client.post("/v1/feedback", json=body, headers=headers)

        assert post({"id": rid, "clicks": ["b"]}, headers={}).status_code == 401
        for body, where in [
            ({"clicks": [0]}, "id"),
            ({"id": rid}, "clicks"),
            ({"id": rid, "clicks": [True]}, "clicks: item 0"),
            ({"id": rid, "clicks": [-1]}, "clicks: item 0"),
            ({"id": rid, "clicks": [0], "dwell_ms": "long"}, "dwell_ms"),
            ({"id": rid, "clicks": [0], "dwell_ms": [1, 2]}, "dwell_ms: 2 values for 1 clicks"),
            (
                {"id": rid, "clicks": [0], "extra": 1},
                "extra: is not a field of this request (its fields: id, clicks, dwell_ms)",
            ),
            (
                {"id": rid, "clicks": [0], "dwel_ms": 900},
                "dwel_ms: is not a field of this request (its fields: id, clicks, dwell_ms); "
                "did you mean 'dwell_ms'?",
            ),
            (
                {"id": rid, "clicks": [2]},
                "clicks.0: 2 names none of the answer's 2 documents (an integer is an index "
                "from 0; send document ids as strings)",
            ),
            ({"id": rid, "clicks": ["c"]}, "clicks.0: 'c' names none"),
        ]:
            answer = post(body)
            assert answer.status_code == 422, body
            assert answer.json()["message"].startswith(f"invalid request: {where}"), answer.json()
        missing = post({"id": "no-such-answer", "clicks": [0]})
        assert missing.status_code == 404 and "no-such-answer" in missing.json()["message"]
        first = post({"id": rid, "clicks": ["b"], "dwell_ms": [900]})
        again = post({"id": rid, "clicks": ["b"], "dwell_ms": [900]})
        assert first.json()["duplicate"] is False and again.json()["duplicate"] is True
        assert again.json()["clicks"] == [1]
        client.app.state.feedback.flush()
    written = [r for r in _records(tmp_path / "clicks.jsonl") if r["type"] == "feedback"]
    (one,) = written
    assert one == {
        "type": "feedback",
        "id": rid,
        "time": one["time"],
        "clicks": [1],
        "dwell_ms": [900],
    }


def test_feedback_after_a_restart_and_from_another_process_s_answers(tmp_path):
    settings = _settings(tmp_path, feedback=str(tmp_path / "clicks.jsonl"))
    with TestClient(create_app(settings)) as before:
        old = _rerank(before)["id"]
        repeated = {"id": old, "clicks": [3]}
        assert before.post("/v1/feedback", json=repeated, headers=KEY).status_code == 200
    # a restarted service (or another worker on the same log) knows the answers in the log
    with TestClient(create_app(settings)) as after, TestClient(create_app(settings)) as other:
        _ready(after)
        assert after.post("/v1/feedback", json=repeated, headers=KEY).json()["duplicate"]
        new = _rerank(other)["id"]
        other.app.state.feedback.flush()
        answer = after.post("/v1/feedback", json={"id": new, "clicks": [0]}, headers=KEY)
        assert answer.status_code == 200 and answer.json()["duplicate"] is False
        after.app.state.feedback.flush()
    sessions, report = read_log(tmp_path / "clicks.jsonl")
    assert report.repeated_feedback == 0 and report.orphan_feedback == 0
    assert [s.clicks for s in sessions] == [(3,), (0,)]


def test_a_log_that_cannot_be_written_is_counted_and_requests_still_answer(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    settings = _settings(tmp_path, feedback=str(tmp_path / "a-file" / "clicks.jsonl"))
    with TestClient(create_app(settings)) as client:
        rid = _rerank(client)["id"]
        assert client.post("/v1/feedback", json={"id": rid, "clicks": [0]}, headers=KEY).is_success
        client.app.state.feedback.flush()
        metrics = client.get("/metrics").text
    assert "rerankit_feedback_write_errors_total 2.0" in metrics
    assert "rerankit_feedback_impressions_total 1.0" in metrics


def test_settings_check_the_feedback_table_and_the_experiments(tmp_path):
    spec = {
        "server": {
            "feedback": {"path": "c.jsonl", "store": "id", "backups": 2},
            "interleave": ["up", "down"],
        },
        "pipelines": {"up": "bm25", "down": "bm25"},
    }
    settings = ServerSettings.from_mapping(spec)
    assert settings.feedback.store == "id" and settings.feedback.max_bytes == 100_000_000
    assert ServerSettings.from_mapping(settings.to_mapping()).feedback == settings.feedback
    for server, message in [
        ({"feedback": {"path": "c", "store": "texts"}}, "store 'texts'"),
        (
            {"feedback": {"path": "c", "keep": 1}},
            "[server.feedback] has no key 'keep'; its keys: path, store",
        ),
        ({"interleave": ["up", "down"]}, "need [server.feedback]"),
        ({"feedback": "c", "interleave": ["up", "gone"]}, "interleave names ['gone']"),
        ({"feedback": "c", "explore": 1.5}, "explore must be a share"),
        ({"feedback": "c", "interleave_method": "balanced"}, "interleave_method 'balanced'"),
    ]:
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            ServerSettings.from_mapping({"server": server, "pipelines": spec["pipelines"]})
    # team_draft, as the Python function is named, is team-draft
    for method in ("team-draft", "team_draft"):
        server = {"feedback": "c", "interleave": ["up", "down"], "interleave_method": method}
        read = ServerSettings.from_mapping({"server": server, "pipelines": spec["pipelines"]})
        assert read.interleave_method == "team-draft"


def test_interleaved_answers_record_each_pipeline_s_team_and_clicks_credit_them(tmp_path, caplog):
    settings = _settings(
        tmp_path,
        interleave=["up", "down"],
        interleave_share=1.0,
        interleave_method="team-draft",
    )
    with caplog.at_level("INFO", logger="rerankit.server.experiments"):
        app = create_app(settings)
        create_app(_settings(tmp_path / "explored", explore=0.25))
    # the experiments are said at start, as where the log goes is
    assert (
        "interleave: 100 % of the requests to 'up' answered with 'down' interleaved "
        "(team-draft)" in caplog.text
    )
    assert "explore: 25 % of all requests with pairs below the top 3 exchanged" in caplog.text
    with TestClient(app) as client:
        for n in range(40):
            answer = _rerank(client, top_n=4, query=f"query {n % 8}")
            assert answer["meta"]["rerankit"]["order"] == "interleaved"
            shown = [r["index"] for r in answer["results"]]
            assert len(shown) == 4 and set(shown) <= {0, 1, 9, 8}  # each pipeline's best two
            # users who want high numbers: they click what "down" ranks first
            clicks = [i for i in shown if i >= 8]
            client.post("/v1/feedback", json={"id": answer["id"], "clicks": clicks}, headers=KEY)
        client.app.state.feedback.flush()
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    for s in sessions:
        teams = s.impression.interleaving["teams"]
        placed_by_down = [i for i, t in zip(s.impression.shown, teams, strict=True) if t == 1]
        assert set(placed_by_down) == {9, 8}
    report = interleaving_report(sessions)
    assert report.pipelines == ("up", "down") and report.winner == "down"
    assert report.wins == (0, 40)


def test_optimized_interleaving_is_the_default_and_its_credits_name_the_preferred(tmp_path):
    settings = _settings(tmp_path, interleave=["up", "down"], interleave_share=1.0)
    assert settings.interleave_method == "optimized"
    up = list(range(len(DOCS)))
    down = up[::-1]
    with TestClient(create_app(settings)) as client:
        for n in range(40):
            answer = _rerank(client, top_n=4, query=f"query {n % 8}")
            assert answer["meta"]["rerankit"]["order"] == "interleaved"
            shown = [r["index"] for r in answer["results"]]
            # each position holds the best of one pipeline not placed above it
            assert tuple(shown) in merges(up, down, 4)
            clicks = [i for i in shown if i >= 8]  # users who want what "down" ranks first
            client.post("/v1/feedback", json={"id": answer["id"], "clicks": clicks}, headers=KEY)
        client.app.state.feedback.flush()
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    assert len(sessions) == 40
    for s in sessions:
        credits = s.impression.interleaving["credits"]
        expected = rank_credits(
            [[int(s.impression.documents[i].id) for i in s.impression.shown]], up, down
        )
        assert credits == pytest.approx(list(expected[0]))
    report = interleaving_report(sessions)
    assert report.method == "optimized" and report.winner == "down"


def test_an_interleaved_answer_carries_the_first_pipeline_s_scores_and_scale(tmp_path):
    # the first pipeline answers probabilities; the second relative scores of the opposite
    # order: the answer is interleaved, its scores and meta stay the first pipeline's
    settings = _settings(tmp_path, interleave=["sure", "up"], interleave_share=1.0)
    with TestClient(create_app(settings)) as client:
        for top_n in (None, 3):
            answer = _rerank(client, model="sure", documents=DOCS[:6], top_n=top_n)
            assert answer["meta"]["rerankit"]["order"] == "interleaved"
            assert answer["meta"]["rerankit"]["scores"] == "probability"
            for r in answer["results"]:
                assert r["relevance_score"] == pytest.approx(r["index"] / 10), answer
        client.app.state.feedback.flush()
    impressions = _records(tmp_path / "clicks.jsonl")
    for impression in impressions:
        for i, score in zip(impression["shown"], impression["scores"], strict=True):
            assert score == pytest.approx(i / 10)


def _explored(tmp_path, pairs):
    """An answer with every request explored, each pair exchanged with chance ``pairs``:
    the order it shows, its meta and its impression."""
    settings = _settings(tmp_path, explore=1.0, explore_pairs=pairs)
    with TestClient(create_app(settings)) as client:
        answer = _rerank(client)
        client.app.state.feedback.flush()
    (impression,) = _records(tmp_path / "clicks.jsonl")
    return [r["index"] for r in answer["results"]], answer["meta"], impression


def test_explored_answers_swap_below_the_top_three_and_record_it(tmp_path):
    shown, meta, impression = _explored(tmp_path, 1.0)
    # every pair from position 4 swapped, a document moved never moved again
    assert shown == [0, 1, 2, 4, 3, 6, 5, 8, 7, 9]
    assert meta["rerankit"]["order"] == "explored"
    assert impression["shown"] == shown and impression["explore"] == {"swapped": [4, 6, 8]}


def test_an_exploration_that_exchanged_nothing_is_logged_but_not_marked(tmp_path):
    shown, meta, impression = _explored(tmp_path, 0.0)
    assert shown == list(range(10))  # the plain ranking, its scores in decreasing order
    assert "order" not in meta.get("rerankit", {})
    assert impression["explore"] == {"swapped": []}  # drawn for exploration: counted as such


def test_a_candidate_that_fails_leaves_the_answer_to_the_current_pipeline(tmp_path, caplog):
    settings = _settings(tmp_path, interleave=["up", "fails"], interleave_share=1.0)
    with (
        caplog.at_level("WARNING", logger="rerankit.server.experiments"),
        TestClient(create_app(settings)) as client,
    ):
        answer = _rerank(client, top_n=3)
        client.app.state.feedback.flush()
    # the interleaving was tried: the candidate ran, failed, and that was said
    said = "interleave: 'fails' failed (internal error: RuntimeError); answered by 'up' alone"
    assert said in caplog.text
    assert [r["index"] for r in answer["results"]] == [0, 1, 2]
    assert "order" not in answer["meta"]["rerankit"]
    (impression,) = _records(tmp_path / "clicks.jsonl")
    assert "interleaving" not in impression and impression["pipeline"] == "up"


def test_the_answer_index_reads_what_the_log_gained_across_rotations(tmp_path):
    from rerankit.server.feedback import AnswerIndex
    from rerankit.training.clicks import ClickLog

    log = ClickLog(tmp_path / "c.jsonl", store="id", max_bytes=400, backups=3)
    index = AnswerIndex(tmp_path / "c.jsonl")
    docs = [{"id": "a"}, {"id": "b"}]
    log.log_impression("first", "q", docs, [0, 1])
    assert index.find("first").resolve("b") == 1 and index.find("later") is None
    for n in range(6):  # past max_bytes: the file the index read rotates away
        log.log_impression(f"n{n}", "q", docs, [1, 0])
    log.log_feedback("n5", [1])
    assert (tmp_path / "c.jsonl.1").is_file()
    assert index.find("n5") is not None and index.find("n0") is not None
    assert not index.remember("n5", (((1,)), None))  # the logged feedback is known
    assert index.find("first") is not None and index.find("gone") is None


def test_the_answer_index_remembers_the_most_recent_answers_only(tmp_path):
    from rerankit.server.feedback import AnswerIndex, FeedbackSettings, answer_of
    from rerankit.training.clicks import ClickLog

    log = ClickLog(tmp_path / "c.jsonl", store="id")
    docs = [{"id": "a"}, {"id": "b"}]
    for n in range(5):  # written before this process started
        log.log_impression(f"old{n}", "q", docs, [0, 1])
    index = AnswerIndex(tmp_path / "c.jsonl", limit=3)
    assert index.find("old4") is not None  # read from the log: its last 3 answers
    assert list(index.answers) == ["old2", "old3", "old4"] and index.find("old0") is None
    assert index.remember("old2", ((0,), None))
    for n in range(2):  # answered by this process, and logged as the service does
        now = time.time()
        index.add(f"new{n}", answer_of(["a", "b"]), when=now)
        log.log_impression(f"new{n}", "q", docs, [0, 1], time=now)
    assert list(index.answers) == ["old4", "new0", "new1"]
    assert "old2" not in index.seen  # its feedback is forgotten with it
    log.log_impression("after", "q", docs, [0, 1])  # another worker's answer
    # reading what the log gained finds it, and never brings back what was forgotten
    assert index.find("after") is not None and index.find("old3") is None
    assert list(index.answers) == ["new0", "new1", "after"]
    assert FeedbackSettings(path="x", max_answers=5).max_answers == 5
    with pytest.raises(ValueError, match="max_answers must be >= 1"):
        FeedbackSettings(path="x", max_answers=0)


@pytest.mark.parametrize("max_bytes", [0, 600])  # never rotating, and rotating often
def test_the_answer_index_keeps_the_most_recent_answers_given(tmp_path, max_bytes):
    """A process answering and logging past max_answers, reading the log on a miss now and
    then (the log rotating under it or not): the answers it keeps are always the last ones
    given, whatever is read back."""
    from rerankit.server.feedback import AnswerIndex, answer_of
    from rerankit.training.clicks import ClickLog

    log = ClickLog(tmp_path / "c.jsonl", store="id", max_bytes=max_bytes, backups=2)
    index = AnswerIndex(tmp_path / "c.jsonl", limit=5)
    docs = [{"id": "a"}, {"id": "b"}]
    given = []
    for n in range(40):  # logged as the service logs: under the time the index has
        rid = f"r{n}"
        index.add(rid, answer_of(["a", "b"]), when=1000.0 + n)
        log.log_impression(rid, "q", docs, [0, 1], time=1000.0 + n)
        given.append(rid)
        if n % 7 == 6:  # a miss now and then makes the index read the log
            assert index.find(f"unknown{n}") is None
        assert list(index.answers) == given[-5:]
    assert [index.find(rid) is not None for rid in given[-8:]] == [False] * 3 + [True] * 5
    assert (tmp_path / "c.jsonl.2").is_file() == (max_bytes > 0)  # rotated under it
    restarted = AnswerIndex(tmp_path / "c.jsonl", limit=5)
    assert restarted.find(given[-1]) is not None and list(restarted.answers) == given[-5:]


def test_an_answer_from_the_answer_cache_is_logged_under_its_own_id(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    settings = _settings(tmp_path, answer_cache=True, explore=0.0)
    with TestClient(create_app(settings)) as client:
        _ready(client)
        first = client.post(
            "/v2/rerank", json={"model": "up", "query": "q", "documents": DOCS}, headers=KEY
        )
        again = client.post(
            "/v2/rerank", json={"model": "up", "query": "q", "documents": DOCS}, headers=KEY
        )
        assert first.headers["x-rerankit-cache"] == "miss"
        assert again.headers["x-rerankit-cache"] == "hit"
        a, b = first.json(), again.json()
        assert a["id"] != b["id"] and a["results"] == b["results"]
        ok = client.post("/v1/feedback", json={"id": b["id"], "clicks": [0]}, headers=KEY)
        assert ok.status_code == 200 and ok.json()["duplicate"] is False
        client.app.state.feedback.flush()
    impressions = [r for r in _records(tmp_path / "clicks.jsonl") if r["type"] == "impression"]
    assert [r["id"] for r in impressions] == [a["id"], b["id"]]
    assert impressions[0]["shown"] == impressions[1]["shown"]


def test_an_experiment_s_answer_is_never_kept_in_the_answer_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path / "cache"))
    settings = _settings(tmp_path, answer_cache=True, explore=1.0, explore_pairs=1.0)
    with TestClient(create_app(settings)) as client:
        for _ in range(2):
            response = client.post(
                "/v2/rerank", json={"model": "up", "query": "q", "documents": DOCS}, headers=KEY
            )
            assert response.status_code == 200 and "x-rerankit-cache" not in response.headers
            assert response.json()["meta"]["rerankit"]["order"] == "explored"


def test_an_explanation_is_never_interleaved_or_explored(tmp_path):
    # every rerank answer is an experiment here; the explanation shows the pipeline's order
    for experiment in (
        {"interleave": ["up", "down"], "interleave_share": 1.0},
        {"explore": 1.0, "explore_pairs": 1.0},
    ):
        settings = _settings(tmp_path, **experiment)
        with TestClient(create_app(settings)) as client:
            ranked = _rerank(client)
            explained = _rerank(client, "/v1/explain")
            client.app.state.feedback.flush()
        assert ranked["meta"]["rerankit"]["order"] in ("interleaved", "explored")
        assert "order" not in explained["meta"].get("rerankit", {})
        assert [r["index"] for r in explained["results"]] == list(range(10))
        impression = _records(tmp_path / "clicks.jsonl")[-1]
        assert impression["endpoint"] == "explain"
        assert "interleaving" not in impression and "explore" not in impression
        (tmp_path / "clicks.jsonl").unlink()


def test_a_document_that_is_not_unicode_is_logged_with_the_replacement_character(tmp_path):
    # a lone surrogate (scored as U+FFFD) made its impression fail to write: anyone could
    # keep their own traffic out of the log
    settings = _settings(
        tmp_path, feedback={"path": str(tmp_path / "clicks.jsonl"), "store": "text"}
    )
    body = '{"model": "up", "query": "q", "documents": ["bad \\ud800 text", "fine"]}'
    with TestClient(create_app(settings)) as client:
        _ready(client)
        answer = client.post("/v2/rerank", content=body, headers=KEY)
        assert answer.status_code == 200, answer.text
        client.app.state.feedback.flush()
        errors = client.get("/metrics").text
    (impression,) = _records(tmp_path / "clicks.jsonl")
    assert impression["id"] == answer.json()["id"]
    assert [d["text"] for d in impression["documents"]] == ["bad \ufffd text", "fine"]
    assert "rerankit_feedback_write_errors_total 0.0" in errors
