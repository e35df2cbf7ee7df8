"""Optimized interleaving: the lists it may show, the linear program behind its
distribution, its unbiasedness, and the report's reading of its credits."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.training.clicks import interleaving_report, optimized
from rerankit.training.clicks.optimized import (
    distribution,
    merges,
    optimized_interleave,
    rank_credits,
    solve_lp,
)
from rerankit.training.clicks.reader import Session, parse_record
from rerankit.training.clicks.records import Impression, LoggedDocument


def _is_merge(shown, a, b) -> bool:
    placed: set = set()
    for d in shown:
        best = [next((x for x in r if x not in placed), None) for r in (a, b)]
        if d not in best:
            return False
        placed.add(d)
    return True


rankings = st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.permutations(list(range(n))), st.permutations(list(range(n))))
)


@settings(max_examples=60, deadline=None)
@given(rankings, st.integers(1, 6), st.integers(0, 10**6))
def test_every_list_is_a_merge_and_the_answer_a_permutation_with_unbiased_credits(ab, depth, seed):
    a, b = ab
    lists = merges(a, b, depth)
    assert len(set(lists)) == len(lists)
    assert all(len(x) == min(depth, len(a)) and _is_merge(x, a, b) for x in lists)
    assert tuple(a[:depth]) in lists and tuple(b[:depth]) in lists
    p = distribution(rank_credits(lists, a, b))
    if p is not None:  # unbiased: every top k's expected credit is 0
        prefix = np.cumsum(rank_credits(lists, a, b), axis=1)
        assert p.min() >= 0 and p.sum() == pytest.approx(1)
        assert np.abs(p @ prefix).max() < 1e-9
    out = optimized_interleave(a, b, seed, depth=depth)
    if out is None:
        assert p is None
        return
    shown, credits = out
    assert sorted(shown) == sorted(a)  # every document once
    assert _is_merge(shown[:depth], a, b)
    assert all(c == 0 for c in credits[depth:]) and len(credits) == len(shown)


def test_credits_favour_the_pipeline_that_ranks_the_document_higher():
    a, b = ["x", "y", "z"], ["z", "y", "x", "w"]
    (credits,) = rank_credits([("x", "y", "z", "w")], a, b)
    # x: 1/1 - 1/3; y: level; z: 1/3 - 1/1; w: a dropped it, so it ranks 4th there
    assert credits == pytest.approx([2 / 3, 0, -2 / 3, 1 / 4 - 1 / 4])


def test_identical_rankings_show_that_ranking_and_credit_nothing():
    shown, credits = optimized_interleave([3, 1, 2], [3, 1, 2], seed=0)
    assert shown == [3, 1, 2] and credits == [0, 0, 0]


def test_random_clicks_earn_neither_pipeline_anything_and_liked_documents_do():
    # a user who clicks by position alone earns neither anything in expectation; one who
    # clicks the documents b ranks first favours b; draws come from the same lists
    a, b = list(range(20)), [5, 9, 0, 12, 1, 3, 17, 2, 8, 4, 10, 11, 13, 14, 15, 16, 18, 19, 6, 7]
    examined = np.array([0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06])
    lists = merges(a, b, 10)
    credits = rank_credits(lists, a, b)
    p = distribution(credits)
    assert p @ (credits @ examined) == pytest.approx(0, abs=1e-12)
    liked = np.array([[d in b[:3] for d in shown] for shown in lists])
    assert p @ (credits * liked).sum(axis=1) < -0.1
    rng = random.Random(7)
    for _ in range(5):
        shown, drawn = optimized_interleave(a, b, rng, k=10)
        i = lists.index(tuple(shown))
        assert p[i] > 0 and drawn == pytest.approx(list(credits[i]))


def test_only_the_first_depth_positions_are_mixed_and_the_rest_follow_the_first():
    a, b = list(range(30)), list(reversed(range(30)))
    shown, credits = optimized_interleave(a, b, seed=3, k=15, depth=4)
    assert len(shown) == 15 and len(set(shown)) == 15
    rest = [d for d in a if d not in shown[:4]][:11]
    assert shown[4:] == rest and credits[4:] == [0.0] * 11


def test_the_simplex_agrees_with_scipy():
    linprog = pytest.importorskip("scipy.optimize").linprog
    rng = np.random.default_rng(0)
    for t in range(150):
        m, n = int(rng.integers(1, 7)), int(rng.integers(1, 30))
        A = rng.normal(size=(m, n)).round(1)
        if t % 3 == 0:
            A[-1] = A[0]  # a redundant row
        x0 = rng.random(n) * (rng.random(n) < 0.5)
        b = A @ x0 if t % 4 else rng.normal(size=m)
        A, b = np.vstack([A, np.ones(n)]), np.r_[b, x0.sum() if t % 4 else 1.0]
        c = rng.normal(size=n)
        ref = linprog(-c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
        got = solve_lp(c, A, b)
        if ref.status == 2:
            assert got is None, t
        elif ref.status == 0:
            assert got is not None, t
            assert c @ got == pytest.approx(-ref.fun, abs=1e-7)
            assert np.abs(A @ got - b).max() < 1e-7


@pytest.mark.parametrize("stall", [0, 3, 10**6])
def test_interleaving_programs_reach_scipys_optimum(monkeypatch, stall):
    """The degenerate programs optimized interleaving solves (every bound but one 0, up to
    1,024 columns), where the fast pivot rule could cycle: the same optimum as HiGHS, with
    Bland's rule from the start (0), switching to it early (3), or never (10**6)."""
    monkeypatch.setattr(optimized, "_STALL", stall)
    linprog = pytest.importorskip("scipy.optimize").linprog
    rng = random.Random(5)
    for t in range(12):
        a = list(range(30))
        b = a[:]
        for _ in range(rng.choice([1, 3, 8, 20])):
            i, j = rng.randrange(15), rng.randrange(15)
            b[i], b[j] = b[j], b[i]
        if t == 0:
            b = list(range(30, 60))  # disjoint: every one of the 2**10 merges
        credits = rank_credits(merges(a, b, 10), a, b)
        prefix = np.cumsum(credits, axis=1)
        A = np.vstack([prefix.T, np.ones((1, len(credits)))])
        bounds = np.r_[np.zeros(10), 1.0]
        c = np.abs(credits) @ (1.0 / np.arange(1, 11))
        ref = linprog(-c, A_eq=A, b_eq=bounds, bounds=(0, None), method="highs")
        got = solve_lp(c, A, bounds)
        assert (ref.status == 0) == (got is not None), t
        if got is not None:
            assert c @ got == pytest.approx(-ref.fun, abs=1e-9)
            assert np.abs(A @ got - bounds).max() < 1e-9


def test_an_infeasible_program_has_no_solution():
    assert solve_lp(np.ones(2), np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([1.0, 3.0])) is None


def _session(n, credits, clicks, pipelines=("a", "b"), query="q", time=0.0, info=None):
    docs = tuple(LoggedDocument(id=str(i)) for i in range(len(credits)))
    imp = Impression(
        id=str(n),
        query=query,
        documents=docs,
        shown=tuple(range(len(credits))),
        pipeline=pipelines[0],
        interleaving={"pipelines": list(pipelines), "credits": list(credits)}
        if info is None
        else info,
        time=time,
    )
    return Session(impression=imp, clicks=tuple(clicks))


def test_the_share_interleaved_counts_the_requests_of_the_method_s_own_time():
    # 100 requests to "a" under team draft, half interleaved; then 100 under optimized
    # interleaving, half interleaved: each method's share is a half, not a quarter
    team = {"pipelines": ["a", "b"], "teams": [0, 1]}
    log = []
    for t in range(200):
        session = _session(t, [0.5, -0.5], [0], time=t, info=team if t < 100 else None)
        if t % 2:  # a plain answer of "a"
            session = Session(impression=replace(session.impression, interleaving=None))
        log.append(session)
    for method in ("team-draft", "optimized"):
        report = interleaving_report(log, method=method)
        assert report.sessions == 50 and report.requests == 99
        assert report.share == pytest.approx(50 / 99)


def test_the_report_adds_up_the_clicked_positions_credits():
    sessions = [
        _session(0, [0.5, -0.25, 0.0], [0, 1]),  # +0.25: a
        _session(1, [0.5, -0.25, 0.0], [1]),  # -0.25: b
        _session(2, [0.5, -0.25, 0.0], [2]),  # a click credited nothing: not clicked
        _session(3, [0.5, -0.25, 0.0], []),
        _session(4, [0.5, -0.25, 0.0], [0], pipelines=("b", "a")),  # the pair reversed
    ]
    report = interleaving_report(sessions, pipelines=("a", "b"))
    assert report.method == "optimized"
    assert report.sessions == 5 and report.clicked == 3 and report.wins == (1, 2)
    assert report.delta == pytest.approx((0.25 - 0.25 - 0.5) / 3)
    assert "5 interleaved sessions (optimized) over 1 query" in report.describe()
    assert "mean credit per clicked session" in report.describe()


def test_a_clear_preference_is_named_and_a_mixed_log_must_choose():
    rng = np.random.default_rng(1)
    sessions = [
        _session(n, [0.5, -0.5, 0.2, -0.2], [p for p in (0, 2) if rng.random() < 0.5])
        for n in range(200)
    ]
    assert interleaving_report(sessions).winner == "a"
    by_query = interleaving_report(sessions, by="query")
    assert by_query.by == "query" and by_query.method == "optimized"
    assert "only 1 query: an interval over so few is rough" in by_query.describe()
    team = Session(
        impression=Impression(
            id="t",
            query="q",
            documents=(LoggedDocument(id="0"), LoggedDocument(id="1")),
            shown=(0, 1),
            pipeline="a",
            interleaving={"pipelines": ["a", "b"], "teams": [1, 0]},
        ),
        clicks=(0,),
    )
    with pytest.raises(ValueError, match="interleaved two ways") as both:
        interleaving_report([*sessions, team])
    assert "report each apart (method='team-draft' (--method) or 'optimized')" in str(both.value)
    assert interleaving_report([*sessions, team], method="team-draft").wins == (0, 1)
    assert interleaving_report([*sessions, team], method="optimized").sessions == 200
    with pytest.raises(ValueError, match="method 'balanced'"):
        interleaving_report(sessions, method="balanced")


def test_team_draft_is_also_spelt_as_its_function_is_named():
    team = {"pipelines": ["a", "b"], "teams": [1, 0]}
    log = [_session(n, [0, 0], [0], info=team) for n in range(5)]
    log += [_session(n, [0.5, -0.5], [0]) for n in range(5, 8)]
    dashed = interleaving_report(log, method="team-draft")
    underscored = interleaving_report(log, method="team_draft")
    assert dashed.method == underscored.method == "team-draft"
    assert dashed.as_dict() == underscored.as_dict()
    assert (dashed.sessions, dashed.wins) == (5, (0, 5))


def test_the_reader_checks_an_impression_s_credits():
    record = {
        "type": "impression",
        "id": "r1",
        "query": "q",
        "documents": [{"id": "x"}, {"id": "y"}],
        "shown": [0, 1],
        "interleaving": {"pipelines": ["a", "b"], "credits": [0.5, -0.5]},
    }
    assert parse_record(record).interleaving["credits"] == [0.5, -0.5]
    for bad in ([0.5, "x"], [0.1, 0.2, 0.3], "0.5"):
        broken = {**record, "interleaving": {"pipelines": ["a", "b"], "credits": bad}}
        with pytest.raises(ValueError, match=r"impression r1: interleaving\.credits"):
            parse_record(broken)
    with pytest.raises(ValueError, match=r"interleaving\.pipelines"):
        parse_record({**record, "interleaving": {"pipelines": ["a"], "credits": [0, 0]}})
