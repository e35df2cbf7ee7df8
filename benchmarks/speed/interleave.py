"""What interleaving costs a request: the time to draw one interleaved answer of two
rankings with optimized interleaving (the service's default: enumerate the merges of the
two top 10s, solve the linear program, draw) and with team draft, and how much faster the
simplex method's pivot rule (the largest reduced cost, falling back to Bland's rule when it
stalls) is than Bland's rule alone, which rerankit used before.

Pairs of rankings of 100 candidates:

* real pairs: the five pairs of rankers ``benchmarks/quality/clicks_interleave.py``'s
  ``methods()`` compares, on SciFact's training queries (when ``../shared/data`` and the
  click benchmark's feature cache are there; without the cache they take hours to compute,
  so they are skipped unless ``--real`` is given);
* synthetic pairs: the second ranking is the first with ``n`` random swaps among its top
  15, for ``n`` in 1, 3, 10, 30; and two rankings with no document in common, whose top 10s
  have all 1,024 merges (the largest program).

Each case times every request once per method, interleaved in rounds, and prints the
median and the largest time in milliseconds.

Run: ``python -m benchmarks.speed.interleave [--real] [--queries 200]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from rerankit.training.clicks import optimized
from rerankit.training.clicks.interleave import team_draft
from rerankit.training.clicks.optimized import optimized_interleave


def _bland(a, b, seed):
    """Optimized interleaving with Bland's rule from the first pivot."""
    saved = optimized._STALL
    optimized._STALL = 0
    try:
        return optimized_interleave(a, b, seed, k=10)
    finally:
        optimized._STALL = saved


METHODS = {
    "optimized (rerankit)": lambda a, b, seed: optimized_interleave(a, b, seed, k=10),
    "optimized, Bland's rule alone": _bland,
    "team draft": lambda a, b, seed: team_draft(a, b, seed, k=10),
}


def synthetic(swaps: int, queries: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(queries):
        a = list(range(100))
        b = a[:]
        if swaps < 0:
            b = list(range(100, 200))
        for _ in range(max(swaps, 0)):
            i, j = rng.randrange(15), rng.randrange(15)
            b[i], b[j] = b[j], b[i]
        out.append((a, b))
    return out


def real(queries: int) -> dict[str, list[tuple[list[int], list[int]]]]:
    from benchmarks.quality.clicks_data import prepared
    from benchmarks.quality.clicks_interleave import PAIRS, candidates

    _, rows, hybrid = prepared("scifact", "train")
    rankers = candidates(rows, hybrid)
    keys = sorted(rows)[:queries]
    out = {}
    for one, other in PAIRS:
        out[f"{one} / {other}"] = [
            (
                [int(i) for i in np.argsort(-rankers[one][q], kind="stable")],
                [int(i) for i in np.argsort(-rankers[other][q], kind="stable")],
            )
            for q in keys
        ]
    return out


def time_case(pairs) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in METHODS}
    for n, (a, b) in enumerate(pairs):
        for name, draw in METHODS.items():  # interleaved: every method on every pair in turn
            start = time.perf_counter()
            draw(a, b, n)
            times[name].append(1e3 * (time.perf_counter() - start))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="the SciFact pairs (needs data)")
    parser.add_argument("--queries", type=int, default=200, help="pairs per case")
    args = parser.parse_args()
    cases: dict[str, list] = {}
    if args.real:
        cases.update(real(args.queries))
    for swaps in (1, 3, 10, 30):
        name = f"{swaps} swap{'s' if swaps > 1 else ''} in the top 15"
        cases[name] = synthetic(swaps, args.queries)
    cases["no document in common"] = synthetic(-1, max(args.queries // 10, 5))
    optimized_interleave(list(range(10)), list(range(10, 20)), 0)  # warm up numpy
    names = list(METHODS)
    print("| pair of rankings (100 candidates) | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for case, pairs in cases.items():
        times = time_case(pairs)
        cells = [f"{statistics.median(times[n]):.2f} ({max(times[n]):.1f})" for n in names]
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)
    print("\n(milliseconds per interleaved answer: median (largest))")


if __name__ == "__main__":
    main()
