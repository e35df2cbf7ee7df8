"""The service's click log: clicks only on documents shown, dwell times said to be >= 0,
retention by age (controlled clocks, never sleeping), and the log's path read beside the
settings file."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from rerankit.server import ServerSettings, create_app
from rerankit.server.feedback import FeedbackLog, FeedbackSettings
from rerankit.training.clicks import read_log
from rerankit.training.clicks.log import log_files
from rerankit.training.clicks.retention import DAY, SWEEP_EVERY

KEY = {"Authorization": "Bearer sekret"}
DOCS = ["solar panels", "wind farms", "solar power plants", "pasta"]


def _settings(tmp_path, **feedback):
    return ServerSettings(
        pipelines={"bm25": "bm25"},
        default="bm25",
        api_keys=["sekret"],
        feedback={"path": str(tmp_path / "clicks.jsonl"), **feedback},
    )


def _shown_two(client):
    deadline = time.time() + 120  # a request before the warm-up ends would get a 503
    while client.get("/ready").json()["status"] == "loading" and time.time() < deadline:
        time.sleep(0.02)
    body = {"query": "solar", "documents": DOCS, "top_n": 2}
    answer = client.post("/v2/rerank", json=body, headers=KEY).json()
    return answer["id"], [r["index"] for r in answer["results"]]


def test_a_click_on_a_document_not_shown_is_a_422_naming_it_also_after_a_restart(tmp_path):
    settings = _settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        rid, shown = _shown_two(client)
        hidden = next(i for i in range(len(DOCS)) if i not in shown)
        for clicks in ([shown[0], hidden], [shown[0], str(hidden)]):
            answer = client.post("/v1/feedback", json={"id": rid, "clicks": clicks}, headers=KEY)
            assert answer.status_code == 422
            assert answer.json()["message"].startswith(
                f"invalid request: clicks.1: {clicks[1]!r} names document {hidden}, which the "
                f"answer did not show (it showed {sorted(shown)}"
            )
        ok = client.post("/v1/feedback", json={"id": rid, "clicks": shown[::-1]}, headers=KEY)
        assert ok.status_code == 200 and ok.json()["clicks"] == shown[::-1]
        client.app.state.feedback.flush()
    with TestClient(create_app(settings)) as client:  # the answer read back from the log
        body = {"id": rid, "clicks": [hidden]}
        assert client.post("/v1/feedback", json=body, headers=KEY).status_code == 422
    sessions, report = read_log(tmp_path / "clicks.jsonl")
    assert report.unshown_clicks == 0 and sessions[0].clicks == tuple(sorted(shown))


def test_a_negative_or_absurd_dwell_time_is_said_to_be_one(tmp_path):
    with TestClient(create_app(_settings(tmp_path))) as client:
        rid, shown = _shown_two(client)
        for dwell, said in [
            (-5, "dwell_ms: -5: must be a number of milliseconds from 0 to 86400000"),
            ([-5.5], "item 0: -5.5"),
            (1e300, "dwell_ms: 1e+300: must be a number of milliseconds from 0"),
            ([86_400_001], "item 0: 86400001"),
        ]:
            body = {"id": rid, "clicks": [shown[0]], "dwell_ms": dwell}
            answer = client.post("/v1/feedback", json=body, headers=KEY)
            assert answer.status_code == 422
            assert said in answer.json()["message"], answer.json()
            assert "valid number" not in answer.json()["message"]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_service_sweeps_old_records_and_forgets_their_answers(tmp_path):
    clock = Clock(1_800_000_000.0)
    settings = FeedbackSettings(path=str(tmp_path / "clicks.jsonl"), retention_days=2)
    feedback = FeedbackLog(settings, clock=clock)
    docs = [type("D", (), {"id": f"d{i}", "text": t, "metadata": {}})() for i, t in enumerate(DOCS)]
    for n in range(3):  # answers a day apart
        results = [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4}]
        feedback.impression({"id": f"a{n}", "results": results}, docs, "solar", "bm25")
        feedback.flush()
        clock.now += DAY
    # two days after the first answer, plus a bit: nothing swept yet (no write, no tick)
    assert feedback.index.find("a0") is not None
    waits = []

    def wait(seconds):  # the timer's wait, without waiting: two ticks, then stop
        waits.append(seconds)
        return len(waits) > 2

    feedback.sweeping(wait)
    feedback.flush()
    assert waits == [SWEEP_EVERY] * 3
    sessions, _ = read_log(log_files(tmp_path / "clicks.jsonl"))
    assert [s.impression.id for s in sessions] == ["a1", "a2"]
    assert feedback.index.find("a0") is None  # forgotten: feedback naming it is a 404
    assert feedback.index.find("a1") is not None
    clock.now += 2 * DAY
    feedback.sweep()
    assert log_files(tmp_path / "clicks.jsonl") == []
    feedback.close()


def test_retention_days_in_the_settings(tmp_path):
    settings = ServerSettings.from_mapping(
        {"server": {"feedback": {"path": "c.jsonl", "retention_days": 30}}}
    )
    assert settings.feedback.retention_days == 30
    assert ServerSettings.from_mapping(settings.to_mapping()).feedback == settings.feedback
    with pytest.raises(ValueError, match=r"\[server.feedback\] retention_days must be"):
        FeedbackSettings(path="c.jsonl", retention_days=0)


def test_the_log_path_is_read_beside_the_settings_file_as_pipeline_files_are(
    tmp_path, monkeypatch, caplog
):
    folder = tmp_path / "service"
    folder.mkdir()
    settings_file = folder / "service.toml"
    settings_file.write_text('[server.feedback]\npath = "logs/clicks.jsonl"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = ServerSettings.from_file(settings_file)
    assert settings.feedback.path == str(folder / "logs" / "clicks.jsonl")
    # a table or a plain path alike; an absolute path as it is
    settings_file.write_text('[server]\nfeedback = "clicks.jsonl"\n')
    assert ServerSettings.from_file(settings_file).feedback.path == str(folder / "clicks.jsonl")
    absolute = tmp_path / "abs" / "clicks.jsonl"
    settings_file.write_text(f"[server.feedback]\npath = {json.dumps(str(absolute))}\n")
    assert ServerSettings.from_file(settings_file).feedback.path == str(absolute)
    # a log left where an older version wrote it (the working folder) is pointed out
    (elsewhere / "clicks.jsonl").write_text("")
    settings_file.write_text('[server.feedback]\npath = "clicks.jsonl"\n')
    with caplog.at_level("WARNING", logger="rerankit.server.feedback"):
        ServerSettings.from_file(settings_file)
    assert f"the log at {elsewhere / 'clicks.jsonl'}" in caplog.text
    assert "is no longer appended to" in caplog.text


def test_feedback_names_each_clicked_document_once(tmp_path):
    """A repeat (the same index twice, or an index and the id of the same document) is a 422
    naming it, before anything is written: one caller cannot fill the log with repeats;
    more clicks than an answer may hold documents are refused too, with unknown ids."""
    settings = _settings(tmp_path, accept_unknown_ids=True)
    settings.max_documents = 5
    with TestClient(create_app(settings)) as client:
        rid, shown = _shown_two(client)
        cases = {
            (shown[0], shown[1], shown[0]): f"clicks.2: {shown[0]!r} repeats clicks[0]",
            (shown[1], str(shown[1])): (
                f"clicks.1: {str(shown[1])!r} names the same document as clicks[0]"
            ),
        }
        for clicks, said in cases.items():
            body = {"id": rid, "clicks": list(clicks)}
            answer = client.post("/v1/feedback", json=body, headers=KEY)
            assert answer.status_code == 422 and said in answer.json()["message"], answer.json()
        many = {"id": "elsewhere", "clicks": [f"d{i}" for i in range(6)]}
        answer = client.post("/v1/feedback", json=many, headers=KEY)
        assert answer.status_code == 422
        assert "6 clicks, more than the 5 documents" in answer.json()["message"]
        again = {"id": "elsewhere", "clicks": ["d1", "d1"]}
        answer = client.post("/v1/feedback", json=again, headers=KEY)
        assert answer.status_code == 422 and "'d1' repeats clicks[0]" in answer.json()["message"]
        ok = client.post("/v1/feedback", json={"id": rid, "clicks": shown}, headers=KEY)
        assert ok.status_code == 200
        client.app.state.feedback.flush()
    sessions, _ = read_log(tmp_path / "clicks.jsonl")
    assert [s.clicks for s in sessions] == [tuple(sorted(shown))]  # only the valid feedback


@pytest.mark.parametrize(("days", "said"), [(1, "at most 1 day and an hour"), (2.5, "2.5 days")])
def test_the_start_line_says_how_long_records_are_kept(tmp_path, caplog, days, said):
    caplog.set_level("INFO", logger="rerankit.server.feedback")
    settings = FeedbackSettings(path=str(tmp_path / "clicks.jsonl"), retention_days=days)
    feedback = FeedbackLog(settings, clock=Clock(1_800_000_000.0))
    feedback.flush()
    feedback.close()
    assert said in caplog.text


def test_documents_without_ids_kept_as_ids_only_are_said_once_to_be_unlearnable(tmp_path, caplog):
    """With store = "id", a /v2/rerank request's strings are logged by their index only:
    nothing can give their texts to learning. The service says so (once), with what to do."""
    with (
        caplog.at_level("WARNING", logger="rerankit.server.feedback"),
        TestClient(create_app(_settings(tmp_path, store="id"))) as client,
    ):
        _shown_two(client)
        _shown_two(client)
    said = [r.getMessage() for r in caplog.records if "came without ids" in r.getMessage()]
    assert len(said) == 1
    assert 'store = "id" keeps only ids' in said[0] and "/v1/rerank" in said[0]
    caplog.clear()
    hashed = _settings(tmp_path / "hashed", store="hash")
    with (
        caplog.at_level("WARNING", logger="rerankit.server.feedback"),
        TestClient(create_app(hashed)) as client,
    ):
        _shown_two(client)  # hashes: a corpus gives the texts
    assert "came without ids" not in caplog.text
