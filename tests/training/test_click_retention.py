"""Retention by age (``retention_days``): no record outlives the limit by more than a
sweep period, none younger than the limit is lost, on controlled clocks (never sleeping);
and times without an offset are read as UTC."""

from __future__ import annotations

import json
import random
import time

import pytest

from rerankit.training.clicks import ClickLog, parse_record, read_log
from rerankit.training.clicks.log import log_files
from rerankit.training.clicks.retention import DAY, SWEEP_EVERY

DOCS = [{"id": "d0", "text": "solar"}, {"id": "d1", "text": "wind"}]
START = 1_800_000_000.0


class Clock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _times(path):
    return [json.loads(line)["time"] for f in log_files(path) for line in open(f, "rb")]


@pytest.mark.parametrize(
    "seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]
)  # make test: one seed; make test-slow: three
def test_no_record_outlives_the_limit_by_more_than_a_sweep_and_none_younger_is_lost(tmp_path, seed):
    rng = random.Random(seed)
    clock = Clock()
    path = tmp_path / "clicks.jsonl"
    days = rng.choice([0.5, 1, 2])
    log = ClickLog(
        path, max_bytes=rng.choice([0, 400, 3000]), backups=1000, retention_days=days, clock=clock
    )
    written = []
    for n in range(300):  # weeks of traffic with quiet spells of up to half a day
        clock.now += rng.choice([30, 600, 3600, 5 * 3600, 12 * 3600])
        assert log.log_impression(f"a{n}", "q", DOCS, [0, 1])
        written.append(clock.now)
        if rng.random() < 0.5:
            assert log.log_feedback(f"a{n}", [1])
            written.append(clock.now)
        on_disk = _times(path)
        # none older than the limit and a sweep period; every younger one still there
        assert min(on_disk) >= clock.now - days * DAY - SWEEP_EVERY
        limit = clock.now - days * DAY
        assert [t for t in on_disk if t >= limit] == [t for t in written if t >= limit]
    assert len(written) > 3 * len(_times(path))  # most were removed along the way
    assert log.write_errors == 0 and log.dropped == 0


def test_an_idle_log_keeps_its_records_until_expire_then_the_old_ones_go(tmp_path):
    clock = Clock()
    path = tmp_path / "clicks.jsonl"
    log = ClickLog(path, max_bytes=300, backups=100, retention_days=1, clock=clock)
    for n in range(40):  # one an hour: older rotated files and the live one
        clock.now = START + n * 3600
        log.log_impression(f"a{n}", "q", DOCS, [0, 1], time=clock.now)
    assert len(log_files(path)) > 3
    kept = _times(path)  # the writes' sweeps removed those over a day old
    assert min(kept) >= clock.now - DAY - SWEEP_EVERY and len(kept) >= 24
    clock.now += 0.5 * DAY  # half a day without a write: nothing changes by itself
    assert _times(path) == kept
    old = sum(1 for t in kept if t < clock.now - DAY)
    assert old > 0 and log.expire() == old
    assert min(_times(path)) >= clock.now - DAY
    removed = log.expire(clock.now + 2 * DAY)  # all of them, the live file too
    assert removed > 0 and log_files(path) == []
    sessions, report = read_log([])  # nothing left to read
    assert sessions == [] and report.impressions == 0
    assert ClickLog(path).expire() == 0  # no retention set: a no-op


def test_a_file_is_rewritten_keeping_its_young_records_and_its_modification_time(tmp_path):
    clock = Clock()
    path = tmp_path / "clicks.jsonl"
    log = ClickLog(path, max_bytes=0, retention_days=1, clock=clock)
    for n in range(5):
        log.log_impression(f"a{n}", "q", DOCS, [0, 1], time=START + n * 0.5 * DAY)
    with open(path, "ab") as f:  # a line with no time reads as 0: older than any limit
        f.write(b'{"type": "feedback", "id": "a4", "clicks": [0]}\n')
    log.log_feedback("a4", [1], time=START + 2 * DAY)
    before = path.stat().st_mtime
    assert log.expire(START + 2.4 * DAY) == 4  # a0, a1, a2 and the timeless line
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a3", "a4", "a4"]
    assert path.stat().st_mtime == before
    sessions, _ = read_log(path)
    assert [s.impression.id for s in sessions] == ["a3", "a4"]


@pytest.mark.parametrize("days", [0, -1, float("nan"), "30", True])
def test_a_bad_retention_is_refused(tmp_path, days):
    with pytest.raises(ValueError, match="retention_days must be a number of days > 0"):
        ClickLog(tmp_path / "c.jsonl", retention_days=days)


def test_a_time_without_an_offset_is_read_as_utc_whatever_the_machine_zone(monkeypatch):
    record = {"type": "feedback", "id": "a", "clicks": [], "time": "2026-10-06 05:33:55"}
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        when = parse_record(record).time
    finally:
        monkeypatch.undo()
        time.tzset()
    assert when == parse_record({**record, "time": "2026-10-06T05:33:55Z"}).time
    assert when == parse_record({**record, "time": "2026-10-06T07:33:55+02:00"}).time
