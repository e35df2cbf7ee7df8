"""How the click learner's label smoothing was chosen, on training queries only: SciFact's
training queries in the three seeded thirds of ``benchmarks/quality/clicks_dev.py``; for
each third, simulated users' sessions of the other two are learned from
(``learn_from_clicks``, bias-corrected) with each smoothing (expected examinations added to
each training label's denominator) and the learned ranker is scored on the held-out third
with its judgments (nDCG@10 x 100). The ranker scored is the one ``keep_learned`` fits,
whatever the verdict says. The test split is not read; the default and learning to rank
on judgments of the same thirds are in ``clicks_dev``'s output.

Run: ``python -m benchmarks.quality.clicks_smoothing [--values 0,1,2,3,5,10] [--seeds 0,1]
[--sessions 100] [--eta 1]`` (about 30 s a value and third on two idle cores).
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.quality.clicks import learned_scores, simulate, test_ndcg
from benchmarks.quality.clicks_data import prepared
from benchmarks.quality.clicks_dev import thirds


def _numbers(text: str, kind=float) -> list:
    return [kind(v) for v in text.split(",") if v.strip()]


def main() -> None:
    from rerankit.training.clicks import learn_from_clicks
    from rerankit.training.clicks.simulate import max_grade

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--values", default="0,1,2,3,5,10", help="smoothings, comma-separated")
    parser.add_argument("--seeds", default="0,1", help="simulation seeds, comma-separated")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--eta", type=float, default=1.0)
    args = parser.parse_args()
    values, seeds = _numbers(args.values), _numbers(args.seeds, int)
    train, rows, hybrid = prepared("scifact", "train")
    top = max_grade(train.qrels)
    parts = thirds(rows)
    table: dict[tuple[int, float], list[float]] = {}
    for seed in seeds:
        for fold, held in enumerate(parts):
            learn = {q: rows[q] for q in rows if q not in held}
            held_rows = {q: rows[q] for q in rows if q in held}
            held_qrels = {q: j for q, j in train.qrels.items() if q in held}
            _, logs = simulate(
                "scifact",
                learn,
                {q: hybrid[q] for q in learn},
                train.qrels,
                top,
                args.sessions,
                args.eta,
                seed,
            )
            for value in values:
                start = time.perf_counter()
                result = learn_from_clicks(
                    logs, learn, keep_learned=True, curve=None, smoothing=value
                )
                scores = learned_scores(
                    result.booster, result.features, result.option[2], held_rows
                )
                ndcg = test_ndcg(scores, held_rows, held_qrels)
                table.setdefault((seed, value), []).append(ndcg)
                verdict = "adopted" if result.adopt else "default kept"
                print(
                    f"seed {seed}, part {fold + 1}, smoothing {value:g}: {ndcg:.2f} "
                    f"(option {result.option[:3]}, {verdict}; "
                    f"{time.perf_counter() - start:.0f} s)",
                    flush=True,
                )
    print(
        f"\nSciFact training queries, {args.sessions} sessions a query at eta {args.eta:g}: "
        "nDCG@10 x 100 of the learned ranker on the held-out thirds\n"
    )
    print("| smoothing | " + " | ".join(f"seed {s}: thirds 1, 2, 3; mean" for s in seeds) + " |")
    print("|---:|" + "---|" * len(seeds))
    for value in values:
        cells = []
        for seed in seeds:
            got = table[seed, value]
            cells.append(", ".join(f"{v:.2f}" for v in got) + f"; **{statistics.fmean(got):.2f}**")
        print(f"| {value:g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
