"""The service's click log behind a load balancer, through the real app: replicas without
session affinity (``accept_unknown_ids``), the playground's ``/v1/explain`` impressions left
out of learning, one settings file for every replica's log path, numeric answer ids, and
which keys may send feedback."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit.cli import build_parser, main, serve_settings
from rerankit.server import ServerSettings, create_app
from rerankit.training.clicks import ClickLog, interleaving_report, logs_files, read_log

DOCS_FOLDER = Path(__file__).resolve().parents[2] / "docs"
KEY = {"Authorization": "Bearer sekret"}
OTHER_KEY = {"Authorization": "Bearer other"}
TEXTS = ["solar panels", "wind", "solar", "pasta"]
DOCS = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]


def _settings(path, **feedback):
    return ServerSettings(
        pipelines={"bm25": "bm25"},
        default="bm25",
        api_keys=["sekret", "other"],
        feedback={"path": str(path), **feedback},
    )


def _ready(client) -> None:
    deadline = time.time() + 120  # a request before the warm-up ends would get a 503
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)


def _answer(client, path="/v1/rerank", top_n=2):
    _ready(client)
    body = {"model": "bm25", "query": "solar", "documents": DOCS, "top_n": top_n}
    response = client.post(path, json=body, headers=KEY)
    assert response.status_code == 200, response.text
    return response.json()


def _records(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_without_affinity_a_replica_keeps_feedback_for_another_s_answer_unchecked(tmp_path):
    a_log, b_log = tmp_path / "a" / "clicks.jsonl", tmp_path / "b" / "clicks.jsonl"
    b_settings = _settings(b_log, accept_unknown_ids=True)
    with TestClient(create_app(_settings(a_log))) as a, TestClient(create_app(b_settings)) as b:
        answer = _answer(a)  # answered by replica A; its feedback reaches replica B
        rid, shown = answer["id"], [r["index"] for r in answer["results"]]
        hidden = next(i for i in range(len(DOCS)) if i not in shown)
        _ready(b)

        def post(body, headers=KEY):
            return b.post("/v1/feedback", json=body, headers=headers)

        # what can be checked without the answer still is
        assert post({"id": rid, "clicks": ["d0"]}, headers={}).status_code == 401
        mismatch = post({"id": rid, "clicks": ["d0"], "dwell_ms": [1, 2]})
        assert mismatch.status_code == 422 and "dwell_ms: 2 values for 1 clicks" in mismatch.text
        assert post({"id": rid, "clicks": [-1]}).status_code == 422
        kept = post({"id": rid, "clicks": ["d0", hidden], "dwell_ms": [900, 100]})
        assert kept.status_code == 202, kept.text
        body = kept.json()
        assert body["id"] == rid and body["clicks"] == ["d0", hidden]
        assert body["unchecked"] is True and body["duplicate"] is False
        assert "written unchecked" in body["message"] and "all replicas' logs" in body["message"]
        # a client's retry is written once
        again = post({"id": rid, "clicks": ["d0", hidden], "dwell_ms": [900, 100]})
        assert again.status_code == 202 and again.json()["duplicate"] is True
        b.app.state.feedback.flush()
        a.app.state.feedback.flush()
    # also after a restart: the replica reads what its log kept unchecked
    with TestClient(create_app(b_settings)) as b:
        _ready(b)
        body = {"id": rid, "clicks": ["d0", hidden], "dwell_ms": [900, 100]}
        assert b.post("/v1/feedback", json=body, headers=KEY).json()["duplicate"] is True
        b.app.state.feedback.flush()
    (written,) = [r for r in _records(b_log) if r["type"] == "feedback"]
    assert written["unchecked"] is True and written["clicks"] == ["d0", hidden]
    # reading both replicas' logs joins it with its answer and checks it there
    sessions, report = read_log(logs_files([a_log, b_log]))
    assert report.orphan_feedback == 0 and report.unshown_clicks == 1
    assert sessions[0].impression.id == rid and sessions[0].clicks == tuple(sorted([0, hidden]))
    assert "1 click on a document not shown" in report.describe()
    # reading one replica's log only: the feedback is counted, and where its answers are said
    _, alone = read_log(b_log)
    assert alone.orphan_feedback == alone.orphan_unchecked == 1
    assert (
        "1 feedback record names an answer in none of the logs read: read every replica's log"
        in alone.describe()
    )


def test_without_the_setting_the_404_names_replicas_and_session_affinity(tmp_path):
    with TestClient(create_app(_settings(tmp_path / "clicks.jsonl"))) as client:
        _ready(client)
        missing = client.post("/v1/feedback", json={"id": "elsewhere", "clicks": [0]}, headers=KEY)
    assert missing.status_code == 404
    message = missing.json()["message"]
    assert "'elsewhere'" in message and "rotation" in message
    assert "a replica other than the one that answered" in message
    assert "session affinity" in message and "accept_unknown_ids = true" in message


def test_a_numeric_answer_id_is_read_as_its_string_as_the_log_reads_it(tmp_path):
    log = tmp_path / "clicks.jsonl"
    ClickLog(log, store="id").log_impression(123, "solar", DOCS, [0, 1])  # a converted log
    with TestClient(create_app(_settings(log))) as client:
        _ready(client)
        answer = client.post("/v1/feedback", json={"id": 123, "clicks": ["d1"]}, headers=KEY)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"id": "123", "clicks": [1], "duplicate": False}
        for wrong in (True, 1.5):
            refused = client.post("/v1/feedback", json={"id": wrong, "clicks": [0]}, headers=KEY)
            assert refused.status_code == 422 and "an integer is read as one" in refused.text
        client.app.state.feedback.flush()
    sessions, report = read_log(log)
    assert report.orphan_feedback == 0 and sessions[0].clicks == (1,)


def test_explain_impressions_are_marked_and_left_out_of_learning(tmp_path):
    log = tmp_path / "clicks.jsonl"
    settings = ServerSettings(
        pipelines={"bm25": "bm25", "other": "bm25"},
        default="bm25",
        api_keys=["sekret"],
        feedback={"path": str(log)},
        interleave=["bm25", "other"],
        interleave_share=1.0,
    )
    with TestClient(create_app(settings)) as client:
        searched = _answer(client)
        tried = _answer(client, "/v1/explain")  # what the playground calls
        for answer in (searched, tried):
            body = {"id": answer["id"], "clicks": [answer["results"][0]["index"]]}
            assert client.post("/v1/feedback", json=body, headers=KEY).status_code == 200
        client.app.state.feedback.flush()
    impressions = {r["id"]: r for r in _records(log) if r["type"] == "impression"}
    assert impressions[tried["id"]]["endpoint"] == "explain"
    assert "endpoint" not in impressions[searched["id"]]  # old logs read as before
    sessions, report = read_log(log)
    assert [s.impression.id for s in sessions] == [searched["id"]]
    assert report.explain_impressions == 1 and report.orphan_feedback == 0
    assert "1 impression of /v1/explain (the playground's) left out" in report.describe()
    assert interleaving_report(sessions).sessions == 1  # interleaving reads the searches only
    kept, _ = read_log(log, explain=True)
    assert [s.impression.id for s in kept] == [searched["id"], tried["id"]]


def test_one_settings_file_gives_each_replica_its_log_path(tmp_path, monkeypatch):
    folder = tmp_path / "service"
    folder.mkdir()
    settings_file = folder / "service.toml"
    settings_file.write_text('[server.feedback]\npath = "logs/clicks-${REPLICA_NAME}.jsonl"\n')
    monkeypatch.setenv("REPLICA_NAME", "pod-1")
    args = build_parser().parse_args(["serve", "--settings", str(settings_file)])
    settings = serve_settings(args)
    assert settings.feedback.path == str(folder / "logs" / "clicks-pod-1.jsonl")
    # a settings file that declares no [pipelines] serves the built-ins
    assert sorted(settings.pipelines) == ["bm25", "embedding", "hybrid"]
    assert settings.default == "hybrid"
    logs = tmp_path / "volume"
    monkeypatch.setenv("LOG_ROOT", str(logs))
    mapping = {"server": {"feedback": {"path": "$LOG_ROOT/clicks-${REPLICA_NAME}.jsonl"}}}
    absolute = ServerSettings.from_mapping({**mapping, "pipelines": {"bm25": "bm25"}})
    with TestClient(create_app(absolute)) as client:
        _answer(client)
        client.app.state.feedback.flush()
    assert [r["type"] for r in _records(logs / "clicks-pod-1.jsonl")] == ["impression"]
    monkeypatch.delenv("REPLICA_NAME")
    with pytest.raises(ValueError, match="environment variable 'REPLICA_NAME' is not set"):
        serve_settings(args)
    # scale-out.md's example, with the variable its Kubernetes pod template sets
    page = (DOCS_FOLDER / "scale-out.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(\[server.feedback\]\npath = .*?)```", page, re.S).group(1)
    settings_file.write_text(example)
    monkeypatch.setenv("POD_NAME", "reranker-7d9f-x2k4p")
    shown = serve_settings(args).feedback
    assert shown.path == "/logs/clicks-reranker-7d9f-x2k4p.jsonl" and shown.accept_unknown_ids


def test_the_pages_say_what_keys_v1_documents_and_a_file_without_pipelines_do(tmp_path, capsys):
    with TestClient(create_app(_settings(tmp_path / "clicks.jsonl"))) as client:
        rid = _answer(client)["id"]  # asked with one key, clicked with another
        body = {"id": rid, "clicks": ["d0"]}
        assert client.post("/v1/feedback", json=body, headers=OTHER_KEY).status_code == 200
        v1 = _answer(client, top_n=None)  # Cohere's v1 returns the documents by default
        assert [r["document"] for r in v1["results"]] == [DOCS[r["index"]] for r in v1["results"]]
    for page in ("clicks.md", "service.md"):
        text = " ".join((DOCS_FOLDER / page).read_text(encoding="utf-8").split())
        assert "with any valid API key for any answer" in text, page
    service = " ".join((DOCS_FOLDER / "service.md").read_text(encoding="utf-8").split())
    assert 'v1 returns the documents unless the request sends `"return_documents": false`' in (
        service
    )
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        "serves the pipelines its [pipelines] declares, or the built-ins when it declares none"
        in (shown)
    )
