"""What the service spends on a request outside the pipeline, this checkout against an
earlier commit:

    python -m benchmarks.speed.service_overhead --before REV [--rounds 6] [--requests 40]

Both versions run ``rerankit serve -r bm25`` side by side on loopback (the earlier one from
a temporary ``git worktree`` of REV). Each request is one TREC DL19 query with its BM25 top
100 on the Cohere-compatible ``/v1/rerank`` at concurrency 1; the rounds alternate which
service goes first. "Outside" is the median latency minus the median of the service's own
``x-inference-time`` header: HTTP, JSON, validation, billing and assembling the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT as REPO
from benchmarks.common import load_queries, open_service
from benchmarks.speed.ce_service import drive, free_port, wait_ready


def start(source: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rerankit", "serve", "-r", "bm25", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**open_service(os.environ), "PYTHONPATH": str(source)},
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/ready", proc, "rerankit serve")
    return proc, url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    pairs = load_queries("dl19", args.requests)
    old = Path(tempfile.mkdtemp(prefix="rerankit-before-")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", str(old), args.before])
    services: dict[str, tuple[subprocess.Popen, str]] = {}
    try:
        services[args.before] = start(old / "src")
        services["this checkout"] = start(REPO / "src")
        for _, url in services.values():  # warm up
            asyncio.run(drive("rerankit", url, Path("bm25"), pairs[:4], 1, pipeline="bm25"))
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in services}
        for r in range(args.rounds):
            order = list(services) if r % 2 == 0 else list(services)[::-1]
            for name in order:
                url = services[name][1]
                got = asyncio.run(drive("rerankit", url, Path("bm25"), pairs, 1, "bm25"))
                rows[name].append((got["p50"], got["inference_p50"]))
    finally:
        for proc, _ in services.values():
            proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
            proc.wait(30)
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)])
    print(
        f"\nrerankit serve -r bm25, one DL19 query x its top 100 per request, concurrency 1, "
        f"{args.rounds} alternating rounds of {len(pairs)} requests (medians)\n"
    )
    print("| version | p50 ms | inference p50 ms | outside ms | outside per round |")
    print("|---|---:|---:|---:|---|")
    for name, got in rows.items():
        total = statistics.median(t for t, _ in got)
        inference = statistics.median(i for _, i in got)
        rounds = ", ".join(f"{1e3 * (t - i):.1f}" for t, i in got)
        print(
            f"| {name} | {1e3 * total:.1f} | {1e3 * inference:.1f} | "
            f"{1e3 * (total - inference):.1f} | {rounds} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
