"""`rerankit batch`: rows/s of the local engine against Ray Data with 1 and 2 workers on
this machine, the per-row and fixed costs Ray adds, and the peak memory of a worker.

Rows are TREC DL19's 43 queries with their BM25 top 100 (repeated to make larger jobs).
Every variant runs in one process after one ``ray.init``, interleaved over ``--rounds``
rounds; medians are reported. Per-row cost and fixed cost come from a line through two
job sizes (``--small`` and ``--large`` rows): time = fixed + rows x per-row. ``bm25``
shows scheduling overhead (little work per row); ``embedding`` (MiniLM cosine, no vector
cache) shows real model work, where each Ray worker runs with one thread (Ray gives an
actor as many threads as CPUs it holds) and the local process with torch's default (every
core). Peak memory: the largest resident set of any Ray worker process, sampled every
0.1 s, and this process's own peak for the local engine.

Run: ``python -m benchmarks.speed.batch [--rounds 3]`` (needs the ``ray`` extra and the DL19
data beside the repository).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import DL19

PIPELINES = {
    "bm25": "bm25",
    "embedding": {
        "name": "embedding",
        "stages": [{"scorer": {"type": "embedding", "cache": False}}],
    },
}
VARIANTS = (("local", 1), ("ray", 1), ("ray", 2))


class WorkerMemory:
    """Peak RSS of Ray worker processes while it runs (sampled)."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            for p in self.psutil.process_iter(["cmdline", "memory_info"]):
                cmd = " ".join(p.info.get("cmdline") or [])
                if "MapWorker" in cmd or "ray::_Worker" in cmd:
                    self.peak = max(self.peak, p.info["memory_info"].rss)
            time.sleep(0.1)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def one(rows, pipeline, engine, workers, out_dir):
    from rerankit.batch import run_batch

    out = Path(out_dir) / f"{engine}-{workers}.jsonl"
    with WorkerMemory() as memory:
        start = time.perf_counter()
        summary = run_batch(rows, out, pipeline, engine=engine, workers=workers, batch_size=8)
        seconds = time.perf_counter() - start
    if summary.failures:
        sys.exit(f"{engine}: {summary.failures} rows failed: {summary.errors[:2]}")
    return seconds, memory.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=43, help="rows of the small job")
    parser.add_argument("--large", type=int, default=430, help="rows of the large job (bm25)")
    parser.add_argument("--embedding-rows", type=int, default=24, help="rows (embedding)")
    args = parser.parse_args()
    if not DL19.exists():
        sys.exit(f"{DL19} not found: the DL19 data must sit beside the repository")
    os.environ["RERANKIT_EMBEDDING_CACHE"] = ""  # nothing cached on disk between variants
    import ray

    from rerankit.batch import beir_rows

    base = beir_rows(DL19, DL19 / "bm25_top100.run.trec")
    rows_of = {n: [base[i % len(base)] for i in range(n)] for n in (args.small, args.large)}
    started = time.perf_counter()
    ray.init(
        num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="ERROR"
    )
    print(
        f"ray.init: {time.perf_counter() - started:.1f} s (once per job on a laptop; "
        "nothing on a running cluster)\n",
        file=sys.stderr,
    )
    jobs = [("bm25", args.small), ("bm25", args.large), ("embedding", args.embedding_rows)]
    rows_of[args.embedding_rows] = [base[i % len(base)] for i in range(args.embedding_rows)]
    times: dict[tuple, list[float]] = {}
    peaks: dict[tuple, int] = {}
    with tempfile.TemporaryDirectory() as out_dir:
        for r in range(args.rounds):
            for name, n in jobs:
                for engine, workers in VARIANTS:
                    seconds, peak = one(rows_of[n], PIPELINES[name], engine, workers, out_dir)
                    key = (name, n, engine, workers)
                    times.setdefault(key, []).append(seconds)
                    peaks[key] = max(peaks.get(key, 0), peak)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    local_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    med = {k: statistics.median(v) for k, v in times.items()}

    print(f"{os.cpu_count()} CPUs; medians of {args.rounds} interleaved rounds; batch size 8\n")
    print("| pipeline, rows | engine | seconds | rows/s | vs local |")
    print("|---|---|---:|---:|---:|")
    for name, n in jobs:
        local = med[(name, n, "local", 1)]
        for engine, workers in VARIANTS:
            s = med[(name, n, engine, workers)]
            label = "local" if engine == "local" else f"ray, {workers} worker{'s' * (workers > 1)}"
            print(f"| {name}, {n} | {label} | {s:.2f} | {n / s:.1f} | {local / s:.2f}x |")
    print("\nbm25: time = fixed + rows x per-row, from the two job sizes:\n")
    print("| engine | fixed cost per job | per row | per row vs local |")
    print("|---|---:|---:|---:|")
    fits = {}
    for engine, workers in VARIANTS:
        small, large = (
            med[("bm25", args.small, engine, workers)],
            med[("bm25", args.large, engine, workers)],
        )
        per_row = (large - small) / (args.large - args.small)
        fits[engine, workers] = (small - per_row * args.small, per_row)
    for (engine, workers), (fixed, per_row) in fits.items():
        label = "local" if engine == "local" else f"ray, {workers} worker{'s' * (workers > 1)}"
        ratio = per_row / fits["local", 1][1]
        print(f"| {label} | {fixed:.2f} s | {1000 * per_row:.2f} ms | {ratio:.2f}x |")
    print("\npeak resident memory:\n")
    for name, n in (("bm25", args.large), ("embedding", args.embedding_rows)):
        worker = max(peaks[(name, n, "ray", 1)], peaks[(name, n, "ray", 2)])
        print(f"- {name}: one Ray worker {worker / 2**20:.0f} MiB")
    print(
        f"- the local engine's process (all variants, driver included) {local_peak / 2**20:.0f} MiB"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
