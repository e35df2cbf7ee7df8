"""Team-draft interleaving: hand-checked cases, its invariants, click credit and the
report's verdict."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerankit.cli import main
from rerankit.training.clicks import ClickLog, credit, interleaving_report, read_log, team_draft
from rerankit.training.clicks.interleave import sign_test
from rerankit.training.clicks.simulate import PositionBasedModel


def test_hand_checked_drafts():
    # Round 1: a coin decides who picks first; a takes A (its best), b takes B (its best).
    # Round 2: a coin again; whoever goes first takes C (a's and b's best not placed) and
    # the other has nothing new left. So four drafts, each as likely.
    seen: dict[tuple, int] = {}
    for seed in range(200):
        draft = tuple(zip(*team_draft(["A", "B", "C"], ["B", "C", "A"], seed), strict=True))
        seen[draft] = seen.get(draft, 0) + 1
    assert set(seen) == {
        (("A", 0), ("B", 1), ("C", 0)),
        (("A", 0), ("B", 1), ("C", 1)),
        (("B", 1), ("A", 0), ("C", 0)),
        (("B", 1), ("A", 0), ("C", 1)),
    }
    assert min(seen.values()) > 25
    # k cuts the draft: the first position goes to whoever won the first coin
    assert team_draft(["A", "B"], ["B", "A"], 0, k=1) in (
        (["A"], [0]),
        (["B"], [1]),
    )


def test_identical_rankings_interleave_to_themselves_one_pick_each_per_round():
    order, teams = team_draft([3, 1, 2, 0], [3, 1, 2, 0], 7, shared_prefix=False)
    assert order == [3, 1, 2, 0]
    assert sorted(teams[:2]) == [0, 1] and sorted(teams[2:]) == [0, 1]
    # by default the common prefix (here all of it) belongs to neither pipeline
    assert team_draft([3, 1, 2, 0], [3, 1, 2, 0], 7) == ([3, 1, 2, 0], [-1, -1, -1, -1])


def test_the_common_prefix_comes_first_and_credits_neither():
    for seed in range(50):
        order, teams = team_draft(["A", "B", "C", "D"], ["A", "B", "D", "C"], seed)
        assert order[:2] == ["A", "B"] and teams[:2] == [-1, -1]
        # after the prefix the draft starts afresh: C (a's best left) and D (b's) in
        # either order
        assert sorted(zip(order[2:], teams[2:], strict=True)) == [("C", 0), ("D", 1)]
    # a prefix longer than k is cut at k
    assert team_draft([1, 2, 3], [1, 2, 4], 0, k=1) == ([1], [-1])
    # clicks there are ignored, like clicks past the list
    assert credit([-1, -1, 0, 1], [1, 2, 3]) == (1, 0)


def test_the_same_seed_gives_the_same_draft():
    a, b = list(range(20)), list(reversed(range(20)))
    assert team_draft(a, b, 5) == team_draft(a, b, 5)
    assert team_draft(a, b, random.Random(5)) == team_draft(a, b, random.Random(5))
    drafts = {tuple(team_draft(a, b, s)[1]) for s in range(20)}
    assert len(drafts) > 1


@settings(max_examples=300, deadline=None)
@given(
    universe=st.integers(1, 25),
    data=st.data(),
    k=st.one_of(st.none(), st.integers(1, 30)),
    seed=st.integers(0, 2**31),
)
def test_every_position_has_one_team_and_the_list_is_a_permutation_prefix(universe, data, k, seed):
    items = list(range(universe))
    a = data.draw(st.permutations(items))
    b = data.draw(st.permutations(items))
    cut_a = data.draw(st.integers(0, universe))
    cut_b = data.draw(st.integers(1 if cut_a == 0 else 0, universe))
    a, b = a[:cut_a], b[:cut_b]  # rankings may be of different lengths and sets
    shared = data.draw(st.booleans())
    order, teams = team_draft(a, b, seed, k=k, shared_prefix=shared)
    full = list(order)
    union = set(a) | set(b)
    assert len(order) == len(teams) == (len(union) if k is None else min(k, len(union)))
    assert len(set(order)) == len(order) and set(order) <= union
    assert set(teams) <= ({-1, 0, 1} if shared else {0, 1})
    # -1 marks exactly the common prefix: the longest start both rankings share
    common = next(
        (i for i in range(min(len(a), len(b), len(order))) if a[i] != b[i]),
        min(len(a), len(b), len(order)),
    )
    if shared:
        assert teams[:common] == [-1] * common and order[:common] == a[:common]
        assert -1 not in teams[common:]
        order, teams = order[common:], teams[common:]
    for team, ranking in ((0, a), (1, b)):
        picked = [d for d, t in zip(order, teams, strict=True) if t == team]
        assert all(d in ranking for d in picked)
        # each team's picks follow its own ranking
        assert [ranking.index(d) for d in picked] == sorted(ranking.index(d) for d in picked)
        # and a team always takes its best document not yet placed
        for d, t, i in zip(order, teams, range(len(order)), strict=True):
            if t == team:
                placed = set(full[: i + len(full) - len(order)])
                assert d == next(x for x in ranking if x not in placed)
    if k is None:
        assert sorted(full) == sorted(union)  # the whole union: a permutation of it
    counts = [teams[: n + 1].count(0) - teams[: n + 1].count(1) for n in range(len(teams))]
    if set(a) == set(b):  # both have documents to the end: picks never differ by 2
        assert all(abs(c) <= 1 for c in counts)


def test_clicks_credit_the_team_of_their_position():
    assert credit([0, 1, 0, 1], [1, 3]) == (2, 0)
    assert credit([0, 1, 0, 1], [2, 3, 4]) == (1, 2)
    assert credit([0, 1], [5]) == (0, 0)  # past the list: ignored
    assert credit([1, 0], []) == (0, 0)


def test_the_sign_test():
    assert sign_test(9, 1) == pytest.approx(2 * 11 / 1024)
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0


def _interleaved_log(path, better_first: bool, sessions: int, seed: int):
    """Sessions of 50 queries of 10 documents, document i relevant with grade 4 - i // 2
    (best first in ``good``); the other pipeline ranks them in a shuffled order."""
    rng = np.random.default_rng(seed)
    model = PositionBasedModel()
    log = ClickLog(path, store="id")
    orders = {q: (list(range(10)), list(rng.permutation(10))) for q in range(50)}
    grades = np.array([4, 4, 3, 3, 2, 2, 1, 1, 0, 0])
    for s in range(sessions):
        q = int(rng.integers(50))
        good, bad = orders[q]
        first, second = (good, bad) if better_first else (bad, good)
        order, teams = team_draft(first, second, rng)
        docs = [{"id": f"{q}-{i}"} for i in range(10)]
        rid = f"s{s}"
        log.log_impression(
            rid,
            f"query {q}",
            docs,
            order,
            pipeline="interleaved",
            interleaving={"pipelines": ["first", "second"], "teams": teams},
        )
        clicked = model.click(np.array([order]), grades, rng)[0]
        if clicked.any():
            log.log_feedback(rid, [order[p] for p in np.flatnonzero(clicked)])
    return read_log(path)[0]


@pytest.mark.parametrize("better_first", [True, False])
def test_the_report_finds_the_better_pipeline(tmp_path, better_first):
    sessions = _interleaved_log(tmp_path / "i.jsonl", better_first, 1000, seed=1)
    report = interleaving_report(sessions)
    assert report.pipelines == ("first", "second")
    assert report.winner == ("first" if better_first else "second")
    assert report.sessions == 1000 and report.queries == 50
    assert sum(report.wins) + report.ties == 1000
    assert report.p_value < 0.01
    low, high = report.interval
    assert low < report.delta < high
    assert "wins" in report.describe()


def _identical_log(path, sessions: int, shared_prefix: bool):
    """Two pipelines with the same ranking of 10 documents; one click a session at random."""
    rng = np.random.default_rng(0)
    log = ClickLog(path, store="id")
    for s in range(sessions):
        order, teams = team_draft(
            list(range(10)), list(range(10)), rng, shared_prefix=shared_prefix
        )
        log.log_impression(
            f"s{s}",
            f"q{s % 20}",
            [{"id": str(i)} for i in range(10)],
            order,
            interleaving={"pipelines": ["a", "b"], "teams": teams},
        )
        log.log_feedback(f"s{s}", [int(rng.integers(10))])
    return read_log(path)[0]


def test_the_report_names_no_winner_between_equal_pipelines(tmp_path):
    sessions = _identical_log(tmp_path / "i.jsonl", 400, shared_prefix=False)
    for by in ("session", "query"):
        report = interleaving_report(sessions, by=by)
        assert report.winner is None
        assert report.interval[0] < 0 < report.interval[1]


def test_identical_pipelines_tie_every_session_with_the_common_prefix(tmp_path):
    report = interleaving_report(_identical_log(tmp_path / "i.jsonl", 100, shared_prefix=True))
    assert report.wins == (0, 0) and report.ties == 100 and report.clicked == 0
    assert report.winner is None
    assert "100 with no click credited to either" in report.describe()
    assert report.identical == 100 and report.needed is None
    said = "a and b ranked the same documents in the same order in 100 of 100 sessions: "
    assert said + "interleaving cannot tell them apart; compare them with eval" in (
        report.describe()
    )
    assert "over 20 queries" in report.describe()
    one = [
        s for s in _identical_log(tmp_path / "one.jsonl", 20, True) if s.impression.query == "q0"
    ]
    assert "1 interleaved session (team draft) over 1 query," in interleaving_report(one).describe()


def test_the_report_counts_the_sessions_the_pipelines_ranked_alike(tmp_path, capsys):
    """Optimized sessions credit nothing where both rankings agree: the report counts them
    (``identical``, in --json too) and, where they are most sessions, says interleaving
    cannot tell the two apart there; sessions that drafted teams are not counted."""
    path = tmp_path / "i.jsonl"
    log = ClickLog(path, store="id")
    for s in range(10):
        alike = s < 8
        info = {"pipelines": ["a", "b"], "credits": [0.0] * 3 if alike else [0.0, 0.5, -0.5]}
        log.log_impression(
            f"s{s}", "q", [{"id": str(i)} for i in range(3)], [0, 1, 2], **{"interleaving": info}
        )
        log.log_feedback(f"s{s}", [2 if s == 9 else 1])  # one each way where credited
    log.close()
    report = interleaving_report(read_log(path)[0])
    assert report.identical == 8 and report.sessions == 10 and report.winner is None
    said = "a and b ranked the same documents in the same order in 8 of 10 sessions: "
    assert said + "interleaving cannot tell them apart there, only in the other 2" in (
        report.describe()
    )
    assert main(["interleave-report", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identical"] == 8
    drafted = interleaving_report(_identical_log(tmp_path / "d.jsonl", 50, shared_prefix=False))
    assert drafted.identical == 0 and "ranked the same" not in drafted.describe()


def test_a_log_without_interleaving_is_refused(tmp_path):
    log = ClickLog(tmp_path / "i.jsonl")
    log.log_impression("a", "q", [{"id": "x"}], [0])
    with pytest.raises(ValueError, match="no interleaved sessions") as e:
        interleaving_report(read_log(tmp_path / "i.jsonl")[0])
    # what writes them: a service interleaving two pipelines, with feedback on
    assert "[server] interleave = [A, B], with [server.feedback] on" in str(e.value)


def _decided_log(path):
    """Two queries of 40 sessions each won by ``a``; 18 of 20 sessions each, half won by
    ``a`` and half by ``b``: ``a`` leads because of two queries."""
    log = ClickLog(path, store="id")
    docs = [{"id": "x"}, {"id": "y"}]
    s = 0
    for q in range(20):
        for i in range(40 if q < 2 else 20):
            winner = 0 if q < 2 or i % 2 == 0 else 1
            log.log_impression(
                f"s{s}",
                f"q{q}",
                docs,
                [0, 1],
                interleaving={"pipelines": ["a", "b"], "teams": [0, 1]},
            )
            log.log_feedback(f"s{s}", [winner])  # position winner + 1 is winner's
            s += 1
    return read_log(path)[0]


def test_the_interval_resamples_sessions_by_default_or_queries(tmp_path):
    sessions = _decided_log(tmp_path / "i.jsonl")
    by_session = interleaving_report(sessions)
    by_query = interleaving_report(sessions, by="query")
    assert by_session.wins == by_query.wins == (260, 180)
    assert by_session.delta == pytest.approx(80 / 440)
    # resampling sessions, computed directly
    outcomes = np.array([1] * 260 + [-1] * 180)
    rng = np.random.default_rng(3)
    deltas = rng.choice(outcomes, size=(4000, len(outcomes))).mean(axis=1)
    assert by_session.interval == pytest.approx(
        (np.quantile(deltas, 0.025), np.quantile(deltas, 0.975)), abs=0.01
    )
    assert by_session.by == "session" and "interval over sessions" in by_session.describe()
    assert (
        "0 with no click credited to either; of the 440 with one, a won 260, b won 180, 0 tied; "
        "delta (a - b) +0.182" in by_session.describe()
    )
    # this traffic prefers a, but two queries decide it: over queries, no winner
    assert by_session.winner == "a" and by_query.winner is None
    assert by_query.interval[0] <= 0 < by_query.interval[1]
    assert "interval over queries" in by_query.describe()
    with pytest.raises(ValueError, match="by 'user'"):
        interleaving_report(sessions, by="user")


def _counted_log(path, won_a: int, won_b: int, unclicked: int):
    """Sessions over 20 queries: ``won_a`` with a click on ``a``'s document, ``won_b`` on
    ``b``'s, ``unclicked`` without a click."""
    log = ClickLog(path, store="id")
    outcomes = [[0]] * won_a + [[1]] * won_b + [[]] * unclicked
    for s, clicked in enumerate(outcomes):
        log.log_impression(
            f"s{s}",
            f"q{s % 20}",
            [{"id": "x"}, {"id": "y"}],
            [0, 1],
            interleaving={"pipelines": ["a", "b"], "teams": [0, 1]},
        )
        if clicked:
            log.log_feedback(f"s{s}", clicked)
    return read_log(path)[0]


def test_an_undecided_report_says_how_much_traffic_would_decide_it(tmp_path):
    report = interleaving_report(_counted_log(tmp_path / "few.jsonl", 55, 45, 100))
    assert report.winner is None and report.delta == pytest.approx(0.1)
    needed = report.needed
    assert needed is not None and needed > report.sessions
    assert (
        f"about {needed:,} sessions in all, {needed - report.sessions:,} more than the "
        f"{report.sessions} logged, would tell, 80 times in 100" in report.describe()
    )
    # the same shares of traffic name the winner at the plan; at 0.4 of it, not yet (the
    # plan is for 80 % power: at exactly the shares seen, half of it just names one)
    for share, winner in ((1.0, "a"), (0.4, None)):
        f = needed * share / report.sessions
        more = _counted_log(
            tmp_path / f"{share}.jsonl", round(55 * f), round(45 * f), round(100 * f)
        )
        assert interleaving_report(more).winner == winner
    decided = interleaving_report(_counted_log(tmp_path / "many.jsonl", 550, 450, 1000))
    assert decided.winner == "a" and decided.needed is None
    level = interleaving_report(_counted_log(tmp_path / "level.jsonl", 50, 50, 100))
    assert level.needed is None and "would tell" not in level.describe()
    # over queries the projection counts queries: more traffic on the same ones won't do
    by_query = interleaving_report(_decided_log(tmp_path / "d.jsonl"), by="query")
    assert by_query.winner is None and by_query.needed > by_query.queries
    more = by_query.needed - by_query.queries
    assert (
        f"about {by_query.needed:,} queries in all, {more:,} more than the {by_query.queries} "
        "logged, would tell" in by_query.describe()
    )
    # what the plan is, computed directly: the interval's half-width in standard errors
    # (1.96 at 95 %) plus 0.84 (80 % power), over the difference, squared
    se = (report.interval[1] - report.interval[0]) / 2 / 1.959964
    assert needed == pytest.approx(report.sessions * (2.801585 * se / 0.1) ** 2, abs=1)


def test_the_report_counts_ties_and_sessions_without_a_click_apart(tmp_path):
    path = tmp_path / "t.jsonl"
    log = ClickLog(path, store="id")
    outcomes = [[0]] * 3 + [[1]] * 2 + [[0, 1]] * 4 + [[]] * 6  # 4 tied, 6 without a click
    for s, clicked in enumerate(outcomes):
        pair = {"pipelines": ["a", "b"], "teams": [0, 1]}
        log.log_impression(f"s{s}", "q", [{"id": "x"}, {"id": "y"}], [0, 1], interleaving=pair)
        if clicked:
            log.log_feedback(f"s{s}", clicked)
    report = interleaving_report(read_log(path)[0])
    assert report.wins == (3, 2) and report.clicked == 9
    assert report.tied == 4 and report.unclicked == 6
    assert report.ties == report.tied + report.unclicked == 10  # neither won: as before
    assert "6 with no click credited to either" in report.describe()
    assert "a won 3, b won 2, 4 tied" in report.describe()


def test_the_plan_is_also_given_in_requests_at_the_share_interleaved(tmp_path):
    path = tmp_path / "few.jsonl"
    times = [s.impression.time for s in _counted_log(path, 55, 45, 100)]  # 200 interleaved
    first, last = min(times), max(times)
    log = ClickLog(path, store="id")
    for s in range(600):  # and 600 more requests to it meanwhile, plain: a share of 1/4
        when = first + (last - first) * s / 599
        log.log_impression(f"plain{s}", "q", [{"id": "x"}, {"id": "y"}], [0, 1], time=when)
    # one after the experiment ended is not counted
    log.log_impression("later", "q", [{"id": "x"}, {"id": "y"}], [0, 1], time=last + 60)
    for s in range(50):  # another pipeline's requests are not the interleaved one's
        log.log_impression(f"other{s}", "q", [{"id": "x"}], [0], pipeline="other")
    report = interleaving_report(read_log(path)[0])
    assert report.sessions == 200 and report.requests == 800 and report.share == 0.25
    assert report.needed_requests == pytest.approx(4 * report.needed, abs=4)
    more = report.needed_requests - 800  # beyond the requests already logged
    said = f"about {report.needed:,} sessions in all, {report.needed - 200:,} more than the 200 "
    said += f"logged (about {more:,} more requests at the 25 % interleaved), would tell"
    assert said in report.describe()
    figures = report.as_dict()
    assert figures["needed_requests"] == report.needed_requests and figures["winner"] is None
    assert figures["ties"] == report.ties and figures["pipelines"] == ("a", "b")
    assert interleaving_report(read_log(path)[0], by="query").needed_requests is None


def test_interleave_report_json_prints_every_figure(tmp_path, capsys):
    import json

    from rerankit.cli import main

    path = tmp_path / "few.jsonl"
    _counted_log(path, 55, 45, 100)
    assert main(["interleave-report", str(path), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    report = interleaving_report(read_log(path)[0])
    assert printed["needed"] == report.needed and printed["share"] == 1.0
    assert printed["wins"] == [55, 45] and printed["unclicked"] == 100
    assert printed["read"]["impressions"] == 200


def test_the_interval_over_sessions_is_a_bootstrap_for_team_draft_normal_for_optimized(
    tmp_path, capsys
):
    """What --by's help says: over sessions, optimized interleaving's interval is the normal
    interval of the mean credit (no resampling: the seed changes nothing); team draft's, and
    any over queries, a bootstrap (the seed moves its ends)."""
    log = ClickLog(tmp_path / "o.jsonl", store="id")
    docs = [{"id": "x"}, {"id": "y"}]
    rng = np.random.default_rng(0)
    credits = []
    for s in range(60):
        first = float(rng.uniform(-0.5, 0.8))
        log.log_impression(
            f"s{s}",
            f"q{s % 20}",
            docs,
            [0, 1],
            interleaving={"pipelines": ["a", "b"], "credits": [first, -first]},
        )
        log.log_feedback(f"s{s}", [0])  # the first position: its credit
        credits.append(first)
    optimized = read_log(tmp_path / "o.jsonl")[0]
    one, other = (interleaving_report(optimized, seed=seed) for seed in (0, 1))
    half = 1.959964 * np.std(credits, ddof=1) / np.sqrt(len(credits))
    assert one.interval == pytest.approx((np.mean(credits) - half, np.mean(credits) + half))
    assert one.interval == other.interval
    by_query = [interleaving_report(optimized, by="query", seed=seed).interval for seed in (0, 1)]
    assert by_query[0] != by_query[1]
    drafted = _decided_log(tmp_path / "t.jsonl")
    assert (
        interleaving_report(drafted, seed=0).interval
        != interleaving_report(drafted, seed=1).interval
    )
    with pytest.raises(SystemExit):
        main(["interleave-report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--by {session,query} what the confidence interval is over: sessions" in text
    assert (
        "the normal interval of the mean credit for optimized interleaving, a bootstrap of "
        "sessions for team draft" in text
    )
    assert "the bootstrap's seed, for team draft or --by query" in text
    assert "what the bootstrap resamples" not in text
