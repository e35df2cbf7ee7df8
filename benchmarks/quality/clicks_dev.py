"""The development check of learning from clicks, on training queries only: SciFact's
training queries in three seeded thirds; for each third, simulated users' sessions of the
other two (the same logging ranker and click model as ``benchmarks/quality/clicks.py``)
are learned from (``learn_from_clicks``, bias-corrected) and the learned ranker is scored
on the held-out third with its judgments, beside the default and learning to rank on the
judgments of the same two thirds (``tune --method ltr``'s procedure). The test split is
not read.

Run: ``python -m benchmarks.quality.clicks_dev [--sessions 100] [--eta 1] [--seed 0]
[--smoothing K] [--explore SHARE]``;
``--true-propensities`` learns with the click model's own propensities (what a perfect
estimate would give); ``--judgments-shown`` adds learning to rank on the judgments of only
the documents the logging ranker shows (its top 10: all a click log can ever tell about),
to see what the click learner loses by never seeing the others.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from benchmarks.quality.clicks import learned_scores, reference, simulate, test_ndcg
from benchmarks.quality.clicks_data import prepared

#: the folds' shuffle
SPLIT_SEED = 7


def thirds(qids, parts: int = 3) -> list[set]:
    """The training queries in ``parts`` seeded parts (three by default)."""
    order = sorted(qids)
    random.Random(SPLIT_SEED).shuffle(order)
    size = len(order) // parts
    ends = [(i + 1) * size if i < parts - 1 else len(order) for i in range(parts)]
    return [set(order[i * size : end]) for i, end in enumerate(ends)]


def shown_only(qrels, hybrid, rows, depth: int = 10) -> dict:
    """``qrels`` of ``rows``' queries kept to the documents in the logging ranker's first
    ``depth`` (the rest are unjudged: the learner reads them as not relevant)."""
    out = {}
    for q, (ids, _) in rows.items():
        order = np.argsort(-np.asarray(hybrid[q]), kind="stable")[:depth]
        top = {ids[i] for i in order}
        out[q] = {d: g for d, g in qrels.get(q, {}).items() if d in top}
    return out


def below_shown(qrels, hybrid, rows, depth: int = 10) -> tuple[int, int]:
    """How many judged-relevant candidates ``rows``' queries have, and how many of them the
    logging ranker puts below its first ``depth`` (never shown, so never clicked)."""
    shown = shown_only(qrels, hybrid, rows, depth)
    relevant = below = 0
    for q, (ids, _) in rows.items():
        for d in set(ids):
            if qrels.get(q, {}).get(d, 0) > 0:
                relevant += 1
                below += shown[q].get(d, 0) <= 0
    return relevant, below


def main() -> None:
    from rerankit.training.clicks import learn_from_clicks
    from rerankit.training.clicks.simulate import max_grade

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", type=int, default=3, help="held-out parts (default 3)")
    parser.add_argument(
        "--true-propensities",
        action="store_true",
        help="learn with the click model's own propensities instead of estimating them "
        "(what a perfect estimate would give)",
    )
    parser.add_argument(
        "--smoothing",
        type=float,
        default=None,
        help="expected examinations added to each training label's denominator "
        "(default: the learner's, rerankit.training.clicks.learn.SMOOTHING)",
    )
    parser.add_argument(
        "--explore",
        type=float,
        default=0.0,
        help="RandPair: the share of the pairs below the top 3 the logging ranker swaps "
        "(default 0: always the same order)",
    )
    parser.add_argument(
        "--judgments-shown",
        action="store_true",
        help="also learn to rank on the judgments of the logging ranker's top 10 only",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="skip learning to rank on judgments (the slowest part)",
    )
    args = parser.parse_args()
    train, rows, hybrid = prepared("scifact", "train")
    top = max_grade(train.qrels)
    if args.judgments_shown:
        relevant, below = below_shown(train.qrels, hybrid, rows)
        print(
            f"{below} of the {relevant} relevant candidates lie below the logging ranker's top 10"
        )
    results = {"default": [], "learned from clicks": [], "learning to rank on judgments": []}
    if args.judgments_shown:
        results["learning to rank on the shown documents' judgments"] = []
    for fold, held in enumerate(thirds(rows, args.parts)):
        start = time.perf_counter()
        learn = {q: rows[q] for q in rows if q not in held}
        held_rows = {q: rows[q] for q in rows if q in held}
        held_qrels = {q: j for q, j in train.qrels.items() if q in held}
        learn_qrels = {q: j for q, j in train.qrels.items() if q not in held}
        learn_hybrid = {q: hybrid[q] for q in learn}
        results["default"].append(
            test_ndcg({q: hybrid[q] for q in held_rows}, held_rows, held_qrels)
        )
        model, logs = simulate(
            "scifact",
            learn,
            learn_hybrid,
            train.qrels,
            top,
            args.sessions,
            args.eta,
            args.seed,
            args.explore,
        )
        given = model.propensities(10) if args.true_propensities else None
        result = learn_from_clicks(
            logs,
            learn,
            propensities=given,
            keep_learned=True,
            curve=None,
            smoothing=args.smoothing,
        )
        scores = learned_scores(result.booster, result.features, result.option[2], held_rows)
        results["learned from clicks"].append(test_ndcg(scores, held_rows, held_qrels))
        if not args.no_reference:
            judged, *_ = reference(learn, learn_hybrid, learn_qrels, held_rows, held_qrels)
            results["learning to rank on judgments"].append(judged)
        if args.judgments_shown:
            shown = shown_only(learn_qrels, learn_hybrid, learn)
            judged, *_ = reference(learn, learn_hybrid, shown, held_rows, held_qrels)
            results["learning to rank on the shown documents' judgments"].append(judged)
        print(
            f"part {fold + 1} ({len(held_rows)} queries held out): "
            + ", ".join(f"{name} {values[-1]:.2f}" for name, values in results.items() if values)
            + f"; verdict: {'adopted' if result.adopt else 'default kept'}; "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )
    print(
        f"\nSciFact training queries, {args.sessions} sessions a query at eta {args.eta:g}"
        + (f", RandPair {100 * args.explore:g} %" if args.explore else "")
        + ", "
        f"nDCG@10 x 100 on the held-out parts (mean of {args.parts}):"
    )
    for name, values in results.items():
        if values:
            print(f"  {name}: {statistics.fmean(values):.2f}")


if __name__ == "__main__":
    main()
