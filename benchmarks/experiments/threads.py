"""Which thread runs a local model, and what it costs on a CPU.

Decided: every local model runs on one process-wide thread (``rerankit._threads``).
Reported in docs/measured.md.

    python -m benchmarks.experiments.threads [--queries 16] [--repeats 2]

PyTorch's CPU kernels run on an OpenMP team that belongs to the calling thread; once a
process holds more OpenMP threads than cores, the teams sleep between kernels instead of
spinning. Each case runs in a fresh process (the effect depends on which threads have run
the model before), on DL19 queries with their BM25 top 100, cases alternating for
``--repeats`` rounds; the figure is the median milliseconds per query of a cross-encoder
reranking 100 passages:

- ``loading thread``: the model called on the thread that loaded it (the library's direct
  ``score_texts`` call: the reference);
- ``second thread``: loaded and called on the main thread, then called from another thread
  (how a service or an executor ran it when something else had touched the model first);
- ``rerank() after a direct call``: ``score_texts`` on the main thread, then ``rerank``;
- ``service thread pool``: loaded on one worker thread, called from a pool of six.

Two models: a two-layer BERT (hidden 64, ``bert-tiny``) and ms-marco-MiniLM-L6-v2's shape (random
weights, see models.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CASES = ("loading thread", "second thread", "rerank() after a direct call", "service thread pool")


def case(name: str, folder: str, queries: int) -> float:
    """Median ms per query for one case (run in its own process)."""
    from benchmarks.common import load_queries
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers import CrossEncoderScorer

    pairs = load_queries("dl19", queries + 2)
    scorer = CrossEncoderScorer(folder, device="cpu")

    def timed(call) -> float:
        took = []
        for query, texts in pairs[2:]:
            start = time.perf_counter()
            call(query, texts)
            took.append(time.perf_counter() - start)
        return 1e3 * statistics.median(took)

    def warm(call) -> None:
        for query, texts in pairs[:2]:
            call(query, texts)

    if name == "loading thread":
        warm(scorer.score_texts)
        return timed(scorer.score_texts)
    if name == "rerank() after a direct call":
        warm(scorer.score_texts)
        reranker = ScorerReranker(scorer)
        warm(reranker.rerank)
        return timed(reranker.rerank)
    if name == "second thread":
        warm(scorer.score_texts)
        with ThreadPoolExecutor(1) as other:
            other.submit(warm, scorer.score_texts).result()
            return other.submit(timed, scorer.score_texts).result()
    with ThreadPoolExecutor(1) as loader, ThreadPoolExecutor(6) as pool:
        loader.submit(warm, scorer.score_texts).result()
        return timed(lambda q, t: pool.submit(scorer.score_texts, q, t).result())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:  # a child process: one case
        print(json.dumps(case(args.case, args.model, args.queries)))
        return 0
    from benchmarks.common import load_queries
    from benchmarks.speed.models import build

    work = Path(tempfile.mkdtemp(prefix="rerankit-threads-"))
    texts = [t for _, ts in load_queries("dl19", 43) for t in ts[:20]]
    models = {
        "2-layer BERT": build("bert-tiny", work / "tiny", texts),
        "MiniLM-L6 shape": build("minilm", work / "minilm", texts),
    }
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for model, folder in models.items():
            for name in CASES:
                out = subprocess.run(
                    [
                        *(
                            sys.executable,
                            "-m",
                            __spec__.name,
                            "--case",
                            name,
                            "--model",
                            str(folder),
                        ),
                        *("--queries", str(args.queries)),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results.setdefault((model, name), []).append(float(out.stdout.split()[-1]))
                print(f"  {model}, {name} done", file=sys.stderr, flush=True)
    print(
        f"\nms per query (median over {args.queries} DL19 queries x 100 passages; median of "
        f"{args.repeats} processes per case), CPU, torch {__import__('torch').__version__}\n"
    )
    print("| case | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for name in CASES:
        cells = []
        for model in models:
            value = statistics.median(results[model, name])
            base = statistics.median(results[model, CASES[0]])
            cells.append(f"{value:.0f} ({value / base:.2f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
