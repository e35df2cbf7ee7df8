"""Cross-encoder, causal-LM and service speed on a CUDA GPU, on models with the exact shapes
users bring (random weights; see models.py):

    python -m benchmarks.speed.gpu [--parts library,causal,service,overhead,embedding-service,batch,
        attention] [--queries 12] [--rounds 3] [--requests 96] [--repeats 3]

- ``library``: each shape (ms-marco-MiniLM-L6-v2, bge-reranker-base) on DL19 passages and
  SciFact abstracts, each query's first-stage top 100: sentence-transformers'
  ``CrossEncoder.predict`` in float32 and float16 against rerankit's ``CrossEncoderScorer``
  in float32, float16 and its default on CUDA (bfloat16), all at batch 32 (both libraries'
  default on a GPU), interleaved query by query for several rounds; medians.
- ``causal``: the Qwen3 yes/no recipe in bfloat16: ``CausalLMScorer`` against the model
  card's own code on the same model (cross_encoder.py's ``causal_lm``).
- ``batch``: rerankit's cross-encoder with 32, 64, 128 and 256 pairs per forward pass,
  each shape on both query sets, interleaved; docs/s per round.
- ``attention``: the MiniLM shape on 30 requests it has not seen and then on the same 30
  again, with PyTorch's cuDNN attention allowed and left out (rerankit leaves it out on
  CUDA: it builds a plan for every new shape), each in fresh processes.
- ``service``: ``rerankit serve`` on the GPU, a cross-encoder pipeline (MiniLM shape,
  default dtype, 8 requests reranked at once) with the pairs of concurrent requests scored
  in shared forward passes (``batch_pairs = "on"``, what "auto" does on a GPU) and without
  (``"off"``), side by side, levels alternating: p50 at concurrency 1 against the library
  call on the same kind of requests, requests per second at concurrency 8 and 32 against
  the library called once after another.
- ``overhead``: where a served request's time goes, in one process without HTTP: the
  library call against the cross-encoder pipeline's ``arerank`` alone, with the count of
  its billed tokens beside it as the service runs it (by offsets, as before, and by
  lengths) and under the service's pairs hook, interleaved request by request; then 8
  requests at a time with the hook on and off, with and without the count.
- ``embedding-service``: an embedding pipeline (all-MiniLM-L6-v2's shape, no cache of
  document vectors) with the service's micro-batching on and off (``batching =
  true/false``, 32 requests reranked at once), side by side, levels alternating: p50 at
  concurrency 1, and requests per second and p50/p95 at concurrency 32.

Each request and query is one TREC DL19 query with its BM25 top 100. ONNX Runtime is not
measured here: its CUDA build is a separate package (``onnxruntime-gpu``), and rerankit's
ONNX backend runs on the CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from benchmarks.common import interleave, load_queries, table, timed
from benchmarks.speed.ce_service import SERVER, drive, start_rerankit
from benchmarks.speed.cross_encoder import causal_lm, st_predict
from benchmarks.speed.models import build, minilm_files

REFERENCE = "sentence-transformers CrossEncoder.predict, float32"


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name() if device == "cuda" else f"{device} (a dry run)"


def library(args: argparse.Namespace, work: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from rerankit.scorers import CrossEncoderScorer

    for shape in ("minilm", "bge-base"):
        for data_name in ("dl19", "scifact"):
            pairs = load_queries(data_name, args.queries)
            texts = [t for _, ts in load_queries(data_name, 200) for t in ts[:20]]
            folder = build(shape, work / shape, texts)
            variants = {}
            for label, dtype in (("float32", torch.float32), ("float16", torch.float16)):
                st = CrossEncoder(
                    str(folder), device=args.device, max_length=512, model_kwargs={"dtype": dtype}
                )
                variants[f"sentence-transformers CrossEncoder.predict, {label}"] = timed(
                    st_predict(st, 32)
                )
            for label, dtype in (
                ("float32", "float32"),
                ("float16", "float16"),
                ("default (bfloat16)", "auto"),
            ):
                scorer = CrossEncoderScorer(str(folder), device=args.device, dtype=dtype)
                variants[f"rerankit CrossEncoderScorer, {label}"] = timed(scorer.score_texts)
            print(f"{shape} on {data_name}...", file=sys.stderr, flush=True)
            rates, lats, last = interleave(variants, pairs, args.rounds)
            table(
                f"{shape} shape, {data_name}: {len(pairs)} queries x 100 candidates, "
                f"{args.rounds} interleaved rounds, batch 32, {device_name(args.device)}",
                rates,
                lats,
                REFERENCE,
            )
            for precision in ("float32", "float16"):
                ours = f"rerankit CrossEncoderScorer, {precision}"
                theirs = f"sentence-transformers CrossEncoder.predict, {precision}"
                gap = max(
                    float(np.max(np.abs(a - b)))
                    for a, b in zip(last[ours], last[theirs], strict=True)
                )
                ratio = statistics.median(rates[ours]) / statistics.median(rates[theirs])
                print(
                    f"rerankit / sentence-transformers, both {precision}: docs/s {ratio:.2f}x, "
                    f"max |logit gap| {gap:.1e}"
                )


def batch_sizes(args: argparse.Namespace, work: Path) -> None:
    """rerankit's cross-encoder at its default dtype with 32 to 256 pairs per forward pass,
    interleaved query by query; round 1 meets every padded shape for the first time."""
    from rerankit.scorers import CrossEncoderScorer

    sizes = (32, 64, 128, 256)
    for shape in ("minilm", "bge-base"):
        for data_name in ("dl19", "scifact"):
            pairs = load_queries(data_name, args.queries)
            texts = [t for _, ts in load_queries(data_name, 200) for t in ts[:20]]
            folder = build(shape, work / shape, texts)
            variants = {
                f"batch {size}": timed(
                    CrossEncoderScorer(str(folder), device=args.device, batch_size=size).score_texts
                )
                for size in sizes
            }
            rates, lats, _ = interleave(variants, pairs, args.rounds)
            print(
                f"\n{shape} shape, {data_name}: {len(pairs)} queries x 100 candidates, default "
                f"dtype, {device_name(args.device)}; docs/s per round (round 1: new shapes)\n"
            )
            heads = " | ".join(f"round {r + 1}" for r in range(args.rounds))
            print(f"| pairs per pass | {heads} | p50 ms |")
            print("|---|" + "---:|" * (args.rounds + 1))
            for name in variants:
                p50 = 1000 * statistics.median(lats[name])
                rounds = " | ".join(f"{rate:.0f}" for rate in rates[name])
                print(f"| {name} | {rounds} | {p50:.1f} |")


def attention(args: argparse.Namespace, work: Path) -> None:
    """The MiniLM-shaped cross-encoder on 30 DL19 requests it has not seen, then on the same
    30 again, with cuDNN's attention allowed (torch's own choice, rerankit before) and left
    out (rerankit now), each in fresh processes, alternating twice."""
    pairs = load_queries("dl19", 43)
    build("minilm", work / "minilm", [t for _, ts in pairs for t in ts[:20]])
    print(f"\ncuDNN attention, MiniLM shape, {device_name(args.device)}: ms per request\n")
    print("| cuDNN attention | new shapes p50 | p90 | same requests again p50 | p90 |")
    print("|---|---:|---:|---:|---:|")
    for case in ("allowed", "left out") * 2:
        command = [
            sys.executable,
            "-m",
            __spec__.name,
            "--attention-case",
            case,
            "--work",
            str(work),
        ]
        run = subprocess.run([*command, "--device", args.device], capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(run.stderr[-2000:])
        print(run.stdout.strip().splitlines()[-1])


def attention_case(args: argparse.Namespace) -> None:
    import contextlib

    import rerankit.scorers.cross_encoder as ce
    from rerankit.scorers import CrossEncoderScorer

    if args.attention_case == "allowed":
        ce.attention_kernels = lambda device: contextlib.nullcontext()
    pairs = load_queries("dl19", 43)
    scorer = CrossEncoderScorer(str(args.work / "minilm"), device=args.device, batch_size=32)
    for query, docs in pairs[:3]:
        scorer.score_texts(query, docs)
    cells = []
    for _ in range(2):
        took = sorted(timed(scorer.score_texts)(q, d)[1] for q, d in pairs[3:33])
        cells += [f"{1e3 * statistics.median(took):.1f}", f"{1e3 * took[26]:.1f}"]
    print(f"| {args.attention_case} | {' | '.join(cells)} |")


def embedding_folder(work: Path) -> Path:
    """A sentence-transformers folder with all-MiniLM-L6-v2's shape, tokenizer and pooling,
    and random weights (the bundled model's files, its weights drawn afresh; see
    ``ce_models.minilm_files``)."""
    import torch
    from transformers import BertConfig, BertModel

    folder = work / "minilm-embedding"
    if (folder / "config.json").is_file():
        return folder
    source = minilm_files()
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    torch.manual_seed(0)
    BertModel(BertConfig.from_pretrained(str(source))).eval().save_pretrained(folder)
    return folder


def cycling(requests: list) -> Callable[[int], list]:
    """``next_batch(n)``: the next ``n`` of ``requests``, round and round."""
    stream = itertools.cycle(requests)
    return lambda n: list(itertools.islice(stream, n))


def _rounds(args, urls: dict[str, str], folder: Path, pipeline: str, levels, next_batch):
    """Every level for every service, services alternating, ``args.repeats`` times."""
    results: dict[tuple[str, int], list[dict]] = {}
    for _ in range(args.repeats):
        for level in levels:
            for label, url in urls.items():
                work_ = next_batch(args.requests if level > 1 else args.requests // 2)
                result = asyncio.run(drive("rerankit", url, folder, work_, level, pipeline))
                results.setdefault((label, level), []).append(result)
    return results


def _median(results: dict, label: str, level: int, key: str) -> float:
    return statistics.median(r[key] for r in results[label, level])


def service(args: argparse.Namespace, work: Path) -> None:
    """The cross-encoder pipeline served with the pairs of concurrent requests scored in
    shared forward passes (``batch_pairs = "on"``; "auto" does so on a GPU) and without
    (``"off"``: each request's pairs tokenised and scored on the model thread alone), side
    by side, beside the library call on the same requests."""
    from rerankit.scorers import CrossEncoderScorer

    pairs = load_queries("dl19", 43)
    cross = build("minilm", work / "minilm", [t for _, ts in pairs for t in ts[:20]])
    next_batch = cycling(pairs)

    procs, urls = [], {}
    try:
        for mode in ("on", "off"):
            proc, url = start_rerankit(cross, [], server=f'{SERVER}batch_pairs = "{mode}"\n')
            procs.append(proc)
            urls[mode] = url
            asyncio.run(drive("rerankit", url, cross, pairs[:4], 4))
        scorer = CrossEncoderScorer(str(cross), device=args.device)
        for query, docs in pairs[:4]:
            scorer.score_texts(query, docs)

        # the same 8 requests at once to each: the scores served with and without shared
        # passes (the pipeline's relevance_score, the same mapping of the logits in both)
        def served(url: str, query: str, docs: list[str]) -> np.ndarray:
            body = {"model": "cross_encoder", "query": query, "documents": docs}
            got = httpx.post(f"{url}/v1/rerank", json=body, timeout=60).json()["results"]
            values = np.empty(len(docs))
            values[[r["index"] for r in got]] = [r["relevance_score"] for r in got]
            return values

        answers = {}
        for mode, url in urls.items():
            with ThreadPoolExecutor(8) as pool:
                answers[mode] = list(pool.map(lambda p, u=url: served(u, *p), pairs[:8]))
        gap = max(float(np.abs(a - b).max()) for a, b in zip(*answers.values(), strict=True))
        took = []
        for query, docs in next_batch(args.requests):
            took.append(timed(scorer.score_texts)(query, docs)[1])
        results = _rounds(args, urls, cross, "cross_encoder", (1, 8, 32), next_batch)
        print(
            f"\ncross-encoder pipeline (MiniLM shape, {scorer.profile.resolve_dtype()}), "
            f"{device_name(args.device)}: one DL19 query x its BM25 top 100 per request, "
            f"max_concurrency 8; medians of {args.repeats} alternating repeats\n"
        )
        print(
            "| batch_pairs | c=1 p50 ms | c=1 inference p50 ms | c=8 req/s | c=32 req/s "
            "| c=32 p50 ms | c=32 p95 ms |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for mode in urls:
            print(
                f"| {mode} | {1e3 * _median(results, mode, 1, 'p50'):.1f} | "
                f"{1e3 * _median(results, mode, 1, 'inference_p50'):.1f} | "
                f"{_median(results, mode, 8, 'rps'):.1f} | {_median(results, mode, 32, 'rps'):.1f} "
                f"| {1e3 * _median(results, mode, 32, 'p50'):.0f} "
                f"| {1e3 * _median(results, mode, 32, 'p95'):.0f} |"
            )
        library = statistics.median(took)
        print(
            f"| library CrossEncoderScorer.score_texts, one call after another | "
            f"{1e3 * library:.1f} | | {len(took) / sum(took):.1f} | | | |"
        )
        for level in (8, 32):
            on, off = (_median(results, m, level, "rps") for m in ("on", "off"))
            print(f"\nreq/s at c={level}, batch_pairs on / off: {on / off:.2f}x", end="")
        counted = {}  # the service's own histogram of pairs per forward batch
        for line in httpx.get(f"{urls['on']}/metrics", timeout=30).text.splitlines():
            if line.startswith(
                ("rerankit_pair_batch_pairs_sum", "rerankit_pair_batch_pairs_count")
            ):
                counted[line.split()[0].rsplit("_", 1)[1]] = float(line.split()[-1])
        if counted.get("count"):
            print(
                f"\nbatch_pairs on: {counted['count']:.0f} batches, "
                f"{counted['sum'] / counted['count']:.0f} pairs each on average",
                end="",
            )
        print(f"\nlargest score gap on / off, 8 requests at once: {gap:.2g}", end="")
        ratios = (_median(results, m, 1, "p50") / library for m in ("on", "off"))
        print("\nservice p50 at c=1 / library p50: on {:.2f}, off {:.2f}".format(*ratios))
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
            proc.wait(30)


def overhead(args: argparse.Namespace, work: Path) -> None:
    """Where a served request's time goes, in one process without HTTP: the library call,
    the cross-encoder pipeline's ``arerank`` alone, with the count of its billed tokens
    beside it as the service runs it (by token offsets, as before, and by token lengths)
    and under the service's pairs hook; then 8 requests at a time, pairs hook on and off,
    with and without the count. Each request one DL19 query and its top 100."""
    import threading

    from rerankit import load
    from rerankit.scorers import CrossEncoderScorer
    from rerankit.server.batching import MicroBatching, request_hooks
    from rerankit.server.tokens import tokens_of

    pairs = load_queries("dl19", args.queries)
    cross = build("minilm", work / "minilm", [t for _, ts in pairs for t in ts[:20]])
    scorer = CrossEncoderScorer(str(cross), device=args.device)
    pipeline = load({"scorer": {"type": "cross_encoder", "model": str(cross)}})
    loop = asyncio.new_event_loop()

    tokens = tokens_of(pipeline)
    counts = {"": None, "lengths": tokens.count, "offsets": tokens.spans}

    async def served(query, docs, batching=None, count=""):
        with request_hooks(batching, threading.Event()):
            task = asyncio.ensure_future(pipeline.arerank(query, docs))
        if counts[count] is not None:  # the bill's count, beside the scoring as served
            await asyncio.gather(task, asyncio.to_thread(counts[count], [query, *docs]))
        return await task

    on = MicroBatching(pairs="on")
    variants = {
        "library CrossEncoderScorer.score_texts": lambda q, d: scorer.score_texts(q, d),
        "pipeline arerank": lambda q, d: loop.run_until_complete(served(q, d)),
        "pipeline arerank + bill counted by offsets beside (before)": lambda q, d: (
            loop.run_until_complete(served(q, d, count="offsets"))
        ),
        "pipeline arerank + bill counted by lengths beside (now)": lambda q, d: (
            loop.run_until_complete(served(q, d, count="lengths"))
        ),
        "pipeline arerank, pairs hook on": lambda q, d: loop.run_until_complete(served(q, d, on)),
    }
    for fn in variants.values():  # warm up
        for query, docs in pairs[:3]:
            fn(query, docs)
    took: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for query, docs in pairs:
            for name, fn in variants.items():
                begin = time.perf_counter()
                fn(query, docs)
                took[name].append(time.perf_counter() - begin)

    async def burst(batching, count):
        begin = time.perf_counter()
        work_ = [pairs[i % len(pairs)] for i in range(args.requests)]
        for start in range(0, len(work_), 8):
            await asyncio.gather(
                *(served(q, d, batching, count) for q, d in work_[start : start + 8])
            )
        return len(work_) / (time.perf_counter() - begin)

    rates: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for label, batching, count in (
            ("hook on", on, ""),
            ("hook off", None, ""),
            ("hook on + bill by lengths (now)", on, "lengths"),
            ("hook off + bill by lengths", None, "lengths"),
            ("hook off + bill by offsets (before)", None, "offsets"),
        ):
            rates.setdefault(label, []).append(loop.run_until_complete(burst(batching, count)))
    print(
        f"\nin one process, MiniLM shape ({scorer.profile.resolve_dtype()}), "
        f"{device_name(args.device)}: ms per request, medians over {args.rounds} rounds of "
        f"{len(pairs)} requests, variants interleaved\n"
    )
    print("| | p50 ms | p90 ms |")
    print("|---|---:|---:|")
    for name, values in took.items():
        p50, p90 = statistics.median(values), sorted(values)[int(0.9 * len(values))]
        print(f"| {name} | {1e3 * p50:.1f} | {1e3 * p90:.1f} |")
    print("\n8 requests at a time through the pipeline, req/s (median of rounds):")
    for label, values in rates.items():
        print(f"- {label}: {statistics.median(values):.1f}")
    loop.close()


def embedding_service(args: argparse.Namespace, work: Path) -> None:
    """The embedding pipeline with the service's micro-batching on and off, side by side,
    each service's cache of document vectors off (with it, the 43 requests coming round
    again would be queries only)."""
    pairs = load_queries("dl19", 43)
    embed = embedding_folder(work)
    next_batch = cycling(pairs)

    procs, urls = [], {}
    settings = "[server]\nmax_concurrency = 32\nmax_queue = 256\ntimeout = 300\n"
    # no cache of document vectors: the requests come round every 43, and with the cache
    # every pass after the first would encode the queries only
    scorer = f'{{ type = "embedding", model = "{embed}", cache = false }}'
    pipeline = f"[pipelines.embedding]\nscorer = {scorer}\n"
    try:
        for label, on in (("on", "true"), ("off", "false")):
            proc, url = start_rerankit(None, [], server=f"{settings}batching = {on}\n{pipeline}")
            procs.append(proc)
            urls[label] = url
            asyncio.run(drive("rerankit", url, embed, pairs[:4], 4, pipeline="embedding"))
        results = _rounds(args, urls, embed, "embedding", (1, 32), next_batch)
        print(
            f"\nembedding pipeline (all-MiniLM-L6-v2's shape), {device_name(args.device)}, "
            f"32 requests reranked at once; medians of {args.repeats} alternating repeats\n"
        )
        print("| micro-batching | c=1 p50 ms | c=32 req/s | c=32 p50 ms | c=32 p95 ms |")
        print("|---|---:|---:|---:|---:|")
        for label in urls:
            print(
                f"| {label} | {1e3 * _median(results, label, 1, 'p50'):.1f} | "
                f"{_median(results, label, 32, 'rps'):.1f} | "
                f"{1e3 * _median(results, label, 32, 'p50'):.0f} | "
                f"{1e3 * _median(results, label, 32, 'p95'):.0f} |"
            )
        gain = _median(results, "on", 32, "rps") / _median(results, "off", 32, "rps")
        print(f"\nmicro-batching on / off, req/s at c=32: {gain:.2f}x")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="library,causal,service,embedding-service")
    parser.add_argument("--queries", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=96, help="per level of the service")
    parser.add_argument("--repeats", type=int, default=3, help="of the service levels")
    parser.add_argument("--work", type=Path, help="keep the built models here (reused)")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script")
    parser.add_argument("--attention-case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attention_case:  # one process of the attention part
        attention_case(args)
        return 0
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: this benchmark measures rerankit on a GPU", file=sys.stderr)
        return 2
    import sentence_transformers
    import transformers

    print(
        f"{device_name(args.device)}; torch {torch.__version__}, transformers "
        f"{transformers.__version__}, sentence-transformers {sentence_transformers.__version__}"
    )
    work = args.work or Path(tempfile.mkdtemp(prefix="rerankit-gpu-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for part in args.parts.split(","):
        begin = time.perf_counter()
        try:
            if part == "causal":
                args.batch_size = None
                causal_lm(args, work, device=args.device, dtype="bfloat16")
            else:
                parts = {
                    "library": library,
                    "service": service,
                    "embedding-service": embedding_service,
                    "overhead": overhead,
                    "batch": batch_sizes,
                    "attention": attention,
                }
                parts[part](args, work)
        except Exception:  # one part failing should not lose the others' figures
            failed += 1
            traceback.print_exc()
        print(f"[{part}: {time.perf_counter() - begin:.0f} s]", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
