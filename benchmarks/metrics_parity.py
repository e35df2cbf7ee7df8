"""``rerankit eval``'s metrics and paired t-test against ranx's (which it used before), on
real collections: the first stage, ``bm25`` and a shuffled run of each, at k = 10 and 100.

Prints each collection's nDCG@10 and p-values, then the largest absolute difference of any
metric and the largest relative difference of any p-value from ranx's.

Run: ``pip install ranx`` (not an extra of rerankit), then ``python
benchmarks/metrics_parity.py`` (SciFact, NFCorpus, TREC DL19, CISI and LISA from the shared
data folder beside the checkout; a few minutes, most of it ranx compiling).
"""

from __future__ import annotations

import math
import random
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SETS = [
    DATA / "beir" / "scifact",
    DATA / "beir" / "nfcorpus",
    DATA / "msmarco" / "trec-dl-2019-bm25-top100",
    DATA / "classic" / "cisi",
    DATA / "classic" / "lisa",
]


def shuffled_run(cands, seed: int = 0):
    from rerankit.eval.runner import PipelineRun

    rng = random.Random(seed)
    run = {}
    for q, c in cands.items():
        ids = [d for d, _ in c]
        rng.shuffle(ids)
        run[q] = {d: float(len(ids) - i) for i, d in enumerate(ids)}
    return PipelineRun("shuffled", run)


def main() -> None:
    try:
        import ranx
    except ImportError:
        sys.exit("this comparison needs ranx: pip install ranx")
    from rerankit import load
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.runner import evaluate_runs, first_stage_run, metric_names, run_pipeline

    warnings.filterwarnings("ignore")  # numba's notes on ranx's casts
    missing = [str(p) for p in SETS if not p.exists()]
    if missing:
        sys.exit(f"collections not found: {', '.join(missing)}")
    worst_metric, worst_p = 0.0, 0.0
    for path in SETS:
        data = load_beir(path, "test")
        cands = first_stage(data, "auto", 100)
        runs = [first_stage_run(cands), run_pipeline("bm25", load("bm25"), data, cands)]
        runs.append(shuffled_run(cands))
        qrels = ranx.Qrels({q: dict(j) for q, j in data.qrels.items() if q in data.queries})
        theirs_runs = [
            ranx.Run({q: (v if v else {"__none__": 0.0}) for q, v in r.run.items()}, name=r.name)
            for r in runs
        ]
        for k in (10, 100):
            ours = evaluate_runs(data, runs, k)
            theirs = ranx.compare(qrels, theirs_runs, metric_names(k), stat_test="student")
            theirs = theirs.to_dict()
            for row in ours:
                entry = theirs[row["pipeline"]]
                for m in metric_names(k):
                    worst_metric = max(worst_metric, abs(row[m] - entry["scores"][m]))
                for other, p in row["p_vs"].items():
                    ref = entry["comparisons"][other]["ndcg@10"]
                    if p is None or not math.isfinite(ref):
                        if (p is None) != (not math.isfinite(ref)):
                            sys.exit(f"{path.name} {row['pipeline']} vs {other}: {p} and {ref}")
                    else:
                        worst_p = max(worst_p, abs(p - ref) / max(ref, 1e-300))
        cells = ", ".join(
            f"{r['pipeline']} {100 * r['ndcg@10']:.2f}"
            + ("" if r["p_vs_first_stage"] is None else f" (p {r['p_vs_first_stage']:.3g})")
            for r in ours
        )
        print(f"{path.name}: {len(qrels)} queries; {cells}", flush=True)
    print(
        f"largest difference of a metric: {worst_metric:.2g}; of a p-value, relative: {worst_p:.2g}"
    )


if __name__ == "__main__":
    main()
