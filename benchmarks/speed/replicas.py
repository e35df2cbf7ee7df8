"""Two replicas of the service behind a round-robin client, with and without the shared
cache, on one Zipf-distributed stream of queries.

    python -m benchmarks.speed.replicas [--queries 200] [--requests 600] [--zipf 1.0]
        [--latency 0.2] [--candidates 20] [--concurrency 8] [--pipelines llm[,hybrid]]

Four ``rerankit serve`` processes on loopback ports: two replicas as rerankit runs them
without a shared cache (each with its own SQLite judgments and in-memory embeddings, as two
machines have), and two sharing one Redis (``[cache] url``, so judgments, embeddings and,
with ``[server] answer_cache = true``, whole answers are shared, and identical requests in
flight are computed once). Each replica serves ``llm`` (an LLM judge, pointwise, against
``rerankit.llm.testing.FakeLLMServer`` waiting ``--latency`` seconds per call, which counts
the calls) and, with ``--pipelines llm,hybrid``, ``hybrid`` (the default, the bundled
MiniLM: CPU-bound, slow on a small machine). A request is a SciFact training query with its
BM25 top ``--candidates`` sent to ``/v2/rerank``; the stream draws ``--requests`` of
``--queries`` distinct queries with probability proportional to 1 / rank^``--zipf`` (a
popular question is asked often, most rarely), and both setups get the same stream, sent
``--concurrency`` at a time, alternating between their two replicas. The stream is run in
chunks of 50, each chunk on one setup then the other (which goes first alternates), so both
see the same machine.

It prints per pipeline and setup: the answer hit rate (answers read from the cache, or
shared with an identical request in flight), the calls the LLM provider got and how many
the shared cache saved, and p50/p99 latency seen by the client; then what each cache held in
Redis (entries, and bytes from ``MEMORY USAGE`` of a sample, as ``rerankit cache info``),
and what one answer of 10 and of 100 documents takes there, with and without the documents'
texts in it (``return_documents``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from benchmarks.common import load_queries
from benchmarks.speed.ce_service import free_port, start_rerankit
from rerankit.cache import KINDS, open_store

SETUPS = ("own caches", "shared cache")
CHUNK = 50
#: the answers whose size in Redis is shown: (documents, return_documents)
PROBES = ((10, False), (10, True), (100, False), (100, True))


def start_redis(folder: Path) -> tuple[subprocess.Popen, str]:
    """A Redis (or Valkey) server without persistence on a free loopback port."""
    binary = shutil.which("redis-server") or shutil.which("valkey-server")
    if binary is None:
        sys.exit("needs redis-server (or valkey-server): `make redis`, or apt-get install it")
    port = free_port()
    options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)]
    proc = subprocess.Popen(
        [binary, "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("redis-server did not start")


def service_toml(
    provider: str, model: str, redis_url: str | None, concurrency: int, pipelines: list[str]
) -> str:
    """The settings of one setup: ``pipelines`` of ``llm`` (the judge, named ``model`` at
    the provider so each setup's calls are counted apart) and ``hybrid``; the shared cache
    when ``redis_url`` is given."""
    judge = (
        f'{{ type = "llm_pointwise", provider = "openai", model = "{model}", '
        f'base_url = "{provider}", api_key_env = "RERANKIT_BENCH_KEY" }}'
    )
    lines = [
        "[server]",
        f'default = "{pipelines[0]}"',
        f"max_concurrency = {concurrency}",
        "max_queue = 256",
        "timeout = 600",
        f"answer_cache = {'true' if redis_url else 'false'}",
    ]
    if "llm" in pipelines:
        lines += ["[pipelines.llm]", f"scorer = {judge}"]
    if "hybrid" in pipelines:
        lines += ["[pipelines.hybrid]", 'reranker = "hybrid"']
    if redis_url:
        lines += ["[cache]", f'url = "{redis_url}"']
    return "\n".join(lines) + "\n"


def zipf_stream(distinct: int, requests: int, exponent: float, seed: int = 0) -> list[int]:
    """``requests`` query indices, index ``i`` drawn with probability ~ 1 / (i + 1)^s."""
    weights = [1.0 / (rank + 1) ** exponent for rank in range(distinct)]
    return random.Random(seed).choices(range(distinct), weights=weights, k=requests)


def answer_sizes(url: str, redis_url: str, pipeline: str, query: str, texts: list[str]) -> list:
    """What one answer takes in Redis: for each (documents, return_documents) of
    :data:`PROBES`, ``query`` asked once through ``url`` with the first of ``texts``; the new
    answer key's ``MEMORY USAGE`` (bytes, key and overhead included) and the body's length."""
    import redis

    client = redis.Redis.from_url(redis_url)
    out = []
    for n, with_texts in PROBES:
        before = set(client.scan_iter(match="rerankit:answer:*", count=1000))
        ask = {"model": pipeline, "query": query, "documents": texts[:n]}
        r = httpx.post(
            url + "/v2/rerank", json={**ask, "return_documents": with_texts}, timeout=600
        )
        r.raise_for_status()
        deadline, new = time.monotonic() + 10, set()
        while not new and time.monotonic() < deadline:
            new = set(client.scan_iter(match="rerankit:answer:*", count=1000)) - before
        (key,) = new
        out.append((n, with_texts, client.memory_usage(key, samples=0), len(r.content)))
    return out


async def send(urls: list[str], model: str, work: list, concurrency: int, out: dict) -> None:
    """Each (query, texts) of ``work``, ``concurrency`` at a time, the n-th request to
    ``urls[n % 2]``; latencies (seconds) and cache sources are added to ``out``."""
    items = iter(enumerate(work))

    async def client(http: httpx.AsyncClient) -> None:
        for n, (query, texts) in items:
            begin = time.perf_counter()
            r = await http.post(
                urls[n % len(urls)] + "/v2/rerank",
                json={"model": model, "query": query, "documents": texts},
            )
            r.raise_for_status()
            out["latency"].append(time.perf_counter() - begin)
            out["source"].append(r.headers.get("x-rerankit-cache", "off"))

    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200, help="distinct queries")
    parser.add_argument("--requests", type=int, default=600, help="requests per pipeline")
    parser.add_argument("--zipf", type=float, default=1.0, help="the Zipf exponent")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per LLM call")
    parser.add_argument("--candidates", type=int, default=20, help="documents per request")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pipelines", default="llm", help="llm, hybrid or both")
    args = parser.parse_args()
    from rerankit.llm.testing import FakeLLMServer, Reply

    for name in ("RERANKIT_CACHE_URL", "RERANKIT_EMBEDDING_CACHE"):  # each setup says its own
        os.environ.pop(name, None)
    full = load_queries("scifact", args.queries)  # each query's BM25 top 100
    pairs = [(q, texts[: args.candidates]) for q, texts in full]
    stream = zipf_stream(len(pairs), args.requests, args.zipf)
    work = [pairs[i] for i in stream]
    pipelines = args.pipelines.split(",")
    if not pipelines or set(pipelines) - {"llm", "hybrid"}:
        parser.error("--pipelines: llm, hybrid or both, comma-separated")

    def judge(request):
        grade = len(request.prompt) % 11
        return Reply(text=json.dumps({"id": "0", "score": grade}), delay=args.latency)

    folder = Path(tempfile.mkdtemp(prefix="rerankit-replicas-"))
    procs: list[subprocess.Popen] = []
    with FakeLLMServer(responder=judge) as provider:
        try:
            redis, redis_url = start_redis(folder)
            procs.append(redis)
            urls: dict[str, list[str]] = {}
            for setup, model in zip(SETUPS, ("judge-own", "judge-shared"), strict=True):
                shared = redis_url if setup == "shared cache" else None
                toml = service_toml(provider.openai_url, model, shared, args.concurrency, pipelines)
                urls[setup] = []
                for replica in ("a", "b"):
                    env = {
                        "RERANKIT_CACHE_DIR": str(folder / model / replica),
                        "RERANKIT_BENCH_KEY": "k",
                    }
                    proc, url = start_rerankit(None, [], "replica", toml, env=env)
                    procs.append(proc)
                    urls[setup].append(url)
                print(f"  {setup}: replicas ready", file=sys.stderr, flush=True)
            results = {(p, s): {"latency": [], "source": []} for p in pipelines for s in SETUPS}
            models = ("judge-own", "judge-shared")
            warm = {m: sum(r.model == m for r in provider.requests) for m in models}  # warm-ups
            for pipeline in pipelines:
                for c, lo in enumerate(range(0, len(work), CHUNK)):
                    order = SETUPS if c % 2 == 0 else SETUPS[::-1]
                    for setup in order:
                        chunk = work[lo : lo + CHUNK]
                        out = results[pipeline, setup]
                        asyncio.run(send(urls[setup], pipeline, chunk, args.concurrency, out))
                print(f"  {pipeline}: done", file=sys.stderr, flush=True)
            calls = {m: sum(r.model == m for r in provider.requests) - warm[m] for m in models}
            memory = {kind: open_store(kind, url=redis_url).info() for kind in KINDS}
            query, texts = full[0][0] + " (answer size)", full[0][1]
            sizes = answer_sizes(urls["shared cache"][0], redis_url, pipelines[0], query, texts)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
                proc.wait(30)
            shutil.rmtree(folder, ignore_errors=True)
    distinct = len(set(stream))
    print(
        f"\n{args.requests} requests per pipeline over two replicas, {len(pairs)} distinct "
        f"SciFact queries drawn Zipf(s={args.zipf:g}) ({distinct} of them asked), "
        f"{args.candidates} candidates each, concurrency {args.concurrency}, LLM latency "
        f"{1000 * args.latency:.0f} ms per call; setups interleaved in chunks of {CHUNK}\n"
    )
    print("| pipeline | setup | answer hit rate | LLM calls | p50 ms | p99 ms |")
    print("|---|---|---:|---:|---:|---:|")
    for pipeline in pipelines:
        for setup, model in zip(SETUPS, ("judge-own", "judge-shared"), strict=True):
            out = results[pipeline, setup]
            served = sum(s in ("hit", "shared") for s in out["source"]) / len(out["source"])
            rate = f"{100 * served:.0f} %" if setup == "shared cache" else "(off)"
            llm = str(calls[model]) if pipeline == "llm" else ""
            p50, p99 = (1000 * float(np.percentile(out["latency"], q)) for q in (50, 99))
            print(f"| {pipeline} | {setup} | {rate} | {llm} | {p50:.0f} | {p99:.0f} |")
    if "llm" in pipelines:
        saved = calls["judge-own"] - calls["judge-shared"]
        print(
            f"\nLLM calls saved by the shared cache: {saved} of {calls['judge-own']} "
            f"({100 * saved / max(1, calls['judge-own']):.0f} %)"
        )
    print("\nWhat the shared setup's Redis held at the end (MEMORY USAGE of a sample of keys):\n")
    print("| cache | entries | bytes | bytes per entry |")
    print("|---|---:|---:|---:|")
    for kind, info in memory.items():
        each = f"{info.bytes / info.entries:.0f}" if info.entries else ""
        print(f"| {kind} | {info.entries} | {info.bytes} | {each} |")
    print(f"\nOne answer of the {pipelines[0]} pipeline in Redis (MEMORY USAGE of its key):\n")
    print("| documents | return_documents | bytes in Redis | body bytes |")
    print("|---:|---|---:|---:|")
    for n, with_texts, used, body in sizes:
        print(f"| {n} | {str(with_texts).lower()} | {used} | {body} |")
    print()
    for pipeline in pipelines:
        own = statistics.median(results[pipeline, "own caches"]["latency"])
        shared = statistics.median(results[pipeline, "shared cache"]["latency"])
        print(f"{pipeline}: p50 without the shared cache / with it: {own / shared:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
