"""Start-up: seconds from a fresh process to its first answer, for the default pipeline
(``hybrid``: the bundled all-MiniLM-L6-v2 and BM25 readings) on its default backend
(``auto``: ONNX Runtime, float32), on torch (``--backend torch``) and on ONNX Runtime with
int8 weights (``--quantize int8``), beside FlashRank's one-shot rerank where it is installed.

Each case is a fresh process; every round runs every case once, in a shuffled order (the
machine is shared), and the tables give the median of ``--rounds`` rounds:

* ``rank``: ``rerankit rank --query Q --input examples/sample.jsonl --format table``, what
  ``make demo`` runs (12 documents);
* ``python``: ``python -c "import rerankit; rerankit.rerank(Q, docs)"`` on the same 12
  documents;
* ``service``: ``rerankit serve`` started, then ``POST /v1/rerank`` (the same query and
  documents) sent every 20 ms until one is answered 200: seconds from the start to that
  answer (needs the ``server`` extra);
* ``help`` and ``version``: ``rerankit --help`` and ``rerankit --version``, which load no
  model (nor the library's heavy parts: the command line's parsers import none of them);
* ``flashrank``: ``Ranker(...).rerank(RerankRequest(Q, passages))`` in a fresh process of
  ``--peer-python`` (``make .venv-peers``: FlashRank 0.2.10), with a model of its default's
  shape (ms-marco-TinyBERT-L-2-v2: BERT, 2 layers of 128) built here with random weights and
  exported by rerankit in float32: FlashRank downloads its model file, which cannot be done
  offline (the shape, not the weights, sets the time).

A warm-up round runs first and is not counted: the bundled model's export is made, the
word-frequency table kept, and every file is in the operating system's cache (the "second
call"). Then one more process per backend reports where its time goes: Python and
rerankit's imports, the model runtime's imports (onnxruntime and tokenizers, or torch and
sentence-transformers), loading the model, the word-frequency table, and the first rerank
(encoding the 12 documents; BM25); "interpreter" is the rest of the process's wall time
(starting Python, exiting). The load average is printed before and after: quote it beside
the figures.

Run: ``python -m benchmarks.speed.start [--rounds 5] [--python PATH] [--peer-python PATH]``
(``--python``: the interpreter of the environment measured, default this one; ``--skip``
service,flashrank to leave cases out; ``--only help,version`` to run those cases alone, with
no breakdown; ``--src PATH``, repeated, to time each case once per source tree, in the same
shuffled rounds: the code before a change beside the code after, e.g. ``--only help
--src ../main/src --src src``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import ROOT, open_service
from benchmarks.speed.models import build, peer_folder
from rerankit.backends.export import export
from rerankit.backends.local import quiet_loading

SAMPLE = ROOT / "examples" / "sample.jsonl"
QUERY = "how do vaccines train the immune system"
DOCS = [json.loads(line) for line in SAMPLE.open(encoding="utf-8")]
TEXTS = [f"{d['title']}\n{d['text']}" for d in DOCS]
#: the backends measured: (label, rank/serve flags, the hybrid's options in Python)
#: the cases ``--only`` and ``--skip`` name
CASES = ("rank", "python", "service", "flashrank", "help", "version")
BACKENDS = {
    "default (ONNX float32)": ([], {}),
    "torch": (["--backend", "torch"], {"backend": "torch"}),
    "ONNX int8": (["--quantize", "int8"], {"quantize": "int8"}),
}

PYTHON_ONE_SHOT = """
import json, sys
import rerankit
docs = json.loads(sys.argv[1])
options = json.loads(sys.argv[2])
reranker = {"reranker": {"type": "hybrid", **options}} if options else None
result = rerankit.rerank(sys.argv[3], docs, reranker=reranker)
assert len(result) == len(docs)
"""

FLASHRANK_ONE_SHOT = """
import json, sys
from flashrank import Ranker, RerankRequest
ranker = Ranker(model_name="ms-marco-TinyBERT-L-2-v2", cache_dir=sys.argv[1], log_level="ERROR")
passages = [{"id": i, "text": t} for i, t in enumerate(json.loads(sys.argv[2]))]
assert len(ranker.rerank(RerankRequest(query=sys.argv[3], passages=passages))) == len(passages)
"""

BREAKDOWN = """
import json, sys, time
start = time.perf_counter()
laps = {}
def lap(name, since=[start]):
    now = time.perf_counter()
    laps[name] = now - since[0]
    since[0] = now
import rerankit.cli.main  # what `rerankit rank` imports
from rerankit.api import load
lap("imports: Python and rerankit")
options = json.loads(sys.argv[1])
reranker = load({"reranker": {"type": "hybrid", **options}})
if reranker.embedding.backend == "onnx":
    import onnxruntime, tokenizers
else:
    import sentence_transformers, torch
lap("imports: the model runtime")
reranker.embedding.model  # loads it (ONNX Runtime session and tokenizer, or torch)
lap("loading the model")
from rerankit.text.language import BackgroundFrequencies
BackgroundFrequencies("en").table()
lap("word frequencies")
reranker.rerank(sys.argv[2], json.loads(sys.argv[3]))
lap("first rerank (12 documents)")
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers",
               "sentence_transformers", "wordfreq"})
print(json.dumps({"laps": laps, "inside": time.perf_counter() - start, "heavy": heavy}))
"""


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of ``cmd`` (a fresh process) to its exit; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ...: exit {done.returncode}\n{done.stderr}")
    return took


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service(python: str, flags: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``rerankit serve`` to its first 200 on ``/v1/rerank``."""
    port = free_port()
    body = json.dumps({"query": QUERY, "documents": TEXTS}).encode()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "rerankit", "serve", "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=open_service(env),
    )
    try:
        while time.perf_counter() - start < 300:
            if proc.poll() is not None:
                raise RuntimeError(f"rerankit serve exited: {proc.stderr.read().decode()}")
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/rerank",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    if answer.status == 200:
                        return time.perf_counter() - start
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.02)
        raise RuntimeError("rerankit serve did not answer within 300 s")
    finally:
        proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
        proc.wait(timeout=60)


def flashrank_cache(work: Path) -> Path:
    """A FlashRank cache folder holding a model of its default's shape under its name."""
    onnx = work / "tinybert-l2-onnx"
    with quiet_loading(warnings=False):  # no progress bars from transformers
        model = build("tinybert-l2", work / "tinybert-l2", [])
        if not (onnx / "model.onnx").is_file():
            export(str(model), onnx, kind="cross_encoder")
    cache = work / "flashrank"
    peer_folder(
        model,
        onnx / "model.onnx",
        cache / "ms-marco-TinyBERT-L-2-v2",
        "flashrank-TinyBERT-L-2-v2.onnx",
    )
    return cache


def has_module(python: str, module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


#: the cases that load no model: (case, the rerankit arguments)
NO_MODEL = {"help": ["--help"], "version": ["--version"]}


def cases(
    args: argparse.Namespace, env: dict[str, str], work: Path
) -> dict[str, Callable[[], float]]:
    py = args.python
    docs = json.dumps(DOCS)
    out: dict[str, Callable[[], float]] = {}
    for case, argv in NO_MODEL.items():
        if case in args.cases:
            out[f"{case} | no model"] = lambda cmd=[py, "-m", "rerankit", *argv]: run(cmd, env)
    if not {"rank", "python", "service", "flashrank"} & args.cases:
        return out
    for label, (flags, options) in BACKENDS.items():
        rank = [py, "-m", "rerankit", "rank", "--query", QUERY, "--input", str(SAMPLE)]
        rank += ["--format", "table", *flags]
        one_shot = [py, "-c", PYTHON_ONE_SHOT, docs, json.dumps(options), QUERY]
        if "rank" in args.cases:
            out[f"rank | {label}"] = lambda cmd=rank: run(cmd, env)
        if "python" in args.cases:
            out[f"python | {label}"] = lambda cmd=one_shot: run(cmd, env)
        if "service" in args.cases:
            out[f"service | {label}"] = lambda f=flags: service(py, f, env)
    if "flashrank" not in args.cases:
        return out
    peer = args.peer_python
    if not (peer and Path(peer).exists() and has_module(peer, "flashrank")):
        print(f"flashrank: skipped, not installed in {peer} (make .venv-peers)", file=sys.stderr)
        return out
    cache = flashrank_cache(work)
    one_shot = [peer, "-c", FLASHRANK_ONE_SHOT, str(cache), json.dumps(TEXTS), QUERY]
    out["flashrank | TinyBERT-L-2 shape, float32"] = lambda: run(one_shot, env)
    return out


def breakdown(python: str, env: dict[str, str]) -> None:
    print("\nWhere a one-shot rerank's time goes (one fresh process each, seconds):\n")
    rows: dict[str, dict[str, float]] = {}
    heavy: dict[str, list[str]] = {}
    for label, (_, options) in BACKENDS.items():
        if options.get("quantize"):
            continue
        cmd = [python, "-c", BREAKDOWN, json.dumps(options), QUERY, json.dumps(DOCS)]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        found = json.loads(done.stdout)
        rows[label] = {**found["laps"], "interpreter start and exit": wall - found["inside"]}
        rows[label]["total (wall)"] = wall
        heavy[label] = found["heavy"]
    labels = list(rows)
    print("| part | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for part in rows[labels[0]]:
        print(f"| {part} | " + " | ".join(f"{rows[lb][part]:.2f}" for lb in labels) + " |")
    for label in labels:
        print(f"\n{label}: heavy modules imported: {', '.join(heavy[label]) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="the environment measured")
    parser.add_argument(
        "--peer-python", default=str(ROOT / ".venv-peers" / "bin" / "python"), help="FlashRank's"
    )
    parser.add_argument("--skip", default="", help="comma-separated: service, flashrank")
    parser.add_argument(
        "--only", default="", help=f"comma-separated: run these cases alone ({', '.join(CASES)})"
    )
    parser.add_argument(
        "--src",
        action="append",
        default=None,
        metavar="PATH",
        help="the source tree measured (PYTHONPATH; default this checkout's src); repeated: "
        "each case once per tree, in the same rounds",
    )
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if only - set(CASES):
        parser.error(f"--only: unknown cases {sorted(only - set(CASES))}: {', '.join(CASES)}")
    args.cases = (only or set(CASES)) - skip
    if "service" in args.cases and not has_module(args.python, "fastapi"):
        print("service: skipped, the server extra is not installed", file=sys.stderr)
        args.cases.discard("service")
    sources = [Path(s).resolve() for s in args.src or [ROOT / "src"]]
    print(f"load average before: {load_average()} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        variants: dict[str, Callable[[], float]] = {}
        for src in sources:
            env = {**os.environ, "PYTHONPATH": str(src)}
            env.pop("RERANKIT_EMBEDDING_CACHE", None)  # no vectors from an earlier run
            shown = f" ({src})" if len(sources) > 1 else ""
            for name, fn in cases(args, env, Path(tmp)).items():
                variants[name + shown] = fn
        for fn in variants.values():  # warm-up: exports, word table, the OS file cache
            fn()
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        rng = random.Random(0)
        for r in range(args.rounds):
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                seconds[name].append(variants[name]())
            print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"load average after: {load_average()}\n")
    print(f"Seconds to the first answer, median of {args.rounds} rounds (fresh processes):\n")
    print("| case | backend | median s | min s | torch / this |")
    print("|---|---|---:|---:|---:|")
    for name, values in seconds.items():
        case, label = name.split(" | ")
        _, _, src = label.partition(" (")  # the source tree, when there are several
        torch = seconds.get(f"{case} | torch" + (f" ({src}" if src else ""))
        ratio = statistics.median(torch) / statistics.median(values) if torch else None
        shown = f"{ratio:.1f}x" if ratio else ""
        print(
            f"| {case} | {label} | {statistics.median(values):.2f} | {min(values):.2f} | {shown} |"
        )
    if {"rank", "python"} & args.cases:
        breakdown(args.python, env)


if __name__ == "__main__":
    main()
