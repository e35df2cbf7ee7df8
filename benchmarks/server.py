"""The HTTP service under load: throughput and latency at concurrency 1, 8 and 32, with
micro-batching on and off, for the ``hybrid`` pipeline (BM25 or first-stage score + MiniLM).

The service runs in its own process on loopback (``rerankit serve``); this script drives
``POST /v2/rerank`` with httpx. Every request carries 20 documents never sent before (DL19
passages when ``../shared/data`` is present, else generated text), so the embedding cache
cannot answer for the model. Each level is bounded in time and count. It prints requests/s,
p50 and p99 latency, and counts: answered, refused with 429 (only expected beyond the queue),
and failed (anything else; should be 0). A last overload level (batching on, 128 clients
against 32 slots and a queue of 64) shows the deliberate 429s.

Run: ``python benchmarks/server.py [--seconds 20] [--requests 96]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

DL19 = Path(__file__).resolve().parents[2] / "shared/data/msmarco/trec-dl-2019-bm25-top100"
DOCS_PER_REQUEST = 20


def passages(n: int) -> list[str]:
    path = DL19 / "corpus.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as f:
            out = [json.loads(line)["text"] for line in f]
        return [out[i % len(out)] + f" (copy {i // len(out)})" for i in range(n)]
    words = "solar wind power energy cell panel grid storage turbine price market".split()
    return [
        " ".join(words[(i * 7 + j) % len(words)] for j in range(40)) + f" {i}" for i in range(n)
    ]


def start_server(batching: bool, port: int) -> subprocess.Popen:
    config = Path(tempfile.mkdtemp()) / "service.toml"
    config.write_text(
        "[server]\n"
        f"batching = {'true' if batching else 'false'}\n"
        "max_concurrency = 32\nmax_queue = 64\ntimeout = 120\n"
        '[pipelines.hybrid]\nreranker = "hybrid"\n'
    )
    env = {**os.environ, "RERANKIT_API_KEYS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rerankit", "serve", "--config", str(config), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the service did not start")


async def drive(
    url: str, concurrency: int, texts: list[str], start: int, seconds: float, limit: int
) -> dict:
    latencies: list[float] = []
    codes: dict[int, int] = {}
    counter = iter(range(limit))
    stop = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            if time.perf_counter() > stop:
                return
            docs = texts[start + i * DOCS_PER_REQUEST : start + (i + 1) * DOCS_PER_REQUEST]
            t0 = time.perf_counter()
            r = await client.post(
                f"{url}/v2/rerank",
                json={"model": "hybrid", "query": "how do vaccines work", "documents": docs},
            )
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
            if r.status_code == 200:
                assert len(r.json()["results"]) == len(docs)
                latencies.append(time.perf_counter() - t0)

    begin = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency + 8)  # every client has a connection
    async with httpx.AsyncClient(timeout=300, limits=limits) as c:
        await asyncio.gather(*(worker(c) for _ in range(concurrency)))
    wall = time.perf_counter() - begin
    ok = codes.get(200, 0)
    lat = sorted(latencies) or [0.0]
    return {
        "rps": ok / wall,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "ok": ok,
        "refused": codes.get(429, 0),
        "failed": sum(v for k, v in codes.items() if k not in (200, 429)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per level")
    parser.add_argument("--requests", type=int, default=96, help="per level")
    args = parser.parse_args()
    levels = (1, 8, 32)
    texts = passages((2 * len(levels) * args.requests + 128) * DOCS_PER_REQUEST + 400)
    results = {}
    offset = 0
    for batching in (True, False):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = start_server(batching, port)
        url = f"http://127.0.0.1:{port}"
        try:  # warm-up: loads the model
            httpx.post(
                f"{url}/v2/rerank",
                timeout=120,
                json={"model": "hybrid", "query": "warm up", "documents": texts[-20:]},
            )
            for level in (*levels, 128) if batching else levels:
                count = 128 if level == 128 else args.requests  # 128: the overload level
                results[batching, level] = asyncio.run(
                    drive(url, level, texts, offset, args.seconds, count)
                )
                offset += count * DOCS_PER_REQUEST
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"hybrid pipeline, {DOCS_PER_REQUEST} new documents per request, POST /v2/rerank\n")
    print("| batching | concurrency | req/s | p50 ms | p99 ms | answered | 429 | failed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (batching, level), r in results.items():
        label = "on (overload)" if level == 128 else ("on" if batching else "off")
        print(
            f"| {label} | {level} | {r['rps']:.2f} | "
            f"{1e3 * r['p50']:.0f} | {1e3 * r['p99']:.0f} | {r['ok']} | {r['refused']} | "
            f"{r['failed']} |"
        )
    on, off = results[True, 32]["rps"], results[False, 32]["rps"]
    print(f"\nat concurrency 32, micro-batching gives {on / off:.2f}x the throughput")


if __name__ == "__main__":
    main()
