"""Memory and CPU of ``rerankit serve``: resident memory (RSS) idle once ready, and after a
load, for the torch-free install (``[onnx,server]``) and the full one (torch).

    python -m benchmarks.speed.service_memory --torch-free-python .venv-serve/bin/python

Each install serves the built-in pipelines (``bm25``, ``embedding``, ``hybrid``: the bundled
MiniLM, on ONNX Runtime where it is the default, on torch with ``--backend torch``). Once
``/ready`` is 200, RSS is read from ``/proc``; then ``--clients`` clients send ``--requests``
``hybrid`` requests of ``--documents`` documents of ``--words`` words each (distinct texts,
so nothing is cached), and RSS, peak RSS and the CPU seconds the process used are read
again, then RSS once more ``--settle`` seconds after the load (is the memory given back?).
Prints a Markdown table (Linux only: it reads ``/proc/PID``). A heavier load, as an
on-call reader's 8 clients x 100-300 SciFact abstracts (the timeout raised so that slow
requests are answered, not 504)::

    python -m benchmarks.speed.service_memory --torch-free-python .venv-serve/bin/python \
        --no-torch --clients 4 --requests 8 --documents 300 --words 150 --timeout 600
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

WORDS = (
    "solar wind power grid battery storage panel energy cost price market policy rate bank "
    "loan credit city transit rail bus road traffic health vaccine trial patient drug dose "
    "school teacher exam student climate carbon forest river flood rain heat crop farm"
).split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid: int) -> dict[str, float]:
    """RSS and peak RSS (MiB), and CPU seconds (user + system) of process ``pid``."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    fields["cpu"] = (int(stat[11]) + int(stat[12])) / ticks
    return fields


def post(port: int, body: dict) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v2/rerank",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=900) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:  # a 504 under load is counted, not fatal
        return exc.code


def measure(python: str, flags: list[str], args: argparse.Namespace) -> dict[str, float]:
    port = free_port()
    if args.timeout:  # a settings file of its own: [server] timeout, the built-in pipelines
        settings = Path(tempfile.mkdtemp()) / "service.toml"
        timeout = f"timeout = {args.timeout}\ngraceful_timeout = {args.timeout}\n"
        settings.write_text(f"[server]\n{timeout}")
        flags = [*flags, "--settings", str(settings)]
    proc = subprocess.Popen(
        [python, "-m", "rerankit", "serve", "--port", str(port), "--log-level", "warning", *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(3000):
            if proc.poll() is not None:
                raise RuntimeError(f"rerankit serve exited: {proc.stderr.read().decode()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.1)
        time.sleep(1.0)
        idle = proc_status(proc.pid)
        rng = random.Random(0)

        def one(i: int) -> int:
            k = args.words
            docs = [" ".join(rng.choices(WORDS, k=k)) + f" {i}-{j}" for j in range(args.documents)]
            return post(
                port, {"model": "hybrid", "query": f"solar energy cost {i}", "documents": docs}
            )

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            codes = list(pool.map(one, range(args.requests)))
        wall = time.monotonic() - started
        loaded = proc_status(proc.pid)
        time.sleep(args.settle)
        settled = proc_status(proc.pid)
        return {
            "answered": sum(code == 200 for code in codes),
            "idle": idle["VmRSS"],
            "after": loaded["VmRSS"],
            "peak": loaded["VmHWM"],
            "settled": settled["VmRSS"],
            "cores": (loaded["cpu"] - idle["cpu"]) / wall,
            "wall": wall,
        }
    finally:
        proc.terminate()
        proc.wait(60)


#: run by the torch-free python: RSS of one ONNX Runtime session of the exported MiniLM
#: (enable_cpu_mem_arena on, off) over inner batches of the largest shape the service runs
#: (32 texts, as the ONNX backend batches them, x 256 tokens), then smaller ones, then idle
ARENA_SCRIPT = """
import json, sys, time, numpy as np, onnxruntime as ort
from pathlib import Path
folder, arena = Path(sys.argv[1]), sys.argv[2] == "on"
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
options = ort.SessionOptions()
options.enable_cpu_mem_arena = arena
options.inter_op_num_threads = 1
cpu = ["CPUExecutionProvider"]
session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=cpu)
said = {"start": rss()}
def run(batch, length):
    ids = np.random.default_rng(0).integers(1000, 20000, (batch, length), dtype=np.int64)
    ones, zeros = np.ones_like(ids), np.zeros_like(ids)
    feed = {"input_ids": ids, "attention_mask": ones, "token_type_ids": zeros}
    session.run(None, feed)
for _ in range(3):
    run(32, 256)
said["after 32x256"] = rss()
for batch, length in ((8, 200), (32, 120), (16, 256)):
    run(batch, length)
said["after smaller"] = rss()
time.sleep(5)
said["idle 5 s"] = rss()
print(json.dumps(said))
"""


def arena(python: str) -> None:
    """RSS of one ONNX Runtime session with its CPU memory arena on and off."""
    code = "from rerankit.backends.export import *; print(export_folder("
    code += "'sentence-transformers/all-MiniLM-L6-v2', kind='embedding', max_length=None))"
    folder = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    print(
        "| enable_cpu_mem_arena | start MiB | after 3 batches of 32 x 256 tokens | after "
        "smaller batches | idle 5 s |\n|---|---:|---:|---:|---:|"
    )
    for on in ("on", "off"):
        out = subprocess.run(
            [python, "-c", ARENA_SCRIPT, folder.stdout.strip(), on],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        said = json.loads(out)
        print(f"| {on} | " + " | ".join(f"{v:.0f}" for v in said.values()) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-free-python", help="python of an install without torch")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--words", type=int, default=40, help="words per document")
    parser.add_argument("--timeout", type=float, help="[server] timeout (default: serve's)")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds idle after load")
    parser.add_argument("--no-torch", action="store_true", help="skip the full install")
    parser.add_argument("--arena", action="store_true", help="only the ONNX session's arena")
    args = parser.parse_args()
    if args.arena:
        arena(args.torch_free_python or sys.executable)
        return
    installs = []
    if args.torch_free_python:
        installs.append(("torch-free, ONNX Runtime", args.torch_free_python, []))
    if not args.no_torch:
        installs.append(("full, torch", sys.executable, ["--backend", "torch"]))
    print(
        f"{args.requests} hybrid requests of {args.documents} documents of {args.words} words, "
        f"{args.clients} clients; {os.cpu_count()} cores"
    )
    print(
        "| install | RSS idle MiB | RSS after load MiB | peak RSS MiB | RSS settled MiB "
        "| CPU cores busy | load s | 200s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, python, flags in installs:
        m = measure(python, flags, args)
        print(
            f"| {label} | {m['idle']:.0f} | {m['after']:.0f} | {m['peak']:.0f} | "
            f"{m['settled']:.0f} | "
            f"{m['cores']:.2f} | {m['wall']:.1f} | {m['answered']}/{args.requests} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
