"""rerankit embedded in a FastAPI app's own process (no ``rerankit serve``), as docs/api.md's
"In your own FastAPI app" writes it.

``abandoned``: what a request waits behind the rerank of a client that left. The app (run
by uvicorn in a process of its own, the default ``hybrid`` loaded in its lifespan) has two
endpoints: ``/plain`` awaits ``arerank`` (Starlette does not cancel it when the client
leaves), ``/guarded`` goes through ``rerankit.integrations.fastapi.cancel_on_disconnect``.
The first 30 abstracts of ``examples/scifact-mini`` (new texts each time) are sent to the
end twice, the faster counted as the rerank's own time; then, ``--runs`` times per
endpoint, sent again and the connection closed after ``--abort-ms``, and at once a request
of two short new texts is sent: its wall time is what the abandoned work made it wait, plus
its own.

    python -m benchmarks.speed.in_process abandoned

``burst``: ``--requests`` reranks started at once in one event loop (the default
``hybrid``, its models loaded first), each of ``--documents`` new texts of 45 words, with
``deadline=2``: awaited as they come, then each behind an ``asyncio.Semaphore(2)`` taken
before the deadline starts (docs/api.md, "Many reranks at once"). Prints one rerank's time
alone and, for each way, how many finished, how many raised ``DeadlineError``, and the
slowest finished one's time.

    python -m benchmarks.speed.in_process burst

``start``: an app's start-up, each step timed in a fresh process: ``import rerankit``,
``rerankit.load("hybrid")``, ``load_models`` (the warm-up of the lifespan) and a first
rerank of two short texts, with an empty ``RERANKIT_CACHE_DIR`` (a new container: the
bundled model is exported to ONNX on first use, which needs torch) and then with that
cache populated (an image that carries the export); and ``rerankit export all-MiniLM-L6-v2``
alone, the step to make at build time instead.

    python -m benchmarks.speed.in_process start
"""

import argparse
import itertools
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

QUERY = "how do vaccines train the immune system"
ABSTRACTS = Path(__file__).resolve().parents[2] / "examples" / "scifact-mini" / "corpus.jsonl"


def serve(port: int) -> None:
    """The app, on 127.0.0.1:``port`` (the child process)."""
    import asyncio
    from contextlib import asynccontextmanager

    import uvicorn
    from fastapi import FastAPI, Request, Response

    import rerankit
    from rerankit.integrations.fastapi import ClientDisconnected, cancel_on_disconnect
    from rerankit.scorers.local import load_models

    state = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state["reranker"] = rerankit.load("hybrid")
        await asyncio.to_thread(load_models, state["reranker"])
        yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/ready")
    async def ready():
        return {"ok": True}

    @app.post("/plain")
    async def plain(body: dict):
        result = await state["reranker"].arerank(body["query"], body["documents"])
        return {"n": len(result)}

    @app.post("/guarded")
    async def guarded(body: dict, request: Request):
        work = state["reranker"].arerank(body["query"], body["documents"])
        try:
            result = await cancel_on_disconnect(request, work)
        except ClientDisconnected:
            return Response(status_code=499)
        return {"n": len(result)}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _body(docs: list[str]) -> bytes:
    return json.dumps({"query": QUERY, "documents": docs}).encode()


def ask(url: str, docs: list[str]) -> float:
    """Seconds of one request to the end."""
    start = time.monotonic()
    req = urllib.request.Request(url, _body(docs), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as answer:
        answer.read()
    return time.monotonic() - start


def abandon(port: int, path: str, docs: list[str], after: float) -> None:
    """Send a request of ``docs`` and close the connection ``after`` seconds later."""
    body = _body(docs)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(request)
        time.sleep(after)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def abandoned(args: argparse.Namespace) -> None:
    port = _free_port()
    child = subprocess.Popen([sys.executable, "-m", __spec__.name, "serve", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(1200):
            try:
                urllib.request.urlopen(f"{base}/ready", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        with ABSTRACTS.open(encoding="utf-8") as lines:
            abstracts = [json.loads(line)["text"] for line in itertools.islice(lines, 30)]
        stamp = time.time()  # new texts on every request: none is in the embedding cache

        def new(n: int) -> list[str]:
            return [f"{text} ({stamp} {n})" for text in abstracts]

        alone = min(ask(f"{base}/guarded", new(n)) for n in (-1, 0))  # (the first warms up)
        print(f"30 abstracts to the end: {alone:.2f} s")
        waits: dict[str, list[float]] = {"plain": [], "guarded": []}
        for run, path in itertools.product(range(1, args.runs + 1), waits):  # interleaved
            abandon(port, f"/{path}", new(f"{path}{run}"), args.abort_ms / 1000)
            waits[path].append(ask(f"{base}/{path}", [f"short {stamp} {path}{run}", "text"]))
            time.sleep(alone)  # whatever is left of the abandoned work ends first
        print("| endpoint | the next request's time s | / the 30 abstracts' own time |")
        print("|---|---|---:|")
        for path, times in waits.items():
            said = ", ".join(f"{t:.2f}" for t in times)
            print(f"| `/{path}` | {said} | {sorted(times)[len(times) // 2] / alone:.2f} |")
    finally:
        child.terminate()
        child.wait(30)


def burst(args: argparse.Namespace) -> None:
    import asyncio
    import random

    import rerankit
    from rerankit.errors import DeadlineError
    from rerankit.scorers.local import load_models

    words = (
        "solar wind power grid battery storage panel energy cost price market policy rate bank "
        "loan credit city transit rail bus road traffic health vaccine trial patient drug dose"
    ).split()
    rng = random.Random(0)
    reranker = rerankit.load("hybrid")
    load_models(reranker)

    def new() -> list[str]:
        return [" ".join(rng.choices(words, k=45)) for _ in range(args.documents)]

    async def one(query: str, slots: asyncio.Semaphore | None) -> float | None:
        start = time.monotonic()
        try:
            if slots is None:
                await reranker.arerank(query, new(), deadline=args.deadline)
            else:
                async with slots:
                    await reranker.arerank(query, new(), deadline=args.deadline)
        except DeadlineError:
            return None
        return time.monotonic() - start

    async def run() -> None:
        alone = []
        for n in range(2):  # (the first warms up)
            start = time.monotonic()
            await reranker.arerank(f"solar power {n}", new())
            alone.append(time.monotonic() - start)
        print(f"one rerank of {args.documents} new texts alone: {alone[-1]:.2f} s")
        print("| reranks started at once | finished | DeadlineError | slowest finished s |")
        print("|---|---:|---:|---:|")
        for label, slots in (("plain", None), ("Semaphore(2)", asyncio.Semaphore(2))):
            times = await asyncio.gather(
                *(one(f"solar power {label} {i}", slots) for i in range(args.requests))
            )
            done = [t for t in times if t is not None]
            slowest = f"{max(done):.2f}" if done else "-"
            print(f"| {label} | {len(done)} | {len(times) - len(done)} | {slowest} |")

    asyncio.run(run())


#: what ``start`` runs in a fresh process: each step's seconds, as JSON
_START = """
import json, time
t = time.perf_counter()
import rerankit
from rerankit.scorers.local import load_models
steps = {"import rerankit": time.perf_counter() - t}
t = time.perf_counter()
reranker = rerankit.load("hybrid")
steps["load('hybrid')"] = time.perf_counter() - t
steps["load_models"] = load_models(reranker)
t = time.perf_counter()
reranker.rerank("solar power", ["solar power plants", "wind farms at sea"])
steps["first rerank"] = time.perf_counter() - t
print(json.dumps(steps))
"""


def start(args: argparse.Namespace) -> None:
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "RERANKIT_CACHE_DIR": cache}
        rows = {}
        for case in ("empty cache", "populated cache"):
            done = subprocess.run(
                [sys.executable, "-c", _START], env=env, capture_output=True, text=True, check=True
            )
            rows[case] = json.loads(done.stdout.splitlines()[-1])
        with tempfile.TemporaryDirectory() as other:
            begin = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "rerankit", "export", "all-MiniLM-L6-v2"],
                env={**os.environ, "RERANKIT_CACHE_DIR": other},
                capture_output=True,
                check=True,
            )
            exported = time.monotonic() - begin
    print("| step | empty cache s | populated cache s |")
    print("|---|---:|---:|")
    for step in rows["empty cache"]:
        cold, warm = rows["empty cache"][step], rows["populated cache"][step]
        print(f"| {step} | {cold:.2f} | {warm:.2f} |")
    said = "`rerankit export all-MiniLM-L6-v2` (a fresh process, into an empty cache)"
    print(f"\n{said}: {exported:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("abandoned", help="the wait behind a client that left")
    one.add_argument("--abort-ms", type=float, default=300.0)
    one.add_argument("--runs", type=int, default=5)
    many = commands.add_parser("burst", help="reranks started at once, with a deadline")
    many.add_argument("--requests", type=int, default=20)
    many.add_argument("--documents", type=int, default=80)
    many.add_argument("--deadline", type=float, default=2.0)
    commands.add_parser("start", help="an app's start-up, empty and populated cache")
    child = commands.add_parser("serve", help="(the app's process)")
    child.add_argument("port", type=int)
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.port)
    elif args.command == "burst":
        burst(args)
    elif args.command == "start":
        start(args)
    else:
        abandoned(args)


if __name__ == "__main__":
    main()
