"""Claims on an answer's computing (what lets one of several replicas, or of a machine's
processes, compute an answer while the others wait for it): one holder at a time among
every store that shares the server or file, released only by its holder, expiring by
itself, and never blocking when the store is down (the caller computes)."""

from __future__ import annotations

import threading
import time

import pytest

from rerankit.cache import AnswerCache, error_counts


@pytest.fixture(params=["sqlite", "redis"])
def open_answers(request, tmp_path):
    """``open_answers()``: a new AnswerCache on one shared place (as another process
    would open it)."""
    if request.param == "sqlite":
        return lambda: AnswerCache(tmp_path / "answers.sqlite")
    url = request.getfixturevalue("redis_url")
    return lambda: AnswerCache(url=url)


def test_one_holder_at_a_time_released_only_by_it(open_answers):
    first, second = open_answers(), open_answers()
    token = first.claim("fp:-:q1", 30)
    assert token
    assert second.claim("fp:-:q1", 30) is None  # another holds it
    assert second.claimed("fp:-:q1") and not second.claimed("fp:-:q2")
    assert second.claim("fp:-:q2", 30)  # another key: free
    second.release("fp:-:q1", "not-the-token")
    assert second.claimed("fp:-:q1")  # still the first one's
    first.release("fp:-:q1", token)
    assert not second.claimed("fp:-:q1")
    assert second.claim("fp:-:q1", 30)


def test_a_claim_expires_by_itself(open_answers):
    holder, other = open_answers(), open_answers()
    assert holder.claim("k", 0.2)  # its holder died: nobody releases it
    assert other.claim("k", 30) is None
    time.sleep(0.5)
    assert not other.claimed("k")
    late = other.claim("k", 30)
    assert late
    holder.release("k", "expired-token")  # (a holder that comes back late frees nothing)
    assert other.claimed("k")


def test_of_many_claiming_at_once_exactly_one_wins(open_answers):
    stores = [open_answers() for _ in range(8)]
    won: list[str | None] = []
    start = threading.Barrier(len(stores))

    def claim(store):
        start.wait()
        won.append(store.claim("burst", 30))

    threads = [threading.Thread(target=claim, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for t in won if t) == 1 and won.count(None) == 7


def test_a_store_that_cannot_be_reached_never_holds_anyone_up(nothing_listening_url):
    answers = AnswerCache(url=nothing_listening_url, timeout=0.2)
    before = error_counts()["answer"]
    started = time.monotonic()
    assert answers.claim("k", 30) == ""  # go on as if holding it: compute
    assert not answers.claimed("k")  # nobody to wait for
    answers.release("k", "")
    assert time.monotonic() - started < 5  # bounded by the timeout (generous under load)
    assert error_counts()["answer"] > before
    assert answers.store.ping() is not None


def test_ping_says_whether_the_server_answers(redis_url, tmp_path):
    assert AnswerCache(url=redis_url).store.ping() is None
    local = AnswerCache(tmp_path / "a.sqlite")
    assert local.store.ping() is None
    local.close()
    assert "closed" in local.store.ping()
    assert local.claim("k", 1) == ""  # closed: nothing held
