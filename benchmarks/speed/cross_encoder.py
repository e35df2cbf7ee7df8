"""Cross-encoder and causal-LM reranking speed beside the libraries users would pick instead,
on models with the exact shapes users bring (random weights: speed depends on shape, not
values; see models.py).

    python -m benchmarks.speed.cross_encoder [--shapes minilm,bge-base] [--data dl19,scifact]
        [--queries 4] [--rounds 2] [--peer-python .venv-peers/bin/python] [--causal-lm]

Each query reranks its first-stage top 100: TREC DL19's BM25 run (short web passages) or,
for SciFact (abstracts, longer), BM25 over the corpus for the training queries. Variants run
interleaved, query by query in a shuffled order, for several rounds (the machine is shared
and noisy); each variant's rate is the median over rounds. Variants on the same model
folder: sentence-transformers' ``CrossEncoder.predict`` (the reference), rerankit's
``CrossEncoderScorer`` on torch and on ONNX Runtime (float32 and int8, exported with
``rerankit export --kind cross-encoder``), and, given ``--peer-python`` (a virtual
environment with fastembed and FlashRank: ``make .venv-peers``), fastembed's
``TextCrossEncoder`` on the same float32 and int8 files and FlashRank's ``Ranker`` on the
int8 file. Peers run in a worker process and time their own calls. ``--causal-lm`` adds
the Qwen3 yes/no recipe: ``CausalLMScorer`` against the recipe's own code (a direct
transformers forward pass, as the model card writes it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import COLLECTIONS, interleave, load_queries, table, timed
from benchmarks.speed.models import build, distilled_minilm, peer_folder, trained_minilm

REFERENCE = "sentence-transformers CrossEncoder.predict"


class Peer:
    """A worker process in the peers' virtual environment (see peer_worker.py)."""

    def __init__(self, python: str) -> None:
        worker = Path(__file__).resolve().parent / "peer_worker.py"
        self.process = subprocess.Popen(
            [python, str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, request: dict) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer worker exited ({self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"peer {request.get('name')}: {answer['error']}")
        return answer

    def scorer(self, name: str) -> Callable[[str, list[str]], tuple[np.ndarray, float]]:
        def score(query: str, texts: list[str]) -> tuple[np.ndarray, float]:
            answer = self.ask({"op": "score", "name": name, "query": query, "texts": texts})
            return np.asarray(answer["scores"], dtype=np.float64), answer["seconds"]

        return score


def order_kept(a_runs: list, b_runs: list) -> str:
    from scipy.stats import kendalltau

    taus = [float(kendalltau(a, b).statistic) for a, b in zip(a_runs, b_runs, strict=True)]
    top = np.mean([int(np.argmax(a) == np.argmax(b)) for a, b in zip(a_runs, b_runs, strict=True)])
    return (
        f"Kendall tau min {min(taus):.3f} median {statistics.median(taus):.3f}, same top "
        f"document on {100 * top:.0f}% of queries"
    )


def near_ties(a_runs: list, b_runs: list) -> str:
    """How far int8's logits move from float32's, and how close float32's top two were on
    the queries whose top document changed (a gap below the logits' noise is a tie)."""
    moved = np.mean([np.abs(a - b).mean() for a, b in zip(a_runs, b_runs, strict=True)])
    gaps = [float(np.diff(np.sort(a)[-2:])[0]) for a in a_runs]
    changed = [
        g for g, a, b in zip(gaps, a_runs, b_runs, strict=True) if np.argmax(a) != np.argmax(b)
    ]
    where = ", ".join(f"{g:.4f}" for g in sorted(changed)) or "none"
    return (
        f"mean |logit change| {moved:.4f}; float32's top-two gap median "
        f"{statistics.median(gaps):.4f}, on the queries whose top changed: {where}"
    )


def st_predict(st: Any, batch_size: int) -> Callable[[str, list[str]], np.ndarray]:
    """sentence-transformers' ``CrossEncoder.predict`` on one query's candidates (logits)."""
    import torch

    def predict(query: str, texts: list[str]) -> np.ndarray:
        return st.predict(
            [(query, t) for t in texts],
            batch_size=batch_size,
            show_progress_bar=False,
            activation_fn=torch.nn.Identity(),
        )

    return predict


def cross_encoders(args: argparse.Namespace, work: Path, peer: Peer | None) -> None:
    from sentence_transformers import CrossEncoder

    from rerankit.backends.onnx import export
    from rerankit.scorers import CrossEncoderScorer

    for shape in args.shapes.split(","):
        for data_name in args.data.split(","):
            pairs = load_queries(data_name, args.queries)
            texts = [t for _, ts in load_queries(data_name, 200) for t in ts[:20]]
            folder = build(shape, work / shape, texts)
            onnx = export(
                str(folder), work / f"{shape}-onnx", kind="cross_encoder", quantize="int8"
            )
            bs = args.batch_size  # None: each library's own default
            st = CrossEncoder(str(folder), device="cpu", max_length=512)
            variants: dict[str, Callable] = {REFERENCE: timed(st_predict(st, bs or 32))}
            if bs is None:  # the same batch as rerankit's CPU default: the wrapper's own cost
                variants[f"{REFERENCE}, batch 8"] = timed(st_predict(st, 8))
            for label, model, options in (
                ("torch", str(folder), {"device": "cpu"}),
                ("ONNX fp32", str(onnx), {"backend": "onnx"}),
                ("ONNX int8", str(onnx), {"backend": "onnx", "quantize": "int8"}),
            ):
                scorer = CrossEncoderScorer(model, batch_size=bs, **options)
                variants[f"rerankit CrossEncoderScorer, {label}"] = timed(scorer.score_texts)
            if peer is not None:
                for library, flavour, file in (
                    ("fastembed", "fp32", "model.onnx"),
                    ("fastembed", "int8", "model.int8.onnx"),
                    ("flashrank", "int8", "model.int8.onnx"),
                ):
                    name = f"{shape}-{data_name}-{library}-{flavour}"
                    if library == "flashrank":  # its catalogue's name and file name
                        target = work / "flashrank" / name / "ms-marco-MiniLM-L-12-v2"
                        where = peer_folder(
                            folder, onnx / file, target, "flashrank-MiniLM-L-12-v2_Q.onnx"
                        )
                    else:
                        where = peer_folder(folder, onnx / file, work / "peers" / name)
                    peer.ask(
                        {
                            "op": "load",
                            "name": name,
                            "library": library,
                            "folder": str(where),
                            "threads": 2,
                            "batch_size": bs or 64,  # fastembed's default
                        }
                    )
                    label = "TextCrossEncoder" if library == "fastembed" else "Ranker (one batch)"
                    variants[f"{library} {label}, ONNX {flavour}"] = peer.scorer(name)
            print(f"{shape} on {data_name}...", file=sys.stderr, flush=True)
            rates, lats, last = interleave(variants, pairs, args.rounds)
            tokens = np.mean([len(st.tokenizer(q, t)["input_ids"]) for q, ts in pairs for t in ts])
            table(
                f"{shape} shape, {data_name}: {len(pairs)} queries x 100 candidates "
                f"(mean {tokens:.0f} tokens a pair), {args.rounds} interleaved rounds, "
                f"batch {bs or 'each library default'}, 2 threads",
                rates,
                lats,
                REFERENCE,
            )
            gap = max(
                float(np.max(np.abs(a - b)))
                for a, b in zip(
                    last[REFERENCE], last["rerankit CrossEncoderScorer, torch"], strict=True
                )
            )
            print(
                f"\nrerankit torch against sentence-transformers: max |logit difference| {gap:.1e}"
            )
            print(
                "ONNX int8 against fp32 (random weights; see the docs on trained weights): "
                + order_kept(
                    last["rerankit CrossEncoderScorer, ONNX fp32"],
                    last["rerankit CrossEncoderScorer, ONNX int8"],
                )
            )


def trained_order(args: argparse.Namespace, work: Path) -> None:
    """Whether int8 keeps the order of a trained cross-encoder (random weights cannot say),
    for the export's int8 (activations smoothed, then one scale per token), for smoothed
    int8 with ONNX Runtime's one scale per tensor, and for plain dynamic int8, and what each
    costs in speed (interleaved rounds on the first queries)."""
    from rerankit.backends.onnx import export
    from rerankit.scorers import CrossEncoderScorer

    how = {"labels": trained_minilm, "distilled": distilled_minilm}.get(args.order_model)
    if how is None:  # a trained cross-encoder: a local folder or a Hugging Face hub id
        folder: Any = args.order_model
        name = "".join(c if c.isalnum() else "-" for c in args.order_model).strip("-")
        described = f"cross-encoder {args.order_model}"
    else:
        name = f"minilm-{args.order_model}"
        described = f"MiniLM cross-encoder trained on {args.order_model}"
        print(f"training a {described}...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        folder = how(work / name)
        print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    start = time.perf_counter()
    onnx = export(str(folder), work / f"{name}-onnx", kind="cross_encoder", quantize="int8")
    print(f"  export with int8: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    others = {  # the same float32 export, other int8 files
        "int8 smoothed, one scale per tensor": {"per_token": False},
        "int8 plain (neither)": {"per_token": False, "smooth_alpha": None},
    }
    folders = {"int8 (rerankit export: smoothed, one scale per token)": onnx}
    for label, options in others.items():
        slug = "-".join(f"{k}-{v}" for k, v in options.items()).replace("_", "-")
        out = work / f"{name}-onnx-{slug}"
        folders[label] = export(str(folder), out, kind="cross_encoder", quantize="int8", **options)
    fp32 = CrossEncoderScorer(str(onnx), backend="onnx")
    int8s = {
        label: CrossEncoderScorer(str(path), backend="onnx", quantize="int8")
        for label, path in folders.items()
    }
    torch_ = CrossEncoderScorer(str(folder), device="cpu")
    if args.no_vnni:  # the same files as CPUs without VNNI compute them
        from benchmarks.speed.no_vnni import emulate

        for label, path in list(folders.items()):
            emulated = work / f"{Path(path).name}-no-vnni"
            count = emulate(Path(path), emulated)
            print(f"{label}: {count} weight pairs can overflow 16 bits", file=sys.stderr)
            int8s[f"{label}, on a CPU without VNNI (emulated)"] = CrossEncoderScorer(
                str(emulated), backend="onnx", quantize="int8"
            )
    for data_name in args.data.split(","):
        pairs = load_queries(data_name, args.order_queries)
        a = [fp32.score_texts(q, ts) for q, ts in pairs]
        c = [torch_.score_texts(q, ts) for q, ts in pairs]
        spread = statistics.median(float(np.std(x)) for x in a)
        print(
            f"\n{described}, {data_name}, "
            f"{len(pairs)} queries x 100 "
            f"(median logit spread within a query {spread:.2f}); ONNX float32 against torch: "
            f"{order_kept(c, a)}"
        )
        for name, scorer in int8s.items():
            b = [scorer.score_texts(q, ts) for q, ts in pairs]
            print(f"- {name} against float32: {order_kept(a, b)}; {near_ties(a, b)}")
        variants = {"ONNX float32": timed(fp32.score_texts)}
        variants.update({n: timed(s.score_texts) for n, s in int8s.items() if "emulated" not in n})
        speed = pairs[: args.queries]
        rates, lats, _ = interleave(variants, speed, args.rounds)
        table(
            f"speed, {data_name}, {len(speed)} queries x 100, {args.rounds} rounds",
            rates,
            lats,
            "ONNX float32",
        )


def batch_sizes(args: argparse.Namespace, work: Path) -> None:
    """rerankit's scorer at several batch sizes, interleaved (what the default rests on)."""
    from rerankit.backends.onnx import export
    from rerankit.scorers import CrossEncoderScorer

    sizes = [int(x) for x in args.sweep.split(",")]
    for shape in args.shapes.split(","):
        for data_name in args.data.split(","):
            pairs = load_queries(data_name, args.queries)
            texts = [t for _, ts in load_queries(data_name, 200) for t in ts[:20]]
            folder = build(shape, work / shape, texts)
            onnx = export(
                str(folder), work / f"{shape}-onnx", kind="cross_encoder", quantize="int8"
            )
            variants = {}
            for size in sizes:
                for label, model, options in (
                    ("torch", str(folder), {"device": "cpu"}),
                    ("ONNX int8", str(onnx), {"backend": "onnx", "quantize": "int8"}),
                ):
                    scorer = CrossEncoderScorer(model, batch_size=size, **options)
                    variants[f"{label}, batch {size}"] = timed(scorer.score_texts)
            print(f"{shape} on {data_name}, batch sizes...", file=sys.stderr, flush=True)
            rates, lats, _ = interleave(variants, pairs, args.rounds)
            table(
                f"{shape} shape, {data_name}: batch sizes, {len(pairs)} queries x 100, "
                f"{args.rounds} rounds",
                rates,
                lats,
                f"torch, batch {sizes[0]}",
            )


def causal_lm(
    args: argparse.Namespace, work: Path, device: str = "cpu", dtype: str = "float32"
) -> None:
    """The Qwen3 yes/no recipe: rerankit's ``CausalLMScorer`` against the model card's own
    code on the same model, device and dtype."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rerankit.scorers import CausalLMScorer
    from rerankit.scorers.causal_lm import (
        DEFAULT_INSTRUCTION,
        QWEN3_PREFIX,
        QWEN3_SUFFIX,
        format_pair,
    )

    pairs = load_queries("dl19", args.queries)
    texts = [t for _, ts in load_queries("dl19", 200) for t in ts[:20]]
    folder = build("qwen3", work / "qwen3", texts)
    bs = args.batch_size or (8 if device == "cpu" else 32)  # rerankit's default there
    tokenizer = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=getattr(torch, dtype))
    model = model.to(device).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    prefix = tokenizer.encode(QWEN3_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(QWEN3_SUFFIX, add_special_tokens=False)
    max_length = 8192

    def recipe(query: str, docs: list[str]) -> list[float]:
        """The model card's code: tokenise, add template, pad, full forward, last logits."""
        out: list[float] = []
        for lo in range(0, len(docs), bs):
            chunk = [format_pair(DEFAULT_INSTRUCTION, query, d) for d in docs[lo : lo + bs]]
            inputs = tokenizer(
                chunk,
                padding=False,
                truncation="longest_first",
                return_attention_mask=False,
                max_length=max_length - len(prefix) - len(suffix),
            )
            inputs["input_ids"] = [prefix + ids + suffix for ids in inputs["input_ids"]]
            inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt").to(device)
            with torch.no_grad():
                logits = model(**inputs).logits[:, -1, :]
                pair = torch.stack([logits[:, no], logits[:, yes]], dim=1)
                out += torch.nn.functional.log_softmax(pair, dim=1)[:, 1].exp().tolist()
        return out

    scorer = CausalLMScorer(str(folder), device=device, dtype=dtype, batch_size=bs)
    variants = {
        "Qwen3-Reranker recipe, direct transformers forward": timed(recipe),
        "rerankit CausalLMScorer": timed(scorer.score_texts),
    }
    print("qwen3 on dl19...", file=sys.stderr, flush=True)
    rates, lats, last = interleave(variants, pairs, args.rounds)
    table(
        f"Qwen3-Reranker-0.6B's layer shape, 4 of 28 layers; dl19: {len(pairs)} queries x 100 "
        f"candidates, {args.rounds} interleaved rounds, batch {bs}, {device} {dtype}",
        rates,
        lats,
        "Qwen3-Reranker recipe, direct transformers forward",
    )
    gap = max(
        float(np.max(np.abs(a - b))) for a, b in zip(*(last[n] for n in variants), strict=True)
    )
    print(f"\nrerankit against the recipe: max |P(yes) difference| {gap:.1e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="minilm,bge-base")
    parser.add_argument("--data", default="dl19,scifact")
    parser.add_argument("--queries", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--batch-size",
        type=int,
        help="for every variant (default: each library's own: sentence-transformers 32, "
        "fastembed 64, FlashRank all candidates in one batch, rerankit chosen for the device)",
    )
    parser.add_argument("--peer-python", help="python of a venv with fastembed and flashrank")
    parser.add_argument("--causal-lm", action="store_true", help="add the Qwen3 recipe")
    parser.add_argument("--no-cross-encoders", action="store_true")
    parser.add_argument(
        "--trained-order",
        action="store_true",
        help="instead: train a small MiniLM cross-encoder and check int8 keeps its order",
    )
    parser.add_argument("--order-queries", type=int, default=43)
    parser.add_argument(
        "--order-model",
        default="labels",
        help="the trained model: 'labels' (a MiniLM trained here on SciFact's judged labels, "
        "minutes), 'distilled' (one distilled here from the default pipeline's graded "
        "scores, about half an hour), or a cross-encoder you have: a local folder or a hub "
        "id such as cross-encoder/ms-marco-MiniLM-L6-v2",
    )
    parser.add_argument(
        "--no-vnni",
        action="store_true",
        help="with --trained-order: also each int8 file as x86 CPUs without VNNI compute it "
        "(16-bit saturation emulated; see no_vnni.py)",
    )
    parser.add_argument("--sweep", help="instead: rerankit at these batch sizes (8,16,32,64)")
    parser.add_argument("--work", type=Path, help="keep the built models here (reused)")
    args = parser.parse_args()
    for name in args.data.split(","):
        if not (COLLECTIONS[name][0] / "corpus.jsonl").is_file():
            print(f"no {name} folder at {COLLECTIONS[name][0]}", file=sys.stderr)
            return 2
    import torch

    torch.set_num_threads(2)
    work = args.work or Path(tempfile.mkdtemp(prefix="rerankit-ce-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    peer = Peer(args.peer_python) if args.peer_python else None
    if args.trained_order:
        trained_order(args, work)
        return 0
    if args.sweep:
        batch_sizes(args, work)
        return 0
    if not args.no_cross_encoders:
        cross_encoders(args, work, peer)
    if args.causal_lm:
        causal_lm(args, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
