"""EmbeddingScorer overhead and cache speed-up, on the bundled all-MiniLM-L6-v2.

From one run, on the same 1,000 documents (the first 1,000 TREC DL19 passages when
``../shared/data`` is present, else generated sentences):

* raw ``SentenceTransformer.encode`` of the documents and the query, with the scorer's
  batch size, against a rerank by ``EmbeddingScorer`` with a fresh (empty) cache, so it
  encodes everything too; rounds are interleaved and the medians compared (target: at most
  5% overhead);
* the same rerank repeated with the cache warm (target: at least 20x faster than the first).

Then the backends, interleaved round by round on 1,000 DL19 passages and 500 SciFact
abstracts (title + text): documents per second of torch float32 (sentence-transformers),
ONNX Runtime float32 and ONNX Runtime int8 (the bundled model exported once into the cache
directory), their ratios to torch, and each ONNX backend's cosine to torch's embeddings
(minimum and mean over the documents).

Run: ``python -m benchmarks.speed.embedding [--rounds 3] [--only-backends]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.common import BEIR, DL19
from rerankit.cache import EmbeddingCache
from rerankit.scorers import EmbeddingScorer

SCIFACT = BEIR / "scifact"
QUERY = "how do vaccines train the immune system"


def documents(n: int) -> tuple[str, list[str]]:
    path = DL19 / "corpus.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as f:
            docs = [json.loads(line)["text"] for _, line in zip(range(n), f, strict=False)]
        return "DL19 passages", docs
    rng = np.random.default_rng(0)
    words = "immune vaccine cell virus market energy light river city model data".split()
    return "generated", [" ".join(rng.choice(words, size=60)) for _ in range(n)]


def abstracts(n: int) -> tuple[str, list[str]] | None:
    path = SCIFACT / "corpus.jsonl"
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(n), f, strict=False)]
    return "SciFact abstracts", [f"{r.get('title', '')} {r['text']}".strip() for r in rows]


def backends(rounds: int, batch_size: int, no_vnni: bool = False) -> None:
    """docs/s of torch fp32, ONNX fp32 and ONNX int8, interleaved; cosine to torch; with
    ``no_vnni``, also the int8 file as CPUs without VNNI compute it (cosine only)."""
    variants = {
        "torch float32": EmbeddingScorer(batch_size=batch_size, cache=False),
        "ONNX float32": EmbeddingScorer(batch_size=batch_size, cache=False, backend="onnx"),
        "ONNX int8": EmbeddingScorer(
            batch_size=batch_size, cache=False, backend="onnx", quantize="int8"
        ),
    }
    models = {name: scorer.model for name, scorer in variants.items()}  # load (export) first
    emulated = {}
    if no_vnni:
        import tempfile

        from benchmarks.speed.no_vnni import emulate
        from rerankit.backends.onnx import OnnxModel

        folder = Path(tempfile.mkdtemp(prefix="rerankit-no-vnni-")) / "int8"
        pairs = emulate(models["ONNX int8"].path, folder)
        print(f"int8 weight pairs that can overflow 16 bits without VNNI: {pairs}")
        emulated["ONNX int8, without VNNI (emulated)"] = OnnxModel(folder, quantize="int8")
    sets = [documents(1000), abstracts(500)]
    print("\nbackends (documents/s, medians of interleaved rounds; cosine to torch's vectors):\n")
    print("| documents | backend | docs/s | vs torch | min cosine | mean cosine |")
    print("|---|---|---:|---:|---:|---:|")
    for found in sets:
        if found is None:
            continue
        source, docs = found
        for model in models.values():
            model.encode(docs[:32], batch_size=batch_size)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in models}
        vectors = {}
        for _ in range(rounds):
            for name, model in models.items():
                start = time.perf_counter()
                vectors[name] = np.asarray(model.encode(docs, batch_size=batch_size))
                times[name].append(time.perf_counter() - start)
        for name, model in emulated.items():  # no speed: the emulation is slow
            vectors[name] = np.asarray(model.encode(docs, batch_size=batch_size))
        reference = vectors["torch float32"]
        torch_rate = len(docs) / statistics.median(times["torch float32"])
        for name in [*models, *emulated]:
            rate = len(docs) / statistics.median(times[name]) if name in times else float("nan")
            cosine = (vectors[name] * reference).sum(axis=1) / (
                np.linalg.norm(vectors[name], axis=1) * np.linalg.norm(reference, axis=1)
            )
            print(
                f"| {len(docs)} {source} | {name} | {rate:.1f} | {rate / torch_rate:.2f}x | "
                f"{cosine.min():.4f} | {cosine.mean():.4f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--only-backends", action="store_true")
    parser.add_argument(
        "--no-vnni",
        action="store_true",
        help="with --only-backends: also the int8 file as x86 CPUs without VNNI compute it",
    )
    args = parser.parse_args()
    if args.only_backends:
        backends(args.rounds, args.batch_size, args.no_vnni)
        return

    source, docs = documents(args.docs)
    base = EmbeddingScorer(batch_size=args.batch_size)
    model = base.model
    model.encode(docs[:64], batch_size=args.batch_size)  # warm-up
    words = sum(len(d.split()) for d in docs) / len(docs)
    print(f"{len(docs)} {source}, {words:.0f} words each; batch size {args.batch_size}")

    raw_times, ours_times, warm_times = [], [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        model.encode([QUERY], batch_size=args.batch_size, show_progress_bar=False)
        model.encode(docs, batch_size=args.batch_size, show_progress_bar=False)
        raw_times.append(time.perf_counter() - start)

        scorer = EmbeddingScorer(model, batch_size=args.batch_size, cache=EmbeddingCache())
        start = time.perf_counter()
        first = scorer.score_texts(QUERY, docs)
        ours_times.append(time.perf_counter() - start)

        start = time.perf_counter()
        again = scorer.score_texts(QUERY, docs)
        warm_times.append(time.perf_counter() - start)
        np.testing.assert_allclose(again, first, atol=1e-6)

    raw, ours, warm = (statistics.median(t) for t in (raw_times, ours_times, warm_times))
    print(f"  raw SentenceTransformer.encode (query + docs)  {raw * 1e3:9.1f} ms")
    print(
        f"  EmbeddingScorer, empty cache                    {ours * 1e3:9.1f} ms"
        f"   overhead {100 * (ours / raw - 1):+.1f}%"
    )
    print(
        f"  EmbeddingScorer, repeated (cache warm)          {warm * 1e3:9.1f} ms"
        f"   {ours / warm:.0f}x faster than the first"
    )
    print(f"  (medians of {args.rounds} interleaved rounds)")
    backends(args.rounds, args.batch_size)


if __name__ == "__main__":
    main()
