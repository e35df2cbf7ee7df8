"""Comparing two pipelines on live traffic without an A/B split: team-draft interleaving
(Radlinski, Kurup and Joachims 2008) and its report (Chapelle, Joachims, Radlinski and Yue,
"Large-scale validation and analysis of interleaved search evaluation", 2012, who found
it agrees with A/B tests at a fraction of the traffic).

For one request, :func:`team_draft` merges the two pipelines' rankings: the documents both
rank the same at the top (their common prefix) come first and belong to neither; then in
each round a coin decides which pipeline picks first, and each picks its best document not
yet placed; every position remembers the pipeline (*team*) that placed it, -1 for the
common prefix. A click credits the team of its position (:func:`credit`); a click in the
common prefix credits neither, since it says nothing about which pipeline is better (the
original draft credits it by coin flip, which only adds noise). The session goes to the
team with more clicks, or is a tie. :func:`interleaving_report` adds the sessions up: the
share of sessions each wins, the difference with a confidence interval (see ``by``) and a
two-sided sign test over the sessions with a winner. It reads sessions of optimized
interleaving (:mod:`.optimized`, the service's default, which needs less traffic) the same
way, each session's outcome being its clicks' credit.

The interval is over sessions by default (which pipeline the users of this traffic
prefer, as an A/B test on it tells); ``by="query"`` resamples queries, for a verdict meant
to hold for queries the log has not seen: wider, and no traffic on the same queries
narrows it below their spread."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...errors import keyword_flag, said_for
from .intervals import mean_interval, query_bootstrap, session_bootstrap
from .reader import Session

__all__ = [
    "BY",
    "METHODS",
    "POWER",
    "InterleavingReport",
    "credit",
    "interleaving_report",
    "method_name",
    "sign_test",
    "team_draft",
]

#: what the report's confidence interval can be over
BY = ("session", "query")
#: the interleaving methods: :func:`.optimized.optimized_interleave` (the service's
#: default) and :func:`team_draft`
METHODS = ("optimized", "team-draft")


def method_name(name: Any) -> Any:
    """An interleaving method's name as :data:`METHODS` spell it: ``"team_draft"`` (the
    function's name) is ``"team-draft"``, as reranker names take ``_`` or ``-``. Anything
    else is left as given, for the caller to refuse with the valid names."""
    return name.replace("_", "-") if isinstance(name, str) else name


#: the chance of naming a winner that :attr:`InterleavingReport.needed` plans traffic for
POWER = 0.8
#: below this many distinct queries, a report over queries says its interval is rough
FEW_QUERIES = 30
#: below this many sessions with a click credited, a winner named is said to rest on few:
#: the normal interval of a mean needs about 30 values to hold (from 13, a 95 % one covers
#: 92.6 % even of normal values, and a few clicks' credits are lumpier than that)
MIN_CLICKED = 30


def team_draft(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    seed: int | random.Random | np.random.Generator | None = None,
    *,
    k: int | None = None,
    shared_prefix: bool = True,
) -> tuple[list[Hashable], list[int]]:
    """The team-draft interleaving of rankings ``a`` and ``b`` (document ids or indices,
    best first): the first ``k`` positions (all documents of either by default) and the
    team of each, 0 for ``a``, 1 for ``b`` and -1 for the common prefix (the documents
    both rank the same at the top, placed first; ``shared_prefix=False`` drafts them too,
    as the original team draft does, which adds coin-flip credit and no information).
    ``seed`` makes the coin flips repeatable (an int, a ``random.Random`` or a numpy
    ``Generator``). Each document appears once; when one ranking runs out, the other
    fills the rest."""
    flip = _coin(seed)
    rankings = (list(a), list(b))
    union = list(dict.fromkeys([*rankings[0], *rankings[1]]))
    limit = len(union) if k is None else min(k, len(union))
    common = 0
    if shared_prefix:
        shortest = min(limit, len(rankings[0]), len(rankings[1]))
        while common < shortest and rankings[0][common] == rankings[1][common]:
            common += 1
    out: list[Hashable] = rankings[0][:common]
    teams: list[int] = [-1] * common
    placed: set[Hashable] = set(out)
    picks = [0, 0]
    cursor = [common, common]

    def best(team: int) -> Hashable | None:
        ranking = rankings[team]
        while cursor[team] < len(ranking) and ranking[cursor[team]] in placed:
            cursor[team] += 1
        return ranking[cursor[team]] if cursor[team] < len(ranking) else None

    while len(out) < limit:
        if picks[0] < picks[1]:
            order = (0,)
        elif picks[1] < picks[0]:
            order = (1,)
        else:
            order = (0, 1) if flip() else (1, 0)
        for team in order:
            if len(out) >= limit:
                break
            doc = best(team)
            if doc is None:
                doc, team = best(1 - team), 1 - team
            if doc is None:  # pragma: no cover - limit bounds the union
                break
            placed.add(doc)
            out.append(doc)
            teams.append(team)
            picks[team] += 1
    return out, teams


def _coin(seed: int | random.Random | np.random.Generator | None):
    if isinstance(seed, np.random.Generator):
        return lambda: bool(seed.random() < 0.5)
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return lambda: rng.random() < 0.5


def credit(teams: Sequence[int], clicked_positions: Iterable[int]) -> tuple[int, int]:
    """The clicks each team earned: ``clicked_positions`` are 1-based positions of the
    interleaved list; a click past the list, or on a position of neither team (-1: the
    common prefix), is ignored."""
    won = [0, 0]
    for p in clicked_positions:
        if 1 <= p <= len(teams) and teams[p - 1] in (0, 1):
            won[teams[p - 1]] += 1
    return won[0], won[1]


def sign_test(wins: int, losses: int) -> float:
    """The two-sided exact binomial test of ``wins`` against ``losses`` at p = 1/2."""
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    log_half = n * math.log(0.5)
    terms = [
        math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half)
        for i in range(low + 1)
    ]
    return min(1.0, 2 * sum(terms))


@dataclass
class InterleavingReport:
    """Which of two interleaved pipelines users preferred: ``sessions`` interleaved, of
    which ``clicked`` had a click credited to either pipeline (:attr:`unclicked` did not),
    ``wins`` of each and :attr:`tied` (clicked, as many clicks for each); ``ties`` are the
    sessions neither won (``unclicked + tied``); ``delta``: with team draft (``method``),
    (wins of ``a`` - wins of ``b``) / ``clicked``; with optimized interleaving, the clicks'
    credit per clicked session (a session is won by the pipeline its credit favours). Its
    confidence ``interval`` (over ``by``: sessions or queries; a bootstrap, except over the
    sessions of optimized interleaving, where it is the normal interval of the mean), the
    sign test's ``p_value``, the ``queries`` the sessions came from, and the
    :attr:`winner`: the pipeline the interval excludes losing, or None. ``requests``: the
    log's sessions served by the pipeline whose requests were interleaved (interleaved
    or not) between the first and the last session counted, so :attr:`share` is the share
    of its requests that were interleaved then. ``identical``: the sessions where both
    ranked the same documents in the same order (as far as the list shown credits), where
    no click can credit either; in all of them, interleaving cannot tell the two apart."""

    pipelines: tuple[str, str]
    sessions: int
    clicked: int
    wins: tuple[int, int]
    ties: int
    delta: float
    interval: tuple[float, float]
    p_value: float
    queries: int
    confidence: float
    by: str = "session"
    requests: int = 0
    method: str = "team-draft"
    identical: int = 0

    @property
    def unclicked(self) -> int:
        """Interleaved sessions without a click credited to either pipeline."""
        return self.sessions - self.clicked

    @property
    def tied(self) -> int:
        """Sessions with a click credited, as many to each pipeline."""
        return self.clicked - sum(self.wins)

    @property
    def share(self) -> float | None:
        """The share of the interleaved pipeline's requests (in the log) that were
        interleaved; None when the log does not say."""
        return self.sessions / self.requests if self.requests >= self.sessions > 0 else None

    @property
    def needed_requests(self) -> int | None:
        """:attr:`needed` in requests to the interleaved pipeline: the sessions divided by
        :attr:`share` (None with ``by="query"``, or when either is unknown)."""
        if self.needed is None or self.by != "session" or not self.share:
            return None
        return math.ceil(self.needed / self.share)

    def as_dict(self) -> dict[str, Any]:
        """Every figure, the properties' too (JSON-ready)."""
        out = asdict(self)
        for name in ("winner", "few_clicked", "unclicked", "tied", "share", "needed"):
            out[name] = getattr(self, name)
        out["needed_requests"] = self.needed_requests
        return out

    @property
    def few_clicked(self) -> bool:
        """Whether a winner is named from fewer than :data:`MIN_CLICKED` clicked sessions."""
        return self.winner is not None and self.clicked < MIN_CLICKED

    @property
    def winner(self) -> str | None:
        low, high = self.interval
        if low > 0:
            return self.pipelines[0]
        if high < 0:
            return self.pipelines[1]
        return None

    @property
    def needed(self) -> int | None:
        """When no winner is named yet: about how many sessions in all (queries, ``by=
        "query"``) give a :data:`POWER` chance of naming one if the difference seen so far is
        the true one (the interval narrows as one over the square root of their number),
        counting those logged (:meth:`describe` says how many more); None when a winner is
        named (for a stricter confidence, report again with a higher ``confidence``) or the
        difference is 0. A plan, not a promise: the
        difference moves as sessions come in."""
        half = (self.interval[1] - self.interval[0]) / 2
        if self.winner or self.delta == 0 or half <= 0:
            return None
        normal = statistics.NormalDist()
        z = normal.inv_cdf(0.5 + self.confidence / 2)
        count = self.queries if self.by == "query" else self.sessions
        spread = half / z * (z + normal.inv_cdf(POWER))  # in units of the interval
        return math.ceil(count * (spread / abs(self.delta)) ** 2)

    def describe(self) -> str:
        a, b = self.pipelines
        unit = "queries" if self.by == "query" else "sessions"
        level = f"{100 * self.confidence:g} % interval over {unit}"
        if self.winner:
            verdict = f"{self.winner} wins"
            if self.few_clicked:
                verdict += (
                    f", but from only {self.clicked} sessions with a click credited (under "
                    f"{MIN_CLICKED}, too few for the interval to hold): keep logging before "
                    "acting on it"
                )
        elif self.identical and self.identical >= self.sessions / 2:
            verdict = (
                f"{a} and {b} ranked the same documents in the same order in "
                f"{self.identical:,} of {self.sessions:,} sessions: interleaving cannot tell "
                "them apart"
            )
            if self.identical < self.sessions:
                verdict += f" there, only in the other {self.sessions - self.identical:,}"
            verdict += "; compare them with eval (their probabilities too: ECE, --thresholds)"
        elif self.clicked == 0:
            verdict = "no session had a click credited to either pipeline"
        else:
            verdict = "no difference either way at this confidence"
            if self.needed:
                logged = self.queries if self.by == "query" else self.sessions
                verdict += (
                    f"; if the difference seen holds, about {self.needed:,} {unit} in all, "
                    f"{max(self.needed - logged, 0):,} more than the {logged:,} logged"
                )
                if self.needed_requests is not None and self.share and self.share < 1:
                    more = max(self.needed_requests - self.requests, 0)
                    verdict += (
                        f" (about {more:,} more requests at the "
                        f"{100 * self.share:.3g} % interleaved)"
                    )
                verdict += f", would tell, {100 * POWER:g} times in 100"
        if self.by == "query" and self.queries < FEW_QUERIES:
            verdict += (
                f" (only {self.queries} quer{'y' if self.queries == 1 else 'ies'}: an interval "
                "over so few is rough; read the report over sessions too)"
            )
        measure = "delta" if self.method == "team-draft" else "mean credit per clicked session"
        return (
            f"{self.sessions} interleaved session{'' if self.sessions == 1 else 's'} "
            f"({self.method.replace('-', ' ')}) over {self.queries} "
            f"quer{'y' if self.queries == 1 else 'ies'}, "
            f"{self.unclicked} with no click credited to either; of the "
            f"{self.clicked} with one, {a} won {self.wins[0]}, {b} won {self.wins[1]}, "
            f"{self.tied} tied; {measure} ({a} - {b}) {self.delta:+.3f} "
            f"({level} {self.interval[0]:+.3f} to {self.interval[1]:+.3f}; sign test over "
            f"sessions p = {self.p_value:.3g}): {verdict}"
        )


def interleaving_report(
    sessions: Iterable[Session],
    *,
    pipelines: tuple[str, str] | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    by: str = "session",
    method: str | None = None,
) -> InterleavingReport:
    """The report over the interleaved sessions of a log (impressions with an
    ``interleaving`` field; the others are skipped), for the pair ``pipelines`` (default:
    the first pair found). ``by``: what the confidence interval is over, ``"session"``
    (default: for team draft a bootstrap, for optimized interleaving the normal interval
    of the mean credit) or ``"query"`` (a bootstrap of queries, grouped by ``query_id``,
    else the query text; see the module doc); ``resamples``, ``seed``: the bootstrap's.
    ``method``: the interleaving whose sessions to count, ``"optimized"`` or
    ``"team-draft"`` (or ``"team_draft"``; default: the one the log holds; a log with both
    must name one)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if by not in BY:
        raise ValueError(f"by {by!r}: expected one of {', '.join(BY)}")
    method = method_name(method)
    if method not in (None, *METHODS):
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    by_query: dict[str, list[tuple[float, bool]]] = {}
    pair = pipelines
    total = 0
    pairs_seen: set[tuple[str, ...]] = set()
    served: list[tuple[str, float]] = []  # every session's pipeline and time
    interleaved_by: set[str] = set()
    kinds: dict[str, int] = {}  # sessions by interleaving method
    identical = 0  # sessions where no position could credit either
    span = [math.inf, -math.inf]  # the times of the sessions counted
    for s in sessions:
        served.append((s.impression.pipeline, s.impression.time))
        info = s.impression.interleaving
        if not info:
            continue
        names = tuple(info.get("pipelines", ()))
        if len(names) != 2:
            continue
        pairs_seen.add(tuple(map(str, names)))
        if pair is None:
            pair = (str(names[0]), str(names[1]))
        if names == (pair[1], pair[0]):
            flipped = True
        elif names == tuple(pair):
            flipped = False
        else:
            continue
        kind = "optimized" if info.get("credits") is not None else "team-draft"
        if method is not None and kind != method:
            continue
        kinds[kind] = kinds.get(kind, 0) + 1
        identical += not any(info.get("credits") or [t in (0, 1) for t in info.get("teams", ())])
        value, clicked_any = _outcome(info, s.clicked_positions())
        if flipped:
            value = -value
        imp = s.impression
        interleaved_by.add(imp.pipeline)
        span = [min(span[0], imp.time), max(span[1], imp.time)]
        by_query.setdefault(imp.query_id if imp.query_id is not None else imp.query, []).append(
            (value, clicked_any)
        )
        total += 1
    if pair is None or total == 0:
        if pipelines is not None and pairs_seen:
            found = "; ".join(" and ".join(p) for p in sorted(pairs_seen))
            raise ValueError(
                f"no interleaved sessions of {pipelines[0]} and {pipelines[1]} in the log "
                f"(it has sessions of: {found})"
            )
        raise ValueError(
            "no interleaved sessions in the log: it holds the sessions of a service whose "
            "settings interleave two pipelines ([server] interleave = [A, B], with "
            "[server.feedback] on; docs/clicks.md, 'Compare two pipelines on live traffic: "
            "interleaving')"
        )
    if len(kinds) > 1:
        found = " and ".join(f"{n:,} {k}" for k, n in sorted(kinds.items()))
        raise ValueError(
            f"the log has sessions of {pair[0]} and {pair[1]} interleaved two ways ({found}), "
            "whose credits do not add up; report each apart ("
            f"{keyword_flag('method', 'team-draft')} or {said_for(repr('optimized'), 'optimized')})"
        )
    kind = next(iter(kinds))
    outcomes = [o for group in by_query.values() for o in group]
    wins_a = sum(1 for v, c in outcomes if c and v > 0)
    wins_b = sum(1 for v, c in outcomes if c and v < 0)
    clicked = sum(1 for _, c in outcomes if c)
    delta = sum(v for v, _ in outcomes) / clicked if clicked else 0.0
    groups = [(sum(v for v, _ in g), sum(1 for _, c in g if c)) for g in by_query.values()]
    if by == "query":
        interval = query_bootstrap(groups, confidence, resamples, seed)
    elif kind == "team-draft":
        counts = (wins_a, wins_b, clicked - wins_a - wins_b, len(outcomes) - clicked)
        interval = session_bootstrap(counts, confidence, resamples, seed)
    else:
        interval = mean_interval([v for v, c in outcomes if c], confidence)
    return InterleavingReport(
        pipelines=(str(pair[0]), str(pair[1])),
        sessions=total,
        clicked=clicked,
        wins=(wins_a, wins_b),
        ties=total - wins_a - wins_b,
        delta=delta,
        interval=interval,
        p_value=sign_test(wins_a, wins_b),
        queries=len(by_query),
        confidence=confidence,
        by=by,
        # the requests to the interleaved pipeline while these sessions were logged (not
        # those of another method's or another pair's time)
        requests=sum(1 for name, t in served if name in interleaved_by and span[0] <= t <= span[1]),
        method=kind,
        identical=identical,
    )


def _outcome(info: dict[str, Any], clicked_positions: Iterable[int]) -> tuple[float, bool]:
    """A session's outcome for the first pipeline, and whether a click was credited:
    optimized interleaving sums the clicked positions' credits; team draft gives +1 to the
    team with more clicks (-1 to the other, 0 for a tie)."""
    credits = info.get("credits")
    if credits is not None:
        hits = [float(credits[p - 1]) for p in clicked_positions if 1 <= p <= len(credits)]
        return float(sum(hits)), any(h != 0 for h in hits)
    a, b = credit(list(info.get("teams", ())), clicked_positions)
    return float((a > b) - (b > a)), a + b > 0
