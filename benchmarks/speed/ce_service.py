"""A cross-encoder behind HTTP: rerankit's service beside Infinity's /rerank on the same model
folder, and beside the library call it wraps.

    python -m benchmarks.speed.ce_service --infinity /path/to/venv/bin/infinity_emb
        [--requests 24] [--shape minilm]

The model has ms-marco-MiniLM-L6-v2's shape (random weights; see models.py). Each request
reranks one TREC DL19 query's BM25 top 100 (queries taken in turn, so nothing repeats
within a level). The services run side by side on loopback (``rerankit serve -r
cross_encoder --model FOLDER`` on torch, and with ``--backend onnx --quantize int8``;
``infinity_emb v2 --engine torch`` on the same folder, batch size 32 for all) and the levels
alternate between them: concurrency 1 (p50) and concurrency 8 (requests/s). The library
row is ``CrossEncoderScorer.score_texts`` in this process on the same requests as the
service on the same backend at concurrency 1, run right after them. Infinity is optional:
without ``--infinity`` only rerankit is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import load_queries, open_service
from benchmarks.speed.models import build


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"{what} did not become ready")


SERVER = "[server]\nmax_concurrency = 8\nmax_queue = 64\ntimeout = 300\n"


def service_log(name: str) -> Any:
    """Where a service's log goes: a file in $RERANKIT_BENCH_LOGS when set, else nowhere."""
    folder = os.environ.get("RERANKIT_BENCH_LOGS")
    if not folder:
        return subprocess.DEVNULL
    Path(folder).mkdir(parents=True, exist_ok=True)
    return open(Path(folder) / f"serve-{name}-{time.time_ns()}.log", "w")


def start_rerankit(
    folder: Path | None,
    extra: list[str],
    reranker: str = "cross_encoder",
    server: str = SERVER,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen, str]:
    """``rerankit serve -r RERANKER --model FOLDER`` on a free port with ``server`` as its
    settings (``[server]``, and ``[pipelines.NAME]`` when ``folder`` is None: then no
    ``-r``), once /ready answers; ``env``: variables set for it beside this process's."""
    port = free_port()
    config = Path(tempfile.mkdtemp()) / "service.toml"
    config.write_text(server)
    chosen = ["-r", reranker, "--model", str(folder)] if folder is not None else []
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "rerankit", "serve", "--settings", str(config)),
            *chosen,
            *("--port", str(port), *extra),
        ],
        stdout=subprocess.DEVNULL,
        stderr=service_log(reranker),
        env={**open_service(os.environ), **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/ready", proc, "rerankit serve")
    return proc, url


def start_infinity(binary: str, folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            *(binary, "v2", "--model-id", str(folder), "--engine", "torch", "--device", "cpu"),
            *("--batch-size", "32", "--port", str(port), "--no-model-warmup"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"},
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/health", proc, "infinity_emb")
    return proc, url


async def drive(
    kind: str, url: str, folder: Path, work: list, concurrency: int, pipeline: str = "cross_encoder"
) -> dict:
    """Every request of ``work`` once, ``concurrency`` at a time (rerankit's ``pipeline``)."""
    latencies: list[float] = []
    inference: list[float] = []  # rerankit's own account (x-inference-time), seconds
    queue = iter(work)
    path = "/rerank" if kind == "infinity" else "/v1/rerank"
    model = str(folder) if kind == "infinity" else pipeline

    async def client(http: httpx.AsyncClient) -> None:
        for query, texts in queue:
            start = time.perf_counter()
            r = await http.post(
                url + path,
                json={"model": model, "query": query, "documents": texts, "top_n": len(texts)},
            )
            r.raise_for_status()
            assert len(r.json()["results"]) == len(texts)
            latencies.append(time.perf_counter() - start)
            if "x-inference-time" in r.headers:
                inference.append(float(r.headers["x-inference-time"]) / 1000)

    begin = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
    wall = time.perf_counter() - begin
    return {
        "rps": len(work) / wall,
        "p50": statistics.median(latencies),
        "p95": sorted(latencies)[max(0, round(0.95 * len(latencies)) - 1)],
        "inference_p50": statistics.median(inference) if inference else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infinity", help="the infinity_emb command (its own venv)")
    parser.add_argument("--requests", type=int, default=24, help="per level and service")
    parser.add_argument("--shape", default="minilm")
    args = parser.parse_args()
    from rerankit.backends.onnx import export
    from rerankit.scorers import CrossEncoderScorer

    work_dir = Path(tempfile.mkdtemp(prefix="rerankit-ce-service-"))
    pairs = load_queries("dl19", 43)
    folder = build(args.shape, work_dir / args.shape, [t for _, ts in pairs for t in ts[:20]])
    onnx = export(str(folder), work_dir / "onnx", kind="cross_encoder", quantize="int8")
    services: dict[str, tuple[str, subprocess.Popen, str, Path]] = {}
    libraries = {
        "torch": CrossEncoderScorer(str(folder), device="cpu"),
        "ONNX int8": CrossEncoderScorer(str(onnx), backend="onnx", quantize="int8"),
    }
    try:
        proc, url = start_rerankit(folder, ["--backend", "torch"])
        services["rerankit serve, torch"] = ("rerankit", proc, url, folder)
        proc, url = start_rerankit(onnx, ["--backend", "onnx", "--quantize", "int8"])
        services["rerankit serve, ONNX int8"] = ("rerankit", proc, url, onnx)
        if args.infinity:
            proc, url = start_infinity(args.infinity, folder)
            services["Infinity v2, torch"] = ("infinity", proc, url, folder)
        for kind, _, url, where in services.values():  # warm up
            asyncio.run(drive(kind, url, where, pairs[:2], 1))
        for scorer in libraries.values():
            scorer.score_texts(*pairs[0])
        results: dict[tuple[str, int], dict] = {}
        library: dict[str, list[float]] = {n: [] for n in libraries}
        offset = 0
        for level in (1, 8):
            for name, (kind, _, url, where) in services.items():
                batch = [pairs[(offset + i) % len(pairs)] for i in range(args.requests)]
                offset += args.requests
                results[name, level] = asyncio.run(drive(kind, url, where, batch, level))
                print(f"  {name} c={level} done", file=sys.stderr, flush=True)
                if level > 1:
                    continue
                for lib_name, scorer in libraries.items():  # the same requests, in-process
                    if not name.endswith(lib_name):
                        continue
                    for query, texts in batch:
                        start = time.perf_counter()
                        scorer.score_texts(query, texts)
                        library[lib_name].append(time.perf_counter() - start)
    finally:
        for _, proc, _, _ in services.values():
            proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
            proc.wait(30)
    print(
        f"\n{args.shape} shape cross-encoder, one DL19 query x its BM25 top 100 per request, "
        f"{args.requests} requests per level; services side by side, levels alternating\n"
    )
    print("| | c=1 p50 ms | c=1 inference p50 ms | c=1 req/s | c=8 req/s | c=8 docs/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in services:
        one, eight = results[name, 1], results[name, 8]
        print(
            f"| {name} | {1e3 * one['p50']:.0f} | {1e3 * one['inference_p50']:.0f} | "
            f"{one['rps']:.2f} | {eight['rps']:.2f} | {100 * eight['rps']:.0f} |"
        )
    for lib_name, took in library.items():
        p50 = statistics.median(took)
        print(f"| library CrossEncoderScorer, {lib_name} | {1e3 * p50:.0f} | | {1 / p50:.2f} | | |")
    for lib_name, backend in (("torch", "torch"), ("ONNX int8", "ONNX int8")):
        service = results[f"rerankit serve, {backend}", 1]["p50"]
        print(
            f"\nservice p50 at c=1 / library p50, {lib_name}: "
            f"{service / statistics.median(library[lib_name]):.2f}"
        )
    if args.infinity:
        for backend in ("torch", "ONNX int8"):
            ratio = (
                results[f"rerankit serve, {backend}", 8]["rps"]
                / results["Infinity v2, torch", 8]["rps"]
            )
            print(f"rerankit serve ({backend}) / Infinity (torch), req/s at c=8: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
