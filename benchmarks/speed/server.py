"""The HTTP service under load: throughput and latency at concurrency 1, 8 and 32, with
micro-batching on and off, for the ``hybrid`` pipeline (BM25 or first-stage score + MiniLM).

The service runs in its own process on loopback (``rerankit serve``); this script drives
``POST /v2/rerank`` with httpx. Every request carries 20 documents never sent before (DL19
passages when ``../shared/data`` is present, else generated text), so the embedding cache
cannot answer for the model. Each level is bounded in time and count. It prints requests/s,
p50 and p99 latency, and counts: answered, refused with 429 (only expected beyond the queue),
and failed (anything else; should be 0). A last overload level (batching on, 128 clients
against 32 slots and a queue of 64) shows the deliberate 429s.

Then a service with the default limits (4 slots, a queue of 64) and a 5 s deadline:

* **deadline**: 128 clients for ``--seconds``; every request must be answered (200, 429 or
  503, none lost) and the answered ones' p99 latency must stay near the deadline;
* **client disconnect**: 32 clients that hang up after 0.5 s, then the service's own
  counters say how much work the abandoned requests did (documents scored, texts encoded)
  against the work 32 completed requests need.

``--backends`` instead compares the embedding model on torch (float32) with ONNX Runtime
(int8 weights; exported into the cache directory beforehand): both services run side by
side (4 slots, batching on), and the levels alternate between them: requests/s and p50 at
concurrency 1 and 8, and the seconds from process start to the first answered request.

``--goodput`` instead measures goodput (answers per second) at concurrency 1, 8, 32 and 128
with the default limits, for clients that wait as ``Retry-After`` says and for clients that
retry as the cohere SDK does (two retries), the two alternating at each level.

Run: ``python -m benchmarks.speed.server [--seconds 20] [--requests 96] [--backends | --goodput]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.common import DL19, open_service

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


def start_server(batching: bool, port: int, limits: str | None = None) -> subprocess.Popen:
    config = Path(tempfile.mkdtemp()) / "service.toml"
    config.write_text(
        "[server]\n"
        f"batching = {'true' if batching else 'false'}\n"
        + (limits or "max_concurrency = 32\nmax_queue = 64\ntimeout = 120\n")
        + '[pipelines.hybrid]\nreranker = "hybrid"\n'
    )
    env = open_service(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rerankit", "serve", "--settings", str(config), "--port", str(port)],
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
    url: str,
    concurrency: int,
    texts: list[str],
    start: int,
    seconds: float,
    limit: int,
    client_timeout: float = 300.0,
) -> dict:
    latencies: list[float] = []
    codes: dict[int | str, int] = {}
    counter = iter(range(limit))
    stop = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            if time.perf_counter() > stop:
                return
            first = (start + i * DOCS_PER_REQUEST) % (len(texts) - DOCS_PER_REQUEST)
            docs = texts[first : first + DOCS_PER_REQUEST]
            t0 = time.perf_counter()
            try:
                r = await client.post(
                    f"{url}/v2/rerank",
                    json={"model": "hybrid", "query": "how do vaccines work", "documents": docs},
                )
            except httpx.TimeoutException:
                codes["hung up"] = codes.get("hung up", 0) + 1
                continue
            except httpx.HTTPError:
                codes["lost"] = codes.get("lost", 0) + 1
                continue
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
            if r.status_code == 429:  # as a well-behaved client: wait as told
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
            if r.status_code == 200:
                assert len(r.json()["results"]) == len(docs)
                latencies.append(time.perf_counter() - t0)

    begin = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency + 8)  # every client has a connection
    async with httpx.AsyncClient(timeout=client_timeout, limits=limits) as c:
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
        "deadline": codes.get(503, 0),
        "hung_up": codes.get("hung up", 0),
        "failed": sum(v for k, v in codes.items() if k not in (200, 429, 503, "hung up")),
    }


async def drive_goodput(
    url: str, concurrency: int, texts: list[str], start: int, seconds: float, behaviour: str
) -> dict:
    """``concurrency`` clients for ``seconds``; each refused request (429/503) is retried:
    ``"retry-after"`` clients wait as told and try again until answered; ``"cohere"``
    clients retry as the cohere SDK does (at most 2 retries, waiting Retry-After, else 1 s,
    2 s), then give up on that request. Goodput: answers (200) per second."""
    import random

    ok, refusals, given_up = 0, 0, 0
    counter = iter(range(10**9))
    stop = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal ok, refusals, given_up
        rng = random.Random(start)
        for i in counter:
            if time.perf_counter() > stop:
                return
            first = (start + i * DOCS_PER_REQUEST) % (len(texts) - DOCS_PER_REQUEST)
            body = {
                "model": "hybrid",
                "query": "how do vaccines work",
                "documents": texts[first : first + DOCS_PER_REQUEST],
            }
            attempt = 0
            while time.perf_counter() < stop:
                try:
                    r = await client.post(f"{url}/v2/rerank", json=body)
                except httpx.HTTPError:
                    given_up += 1
                    break
                if r.status_code == 200:
                    ok += 1
                    break
                refusals += 1
                if behaviour == "cohere" and attempt >= 2:
                    given_up += 1
                    break
                wait = r.headers.get("retry-after")
                if wait is not None:
                    delay = min(float(wait), 60.0)
                else:  # the SDK's exponential backoff with jitter
                    delay = min(2.0**attempt, 60.0) * (1 + 0.25 * rng.random())
                attempt += 1
                await asyncio.sleep(delay)

    begin = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency + 8)
    async with httpx.AsyncClient(timeout=120, limits=limits) as c:
        await asyncio.gather(*(worker(c) for _ in range(concurrency)))
    wall = time.perf_counter() - begin
    return {"goodput": ok / wall, "ok": ok, "refusals": refusals, "given_up": given_up}


def goodput_levels(texts: list[str], seconds: float) -> None:
    """Goodput per concurrency level with the default limits (4 slots, queue 64, 30 s
    deadline), for clients that honour Retry-After and clients that retry like the cohere
    SDK; the two behaviours alternate at each level on the same service."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_server(True, port, "max_concurrency = 4\nmax_queue = 64\ntimeout = 30\n")
    url = f"http://127.0.0.1:{port}"
    rows: dict[tuple[str, int], dict] = {}
    offset = 0
    try:
        httpx.post(
            f"{url}/v2/rerank",
            timeout=120,
            json={"model": "hybrid", "query": "warm up", "documents": texts[-20:]},
        )
        for level in (1, 8, 32, 128):
            for behaviour in ("retry-after", "cohere"):
                rows[behaviour, level] = r = asyncio.run(
                    drive_goodput(url, level, texts, offset, seconds, behaviour)
                )
                offset += (r["ok"] + r["given_up"] + level) * DOCS_PER_REQUEST
                time.sleep(3)  # what was queued drains before the next level
    finally:
        proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
        proc.wait(30)
    print(f"\ngoodput (answers/s), hybrid, {DOCS_PER_REQUEST} new documents per request, ")
    print("4 slots, queue 64, 30 s deadline; share of the best level in brackets:\n")
    print("| clients | concurrency | goodput | refusals | gave up |")
    print("|---|---:|---:|---:|---:|")
    for behaviour in ("retry-after", "cohere"):
        best = max(rows[behaviour, level]["goodput"] for level in (1, 8, 32, 128))
        for level in (1, 8, 32, 128):
            r = rows[behaviour, level]
            label = "wait Retry-After" if behaviour == "retry-after" else "cohere SDK retries"
            print(
                f"| {label} | {level} | {r['goodput']:.2f} ({r['goodput'] / best:.0%}) | "
                f"{r['refusals']} | {r['given_up']} |"
            )


def compare_backends(texts: list[str], seconds: float, requests: int) -> None:
    """torch float32 against ONNX int8, services side by side, levels alternating."""
    from rerankit.scorers import EmbeddingScorer

    assert EmbeddingScorer(backend="onnx", quantize="int8").model  # the export, made once
    backends = {"torch float32": "", "ONNX int8": 'backend = "onnx"\nquantize = "int8"\n'}
    servers, started = {}, {}
    for name, extra in backends.items():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        begin = time.perf_counter()
        proc = start_server(
            True, port, "max_concurrency = 4\nmax_queue = 64\ntimeout = 120\n" + extra
        )
        url = f"http://127.0.0.1:{port}"
        httpx.post(
            f"{url}/v2/rerank",
            timeout=120,
            json={"model": "hybrid", "query": "first", "documents": texts[-20:]},
        ).raise_for_status()
        started[name] = time.perf_counter() - begin
        servers[name] = (proc, url)
    results: dict[tuple[str, int], dict] = {}
    offset = 0
    try:
        for level in (1, 8):
            for name, (_, url) in servers.items():
                results[name, level] = asyncio.run(
                    drive(url, level, texts, offset, seconds, requests)
                )
                offset += requests * DOCS_PER_REQUEST
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
    print("hybrid, 20 new DL19 passages per request, 4 slots, batching on:\n")
    print("| backend | start to first answer s | c=1 req/s | c=1 p50 ms | c=8 req/s | c=8 p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in backends:
        one, eight = results[name, 1], results[name, 8]
        print(
            f"| {name} | {started[name]:.1f} | {one['rps']:.2f} | {1e3 * one['p50']:.0f} | "
            f"{eight['rps']:.2f} | {1e3 * eight['p50']:.0f} |"
        )
    torch_, onnx = "torch float32", "ONNX int8"
    print(
        f"\nONNX int8 / torch: {results[onnx, 8]['rps'] / results[torch_, 8]['rps']:.2f}x the "
        f"requests/s at concurrency 8; p50 at concurrency 1 "
        f"{results[onnx, 1]['p50'] / results[torch_, 1]['p50']:.2f}x torch's"
    )


def counters(url: str) -> dict[str, float]:
    """The service's own counters of work done (summed over pipelines)."""
    wanted = {
        "rerankit_documents_scored_total": "documents scored",
        "rerankit_encode_batch_texts_sum": "texts encoded",
        "rerankit_abandoned_total": "abandoned",
    }
    out = dict.fromkeys(wanted.values(), 0.0)
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        name = line.split(" ")[0].split("{")[0]
        if name in wanted:
            out[wanted[name]] += float(line.split()[-1])
    return out


def deadline_levels(texts: list[str], offset: int, seconds: float) -> None:
    """The 5 s deadline under overload, then clients that hang up."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    limits = "max_concurrency = 4\nmax_queue = 64\ntimeout = 5\n"
    proc = start_server(True, port, limits)
    url = f"http://127.0.0.1:{port}"
    try:
        httpx.post(
            f"{url}/v2/rerank",
            timeout=120,
            json={"model": "hybrid", "query": "warm up", "documents": texts[-20:]},
        )
        r = asyncio.run(drive(url, 128, texts, offset, seconds, 100_000))
        offset += (r["ok"] + r["refused"] + r["deadline"] + r["failed"] + 128) * DOCS_PER_REQUEST
        total = r["ok"] + r["refused"] + r["deadline"] + r["failed"]
        print("\n5 s deadline, 4 slots, queue 64, 128 clients (batching on):\n")
        print("| sent | 200 | 429 | 503 (deadline) | lost | req/s | p50 ms | p99 ms (answered) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(
            f"| {total} | {r['ok']} | {r['refused']} | {r['deadline']} | {r['failed']} | "
            f"{r['rps']:.2f} | {1e3 * r['p50']:.0f} | {1e3 * r['p99']:.0f} |"
        )
        time.sleep(6)  # the service drains
        before = counters(url)
        gone = asyncio.run(drive(url, 32, texts, offset, 60, 32, client_timeout=0.5))
        time.sleep(6)  # anything still running would finish (or be dropped) by now
        after = counters(url)
        offset += 32 * DOCS_PER_REQUEST
        done = asyncio.run(drive(url, 4, texts, offset, 120, 32))
        finished = counters(url)
        print("\n32 clients that hang up after 0.5 s, then 32 that wait (same service):\n")
        print("| requests | hung up | abandoned (service) | documents scored | texts encoded |")
        print("|---|---:|---:|---:|---:|")
        print(
            f"| abandoned | {gone['hung_up']} | {after['abandoned'] - before['abandoned']:.0f} | "
            f"{after['documents scored'] - before['documents scored']:.0f} | "
            f"{after['texts encoded'] - before['texts encoded']:.0f} |"
        )
        print(
            f"| completed | 0 ({done['ok']} answered) | - | "
            f"{finished['documents scored'] - after['documents scored']:.0f} | "
            f"{finished['texts encoded'] - after['texts encoded']:.0f} |"
        )
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per level")
    parser.add_argument("--requests", type=int, default=96, help="per level")
    parser.add_argument(
        "--only-deadline", action="store_true", help="run only the deadline and disconnect levels"
    )
    parser.add_argument(
        "--backends", action="store_true", help="compare torch with ONNX int8 instead"
    )
    parser.add_argument(
        "--goodput",
        action="store_true",
        help="goodput per concurrency level with well-behaved and retrying clients instead",
    )
    args = parser.parse_args()
    levels = (1, 8, 32)
    texts = passages((2 * len(levels) * args.requests + 128) * DOCS_PER_REQUEST + 400)
    results = {}
    offset = 0
    if args.backends:
        compare_backends(texts, args.seconds, args.requests)
        return
    if args.goodput:
        goodput_levels(passages(40_000), args.seconds)
        return
    if args.only_deadline:
        deadline_levels(texts, offset, args.seconds)
        return
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
            proc.send_signal(signal.SIGINT)
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
    deadline_levels(texts, offset + 128 * DOCS_PER_REQUEST, args.seconds)


if __name__ == "__main__":
    main()
