"""``rerankit eval``'s metrics and paired t-test against ranx's (which it used before), on
real collections: the first stage, ``bm25`` and a shuffled run of each, at k = 10 and 100.

Prints each collection's nDCG@10 and p-values, then the largest absolute difference of any
metric and the largest relative difference of any p-value from ranx's. Then the time each
takes to score the first stage and ``bm25`` on the bundled ``examples/scifact-mini`` in a
fresh process (three rounds, interleaved): the evaluation alone, and the whole process.

Run: ``pip install ranx`` (not an extra of rerankit), then ``python
benchmarks/metrics_parity.py`` (SciFact, NFCorpus, TREC DL19, CISI and LISA from the shared
data folder beside the checkout; a few minutes, most of it ranx compiling).
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
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


#: a fresh process scoring two runs of examples/scifact-mini with ``{how}``; prints the
#: seconds the evaluation took
FRESH = """
import time, warnings
warnings.filterwarnings("ignore")
from rerankit import load
from rerankit.eval import load_beir
from rerankit.eval.first_stage import first_stage
from rerankit.eval.runner import evaluate_runs, first_stage_run, metric_names, run_pipeline
data = load_beir({data!r}, "test")
cands = first_stage(data, "auto", 100)
runs = [first_stage_run(cands), run_pipeline("bm25", load("bm25"), data, cands)]
start = time.perf_counter()
if {how!r} == "ranx":
    import ranx
    qrels = ranx.Qrels({{q: dict(j) for q, j in data.qrels.items() if q in data.queries}})
    ranx.compare(qrels, [ranx.Run(r.run, name=r.name) for r in runs], metric_names(100))
else:
    evaluate_runs(data, runs, 100)
print(time.perf_counter() - start)
"""


def fresh_process_times(rounds: int = 3) -> None:
    """Seconds to evaluate in a fresh process, rerankit's metrics and ranx's, interleaved."""
    data = str(ROOT / "examples" / "scifact-mini")
    times: dict[str, list[tuple[float, float]]] = {"rerankit": [], "ranx": []}
    for _ in range(rounds):
        for how in times:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", FRESH.format(data=data, how=how)],
                capture_output=True,
                text=True,
                check=True,
            )
            times[how].append((float(done.stdout.split()[-1]), time.perf_counter() - start))
    print("\nevaluating examples/scifact-mini (first stage, bm25, k 100) in a fresh process, s:")
    for how, values in times.items():
        alone = ", ".join(f"{a:.2f}" for a, _ in values)
        whole = ", ".join(f"{w:.2f}" for _, w in values)
        print(f"  {how}: evaluation {alone}; whole process {whole}")


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
    fresh_process_times()


if __name__ == "__main__":
    main()
