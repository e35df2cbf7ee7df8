"""Optimized interleaving (Radlinski and Craswell, "Optimized interleaving for online
retrieval evaluation", WSDM 2013): the interleaving :mod:`.interleave`'s report reads by
default, because it tells two pipelines apart with less traffic than team draft.

For one request, the lists that may be shown are the merges of the two rankings: each
position holds the best document of one of them not yet placed, so every list shown is as
good a top as some mix of the two. A click on document ``d`` credits
``1/rank_a(d) - 1/rank_b(d)`` (ranks over each pipeline's whole ranking, from 1; a document
a pipeline dropped ranks after its last), positive for ``a``. Among the merges,
:func:`optimized_interleave` draws one from the distribution that

- is unbiased: a user who clicks at random, with any chance that falls with the position
  and no regard for the documents, earns either pipeline nothing in expectation (the
  expected credit of every top ``k`` is 0), and
- is sensitive: it puts its weight on the lists whose clicks credit the most (the credit's
  size weighted by ``1 / position``),

found by a small linear program (:func:`solve_lp`, a simplex method). Only the first
``depth`` positions (10 by default) are interleaved and credited; the rest follow the first
pipeline's order and credit nothing. When no distribution is unbiased (rare) the request
is not interleaved: :func:`optimized_interleave` returns None.

The same merges and credits appear in team draft (:func:`.interleave.team_draft`), whose
session goes to the team with more clicks; here a session's outcome is the sum of its
clicks' credits, so a click on a document both pipelines rank alike counts little and one
on a document they disagree about counts much.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

import numpy as np

__all__ = [
    "DEPTH",
    "distribution",
    "interleaving_plan",
    "merges",
    "optimized_interleave",
    "rank_credits",
    "solve_lp",
]

#: how many positions optimized interleaving mixes and credits by default
DEPTH = 10
_TOL = 1e-9
#: pivots in a row that leave the objective where it was before Bland's rule takes over
_STALL = 20


def merges(a: Sequence[Hashable], b: Sequence[Hashable], depth: int) -> list[tuple]:
    """Every distinct list of ``depth`` documents (fewer when the two rankings hold fewer)
    in which each position holds the best document of ``a`` or of ``b`` not placed above
    it."""
    union = len(dict.fromkeys([*a, *b]))
    depth = min(depth, union)
    out: dict[tuple, None] = {}

    def next_of(ranking: Sequence[Hashable], placed: set) -> Hashable | None:
        return next((d for d in ranking if d not in placed), None)

    def walk(prefix: tuple, placed: set) -> None:
        if len(prefix) == depth:
            out[prefix] = None
            return
        picks = dict.fromkeys(d for d in (next_of(a, placed), next_of(b, placed)) if d is not None)
        for d in picks:
            walk((*prefix, d), placed | {d})

    walk((), set())
    return list(out)


def rank_credits(
    lists: Sequence[Sequence[Hashable]], a: Sequence[Hashable], b: Sequence[Hashable]
) -> np.ndarray:
    """The credit of each position of each list: ``1/rank_a - 1/rank_b`` of its document
    (ranks from 1 over the whole rankings; a document missing from one ranks after its
    last)."""
    rank_a = {d: r for r, d in enumerate(a, start=1)}
    rank_b = {d: r for r, d in enumerate(b, start=1)}
    missing_a, missing_b = len(a) + 1, len(b) + 1
    return np.array(
        [
            [1.0 / rank_a.get(d, missing_a) - 1.0 / rank_b.get(d, missing_b) for d in shown]
            for shown in lists
        ],
        dtype=np.float64,
    ).reshape(len(lists), -1)


def solve_lp(
    objective: np.ndarray, constraints: np.ndarray, bounds: np.ndarray
) -> np.ndarray | None:
    """The ``x >= 0`` that maximizes ``objective @ x`` subject to ``constraints @ x ==
    bounds``, or None when no ``x`` satisfies them (or the maximum is unbounded). A dense
    two-phase simplex method (:func:`_iterate` says how it pivots), for the small programs
    of this module (a few dozen rows)."""
    A = np.array(constraints, dtype=np.float64)
    rhs = np.array(bounds, dtype=np.float64)
    m, n = A.shape
    flip = rhs < 0
    A[flip], rhs[flip] = -A[flip], -rhs[flip]
    table = np.hstack([A, np.eye(m), rhs[:, None]])
    basis = list(range(n, n + m))
    phase1 = np.r_[np.zeros(n), -np.ones(m)]
    if not _iterate(table, basis, phase1, n + m):
        return None  # pragma: no cover - phase 1 is bounded
    if table[:, -1] @ phase1[basis] < -1e-7 * max(1.0, np.abs(rhs).max()):
        return None  # infeasible
    keep = []
    for row, col in enumerate(basis):  # drive the artificial columns out of the basis
        if col < n:
            keep.append(row)
            continue
        candidates = np.flatnonzero(np.abs(table[row, :n]) > _TOL)
        if candidates.size:
            _pivot(table, basis, row, int(candidates[0]))
            keep.append(row)
    table = np.hstack([table[keep, :n], table[keep, -1:]])  # redundant rows dropped
    basis = [basis[r] for r in keep]
    if not _iterate(table, basis, np.asarray(objective, dtype=np.float64), n):
        return None
    x = np.zeros(n)
    x[basis] = table[:, -1]
    return np.clip(x, 0.0, None)


def _iterate(table: np.ndarray, basis: list[int], cost: np.ndarray, allowed: int) -> bool:
    """Simplex pivots on ``table`` (rows ``[A | rhs]``) until ``cost`` cannot rise; only the
    first ``allowed`` columns may enter. False when it is unbounded.

    The entering column is the one with the largest reduced cost (Dantzig's rule: far fewer
    pivots than Bland's on these programs). Interleaving's programs are degenerate (every
    bound but one is 0), where that rule can cycle, so after :data:`_STALL` pivots in a row
    that do not raise the objective it falls back to Bland's rule (the lowest index, which
    cannot cycle) until one does."""
    stalled = 0
    for _ in range(50 * (table.shape[0] + allowed)):
        reduced = cost[:allowed] - cost[basis] @ table[:, :allowed]
        entering = np.flatnonzero(reduced > _TOL)
        if entering.size == 0:
            return True
        # the largest reduced cost, or Bland's lowest index after a stall
        col = int(entering[np.argmax(reduced[entering])] if stalled < _STALL else entering[0])
        column = table[:, col]
        rows = np.flatnonzero(column > _TOL)
        if rows.size == 0:
            return False
        ratios = table[rows, -1] / column[rows]
        best = rows[np.isclose(ratios, ratios.min(), rtol=0, atol=_TOL)]
        row = int(min(best, key=lambda r: basis[r]))
        stalled = stalled + 1 if ratios.min() <= _TOL else 0
        _pivot(table, basis, row, col)
    raise RuntimeError("the simplex method did not finish")  # pragma: no cover


def _pivot(table: np.ndarray, basis: list[int], row: int, col: int) -> None:
    table[row] /= table[row, col]
    others = np.arange(table.shape[0]) != row
    table[others] -= np.outer(table[others, col], table[row])
    basis[row] = col


def distribution(credits: np.ndarray) -> np.ndarray | None:
    """The unbiased, most sensitive distribution over lists whose position credits are
    ``credits`` (lists x positions), or None when none is unbiased."""
    count, depth = credits.shape
    prefix = np.cumsum(credits, axis=1)
    constraints = np.vstack([prefix.T, np.ones((1, count))])
    bounds = np.r_[np.zeros(depth), 1.0]
    weight = 1.0 / np.arange(1, depth + 1)
    p = solve_lp(np.abs(credits) @ weight, constraints, bounds)
    if p is None or p.sum() <= 0:
        return None
    return p / p.sum()


def interleaving_plan(
    a: Sequence[Hashable], b: Sequence[Hashable], depth: int = DEPTH
) -> tuple[list[tuple], np.ndarray, np.ndarray] | None:
    """What optimized interleaving draws from for rankings ``a`` and ``b``: the lists it
    may show (their first ``depth`` positions, see :func:`merges`), each position's credit
    (:func:`rank_credits`) and each list's probability (:func:`distribution`); None when
    no distribution is unbiased. The same for every request of these rankings."""
    lists = merges(a, b, depth)
    credits = rank_credits(lists, a, b)
    p = distribution(credits)
    return None if p is None else (lists, credits, p)


def optimized_interleave(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    seed: int | random.Random | np.random.Generator | None = None,
    *,
    k: int | None = None,
    depth: int = DEPTH,
) -> tuple[list[Hashable], list[float]] | None:
    """The optimized interleaving of rankings ``a`` and ``b`` (document ids or indices,
    best first): the first ``k`` documents shown (all of either by default) and the credit
    of each position (``a``'s minus ``b``'s; 0 below ``depth``), or None when no unbiased
    distribution exists for these rankings (then show ``a`` and do not credit it).
    ``seed``: an int, a ``random.Random`` or a numpy ``Generator``."""
    union = list(dict.fromkeys([*a, *b]))
    limit = len(union) if k is None else min(k, len(union))
    if limit == 0:
        return [], []
    plan = interleaving_plan(a, b, min(depth, limit))
    if plan is None:
        return None
    lists, credits, p = plan
    pick = _draw(p, seed)
    shown = list(lists[pick])
    placed = set(shown)
    rest = [d for d in union if d not in placed][: limit - len(shown)]
    return shown + rest, [float(c) for c in credits[pick]] + [0.0] * len(rest)


def _draw(p: np.ndarray, seed: int | random.Random | np.random.Generator | None) -> int:
    if isinstance(seed, np.random.Generator):
        u = float(seed.random())
    else:
        u = (seed if isinstance(seed, random.Random) else random.Random(seed)).random()
    return int(min(np.searchsorted(np.cumsum(p), u * p.sum(), side="right"), len(p) - 1))
