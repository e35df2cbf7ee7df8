"""The interleaving part of ``benchmarks/quality/clicks.py``: can interleaving tell two
rankers apart whose test nDCG@10 differ by about 2 points, within 2,000 sessions?

On SciFact's test queries (BM25 top 100 each), the default ``hybrid`` and, among simpler
rankers read off the learning-to-rank features, the one whose test nDCG@10 is closest to
2 points from it. Each run draws 8,000 sessions (a test query at random, both rankers' top
10 team-draft interleaved, clicks from the position-based model at eta 1 on the test
judgments), logs them with ``ClickLog`` and reads the report (``interleaving_report``)
after the first 250, 500, 1,000, 2,000, 4,000 and 8,000 sessions (how much traffic it
takes beyond the 2,000 asked). 20 runs with different seeds, each drawn three times with
the same seed: optimized interleaving (the service's default), team draft with the common
prefix crediting neither pipeline, and the original team draft, which drafts the common
prefix too; each read with the interval over sessions (the report's default) and over
queries (``by="query"``). :func:`methods` compares optimized interleaving and team draft
on the training queries, where the choice was made.
:func:`credit_rules` compares other ways to credit a session's clicks, every rule read
from the same simulated sessions (on the training queries by default).
"""

from __future__ import annotations

import numpy as np

from benchmarks.quality.clicks_data import CACHE, prepared

PREFIXES = (250, 500, 1000, 2000, 4000, 8000)
RUNS = 20


def candidates(rows, hybrid) -> dict:
    """Rankers to pair with the default: its score, and single features or the fusion."""
    from rerankit.scorers.learned import FEATURES
    from rerankit.training.clicks.learn import blend_base

    def column(name):
        return {q: x[:, FEATURES.index(name)] for q, (_, x) in rows.items()}

    return {
        "hybrid (the default)": hybrid,
        "0.3 first stage + 0.7 MiniLM": {q: blend_base(x) for q, (_, x) in rows.items()},
        "MiniLM cosine": column("cosine"),
        "best-passage cosine": column("passage_cosine"),
        "the first calibrated hybrid's logit": column("hybrid_logit"),
        "BM25 with background idf": column("bm25_background"),
    }


def run(
    rows,
    qrels,
    a,
    b,
    names,
    top,
    seed,
    path,
    shared_prefix=True,
    prefixes=PREFIXES,
    bys=("session", "query"),
    method="team-draft",
):
    from rerankit.training.clicks import ClickLog, interleaving_report, read_log, team_draft
    from rerankit.training.clicks.simulate import PositionBasedModel, grades_0_to_4

    rng = np.random.default_rng(seed)
    model = PositionBasedModel(eta=1.0)
    queries = sorted(rows)
    path.unlink(missing_ok=True)
    log = ClickLog(path, store="id", max_bytes=0)
    for s in range(max(prefixes)):
        q = queries[int(rng.integers(len(queries)))]
        ids = rows[q][0]
        if method == "optimized":
            lists, credits, p = optimized_lists(a, b, q)
            pick = int(rng.choice(len(p), p=p))
            order, info = list(lists[pick]), {"credits": [float(c) for c in credits[pick]]}
        else:
            first = list(np.argsort(-a[q], kind="stable")[:10])
            second = list(np.argsort(-b[q], kind="stable")[:10])
            order, teams = team_draft(first, second, rng, k=10, shared_prefix=shared_prefix)
            info = {"teams": teams}
        grades = grades_0_to_4([ids[i] for i in order], qrels.get(q, {}), top)
        clicked = model.click(np.arange(len(order))[None, :], grades, rng)[0]
        docs = [{"id": ids[i]} for i in order]
        rid = f"{seed}:{s}"
        log.log_impression(
            rid,
            q,
            docs,
            list(range(len(order))),
            query_id=q,
            interleaving={"pipelines": list(names), **info},
            time=s,
        )
        if clicked.any():
            log.log_feedback(rid, [int(p) for p in np.flatnonzero(clicked)], time=s + 0.5)
    sessions, _ = read_log(path)
    path.unlink()
    return {
        (n, by): interleaving_report(sessions[:n], pipelines=names, seed=seed, by=by)
        for n in prefixes
        for by in bys
    }


_OPTIMIZED: dict = {}


def optimized_lists(a, b, q):
    """The merges of query ``q``'s two top 10s (over the whole rankings), their credits and
    optimized interleaving's distribution over them
    (:func:`rerankit.training.clicks.optimized.interleaving_plan`, computed once per query
    and pair)."""
    from rerankit.training.clicks.optimized import interleaving_plan

    key = (id(a), id(b), q)
    if key not in _OPTIMIZED:
        first = [int(i) for i in np.argsort(-a[q], kind="stable")]
        second = [int(i) for i in np.argsort(-b[q], kind="stable")]
        _OPTIMIZED[key] = interleaving_plan(first, second, 10)
    return _OPTIMIZED[key]


def interleaving_table(
    split: str = "test", other: str | None = None, runs: int = RUNS, prefixes=PREFIXES
) -> None:
    """The table on SciFact's ``split``; ``other``: the ranker paired with the default
    (by default the one closest to 2 points from it). The choices of rerankit's draft and
    interval were made with ``interleaving_table("train", "best-passage cosine", 100,
    (2000,))``."""
    from benchmarks.quality.clicks import test_ndcg
    from rerankit.training.clicks.simulate import max_grade

    test, rows, hybrid = prepared("scifact", split)
    top = max_grade(test.qrels)
    rankers = candidates(rows, hybrid)
    ndcg = {name: test_ndcg(s, rows, test.qrels) for name, s in rankers.items()}
    default = "hybrid (the default)"
    other = other or min(
        (n for n in rankers if n != default), key=lambda n: abs(abs(ndcg[n] - ndcg[default]) - 2)
    )
    better = default if ndcg[default] > ndcg[other] else other
    print(f"### Interleaving (SciFact {split}, eta 1)\n")
    print(
        f"{split} nDCG@10 x 100 of the rankers considered: "
        + "; ".join(f"{n} {v:.2f}" for n, v in ndcg.items())
    )
    print(
        f"\ninterleaved: {default} ({ndcg[default]:.2f}) and {other} ({ndcg[other]:.2f}); "
        f"{runs} runs of {max(prefixes)} sessions\n"
    )
    drafts = {
        "optimized (the default)": ("optimized", True),
        "team draft, common prefix credits neither": ("team-draft", True),
        "original team draft": ("team-draft", False),
    }

    def label(draft: str, by: str) -> str:
        return f"{draft}, interval over {'queries' if by == 'query' else 'sessions'}"

    names = [label(draft, by) for draft in drafts for by in ("session", "query")]
    found = {v: {n: [0, 0, 0] for n in prefixes} for v in names}
    first = {}
    for seed in range(runs):
        for draft, (method, shared) in drafts.items():
            reports = run(
                rows,
                test.qrels,
                rankers[default],
                rankers[other],
                (default, other),
                top,
                seed,
                CACHE / f"interleave-{seed}.jsonl",
                shared_prefix=shared,
                prefixes=prefixes,
                method=method,
            )
            for (n, by), report in reports.items():
                variant = label(draft, by)
                if n == max(prefixes):
                    first.setdefault(variant, report)
                outcome = 0 if report.winner == better else 1 if report.winner else 2
                found[variant][n][outcome] += 1
    print("Each cell: the better one named / the worse one named / no winner.\n")
    print("| sessions | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for n in prefixes:
        cells = [" / ".join(f"{c}" for c in found[v][n]) for v in names]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print(f"\n(of {runs} runs each; a winner is named when the 95 % interval excludes 0)")
    for v in names:
        print(f"\n{v}, run 0 after {max(prefixes)} sessions: {first[v].describe()}")


#: the pairs of :func:`methods`: every pair of :func:`candidates` but those more than 4
#: points apart on the training queries, where either method always tells
PAIRS = (
    ("hybrid (the default)", "best-passage cosine"),
    ("0.3 first stage + 0.7 MiniLM", "best-passage cosine"),
    ("hybrid (the default)", "the first calibrated hybrid's logit"),
    ("best-passage cosine", "the first calibrated hybrid's logit"),
    ("MiniLM cosine", "best-passage cosine"),
)


def methods(split: str = "train", pairs=PAIRS, runs: int = 100, sessions: int = 2000) -> None:
    """How often each interleaving method's report names the better of two rankers after
    ``sessions`` sessions (``runs`` seeds; logged with ``ClickLog`` and read by
    ``interleaving_report`` over sessions), for each pair of ``pairs`` on SciFact's
    ``split``: the comparison that made optimized interleaving the service's default."""
    from benchmarks.quality.clicks import test_ndcg
    from rerankit.training.clicks.simulate import max_grade

    data, rows, hybrid = prepared("scifact", split)
    top = max_grade(data.qrels)
    rankers = candidates(rows, hybrid)
    print(f"SciFact {split}, {runs} runs of {sessions} sessions (eta 1) for each pair:\n")
    print("| pair (nDCG@10 x 100) | optimized | team draft |\n|---|---:|---:|")
    for one, other in pairs:
        ndcg = {n: test_ndcg(rankers[n], rows, data.qrels) for n in (one, other)}
        better = max(ndcg, key=ndcg.get)
        cells = []
        for method in ("optimized", "team-draft"):
            found = [0, 0, 0]
            for seed in range(runs):
                (report,) = run(
                    rows,
                    data.qrels,
                    rankers[one],
                    rankers[other],
                    (one, other),
                    top,
                    seed,
                    CACHE / f"methods-{seed}.jsonl",
                    prefixes=(sessions,),
                    bys=("session",),
                    method=method,
                ).values()
                found[0 if report.winner == better else 1 if report.winner else 2] += 1
            cells.append(" / ".join(map(str, found)))
        pair = f"{one} ({ndcg[one]:.2f}) and {other} ({ndcg[other]:.2f})"
        print(f"| {pair} | {cells[0]} | {cells[1]} |", flush=True)
    print("\n(each cell: the better one named / the worse one named / no winner)")


def null_check(runs: int = 200, sessions: int = 2000, split: str = "train") -> None:
    """How often the report names a winner when users click by position alone (each
    position with 0.3 times its examination probability, whatever the document): with
    optimized interleaving of the default and the best-passage cosine on SciFact's
    ``split``, the 95 % interval should exclude 0 in about 5 runs in 100."""
    from rerankit.training.clicks import interleaving_report
    from rerankit.training.clicks.reader import Session
    from rerankit.training.clicks.records import Impression, LoggedDocument
    from rerankit.training.clicks.simulate import PositionBasedModel

    _, rows, hybrid = prepared("scifact", split)
    rankers = candidates(rows, hybrid)
    a, b = rankers["hybrid (the default)"], rankers["best-passage cosine"]
    queries = sorted(rows)
    exam = PositionBasedModel(eta=1.0).examination(10)
    docs = tuple(LoggedDocument(id=str(i)) for i in range(10))
    named = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        log = []
        for s in range(sessions):
            q = queries[int(rng.integers(len(queries)))]
            _, credits, p = optimized_lists(a, b, q)
            pick = int(rng.choice(len(p), p=p))
            pair = {"pipelines": ["a", "b"], "credits": [float(c) for c in credits[pick]]}
            shown = Impression(str(s), q, docs, tuple(range(10)), interleaving=pair)
            clicks = tuple(int(i) for i in np.flatnonzero(rng.random(10) < 0.3 * exam))
            log.append(Session(impression=shown, clicks=clicks))
        named += interleaving_report(log, pipelines=("a", "b")).winner is not None
    print(
        f"clicks by position alone, {runs} runs of {sessions} sessions: a winner named in "
        f"{named} ({100 * named / runs:.1f} %; 5 % expected of a 95 % interval)"
    )


#: other ways to credit a session's clicks, compared with rerankit's (the team with more
#: clicks wins the session) by :func:`credit_rules`; each maps (teams of the clicked
#: positions, their examination probabilities) to the session's outcome, + for the default
CREDIT_RULES = {
    "the team with more clicks wins (rerankit)": lambda t, e: np.sign(
        (t == 0).sum() - (t == 1).sum()
    ),
    "difference in clicks": lambda t, e: float((t == 0).sum() - (t == 1).sum()),
    "the first click decides": lambda t, e: float(1 - 2 * t[t >= 0][0]) if (t >= 0).any() else 0.0,
    "the last click decides": lambda t, e: float(1 - 2 * t[t >= 0][-1]) if (t >= 0).any() else 0.0,
    "clicks weighted by 1 / examination": lambda t, e: float(
        (1 / e[t == 0]).sum() - (1 / e[t == 1]).sum()
    ),
}


def credit_rules(
    split: str = "train", other: str = "best-passage cosine", runs: int = 100, sessions: int = 2000
) -> None:
    """How often each credit rule of :data:`CREDIT_RULES` names the better pipeline after
    ``sessions`` team-draft sessions (the same sessions for every rule; a winner when the
    95 % normal interval of the mean outcome over sessions excludes 0), and an A/B split
    of as many sessions, the same queries each showing one ranker's top 10 (alternately)
    and compared by clicks per session."""
    from benchmarks.quality.clicks import test_ndcg
    from rerankit.training.clicks import team_draft
    from rerankit.training.clicks.simulate import PositionBasedModel, grades_0_to_4, max_grade

    data, rows, hybrid = prepared("scifact", split)
    top = max_grade(data.qrels)
    rankers = candidates(rows, hybrid)
    a, b = rankers["hybrid (the default)"], rankers[other]
    sign = 1 if test_ndcg(a, rows, data.qrels) > test_ndcg(b, rows, data.qrels) else -1
    model = PositionBasedModel(eta=1.0)
    exam = model.examination(10)
    queries = sorted(rows)
    tops = {
        q: (np.argsort(-a[q], kind="stable")[:10], np.argsort(-b[q], kind="stable")[:10])
        for q in queries
    }
    split_test = "A/B split instead: clicks per session (half the sessions each)"
    found = {rule: [0, 0, 0] for rule in [*CREDIT_RULES, split_test]}
    for seed in range(runs):
        rng, ab_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])
        outcomes = {rule: np.zeros(sessions) for rule in CREDIT_RULES}
        ab = np.zeros((2, sessions // 2))
        for s in range(sessions):
            q = queries[int(rng.integers(len(queries)))]
            shown = tops[q][s % 2]
            grades = grades_0_to_4([rows[q][0][i] for i in shown], data.qrels.get(q, {}), top)
            ab[s % 2, s // 2] = model.click(np.arange(10)[None, :], grades, ab_rng)[0].sum()
            order, teams = team_draft(list(tops[q][0]), list(tops[q][1]), rng, k=10)
            grades = grades_0_to_4([rows[q][0][i] for i in order], data.qrels.get(q, {}), top)
            clicked = np.flatnonzero(model.click(np.arange(len(order))[None, :], grades, rng)[0])
            t = np.asarray(teams)[clicked]
            for rule, outcome in CREDIT_RULES.items():
                outcomes[rule][s] = outcome(t, exam[clicked])
        for rule, x in outcomes.items():
            z = sign * x.mean() / max(x.std(ddof=1) / np.sqrt(sessions), 1e-12)
            found[rule][0 if z > 1.96 else 1 if z < -1.96 else 2] += 1
        se = np.sqrt(ab[0].var(ddof=1) / ab.shape[1] + ab[1].var(ddof=1) / ab.shape[1])
        z = sign * (ab[0].mean() - ab[1].mean()) / max(se, 1e-12)
        found[split_test][0 if z > 1.96 else 1 if z < -1.96 else 2] += 1
    print(f"SciFact {split}, the default against {other}, {runs} runs of {sessions} sessions:\n")
    print("| credit rule | better named / worse named / no winner |\n|---|---:|")
    for rule, cells in found.items():
        print(f"| {rule} | {' / '.join(map(str, cells))} |")


def projections(
    split: str = "train",
    other: str = "best-passage cosine",
    runs: int = 50,
    at: int = 500,
    upto: int = 8000,
    step: int = 250,
) -> None:
    """How well the report's projection (``InterleavingReport.needed``) plans traffic: in
    each run with no winner after ``at`` sessions, the sessions it projected against the
    first multiple of ``step`` (up to ``upto``) after which the report names a winner."""
    from benchmarks.quality.clicks import test_ndcg
    from rerankit.training.clicks.simulate import max_grade

    data, rows, hybrid = prepared("scifact", split)
    top = max_grade(data.qrels)
    rankers = candidates(rows, hybrid)
    default = "hybrid (the default)"
    ndcg = {n: test_ndcg(rankers[n], rows, data.qrels) for n in (default, other)}
    better = max(ndcg, key=ndcg.get)
    grid = tuple(range(step, upto + 1, step))
    pairs, decided, wrong = [], 0, 0
    for seed in range(runs):
        reports = run(
            rows,
            data.qrels,
            rankers[default],
            rankers[other],
            (default, other),
            top,
            seed,
            CACHE / f"projection-{seed}.jsonl",
            prefixes=grid,
            bys=("session",),
        )
        first = reports[(at, "session")]
        if first.winner:
            decided += 1
            continue
        named = next((n for n in grid if reports[(n, "session")].winner), None)
        wrong += bool(named) and reports[(named, "session")].winner != better
        pairs.append((first.needed, named))
    print(
        f"SciFact {split}, {default} ({ndcg[default]:.2f}) against {other} "
        f"({ndcg[other]:.2f}), {runs} runs: {decided} named a winner within {at} sessions; "
        f"in the other {len(pairs)}:"
    )
    projected = np.array([p for p, _ in pairs if p], dtype=float)
    actual = np.array([n if n else np.inf for p, n in pairs if p], dtype=float)
    print(
        f"  projected sessions: median {np.median(projected):,.0f}, quartiles "
        f"{np.quantile(projected, 0.25):,.0f} to {np.quantile(projected, 0.75):,.0f}"
    )
    print(
        f"  a winner named (first multiple of {step}): median {np.median(actual):,.0f}; "
        f"{int(np.isinf(actual).sum())} runs none by {upto}; the worse one named {wrong} times"
    )
    print(
        f"  named by the plan: {int((actual <= projected).sum())}; by twice it: "
        f"{int((actual <= 2 * projected).sum())} (of {len(projected)})"
    )
