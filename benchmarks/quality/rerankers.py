"""Reranking quality on ../shared/data: the README's table, regenerated.

Runs ``rerankit eval`` on SciFact and NFCorpus (test splits; first stage: BM25 over the
corpus, k1=0.9, b=0.4, top 100) and TREC DL19 (the stored BM25 top-100 run) with ``bm25``
(BM25 recomputed over the candidates), ``embedding`` (bundled MiniLM), ``hybrid`` (the
default) given the candidates' first-stage scores, ``hybrid`` given texts only (as a
Cohere-style request or a plain list of strings gives it: calibrated scores that depend
only on the query and the document), ``hybrid-relative`` given texts only (min-max fusion
with BM25 over the candidates' own idf: scores relative to the request), and, with ``--tuned``, the
pipelines tuned by ``rerankit tune`` on each dataset's training split (``examples/tuned/``;
they read 512 tokens per document, so their first run encodes every candidate again),
then prints nDCG@10 x 100 side by side, with the mean rerank latency per query (100 candidates).
Document embeddings are cached in ``.cache/embeddings.sqlite`` so a second run skips the
encoding.

``--int8`` adds ``embedding`` and both ``hybrid`` modes with the embedding model on ONNX
Runtime with int8 weights (exported once into the cache directory; their first run encodes
every candidate again).

Run: ``python -m benchmarks.quality.rerankers [--tuned] [--int8]`` (also ``make quality``).
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.common import DATA, ROOT, use_embedding_cache

SETS = {
    "SciFact": (DATA / "beir" / "scifact", "bm25", ROOT / "examples/tuned/scifact.toml"),
    "NFCorpus": (DATA / "beir" / "nfcorpus", "bm25", ROOT / "examples/tuned/nfcorpus.toml"),
    "DL19": (DATA / "msmarco" / "trec-dl-2019-bm25-top100", "run", None),
}
# (label, reranker, whether the candidates carry their first-stage scores)
RERANKERS = [
    ("bm25", "bm25", False),
    ("embedding", "embedding", False),
    ("hybrid, with first-stage scores", "hybrid", True),
    ("hybrid, texts only (calibrated, pair-wise scores)", "hybrid", False),
    ("hybrid-relative, texts only (min-max, scores per request)", "hybrid-relative", False),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tuned",
        action="store_true",
        help="add the pipelines tuned in examples/tuned/",
    )
    parser.add_argument(
        "--int8",
        action="store_true",
        help="add embedding and both hybrid modes on ONNX Runtime with int8 weights",
    )
    args = parser.parse_args()
    use_embedding_cache()
    from rerankit.api import load
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.runner import evaluate_runs, first_stage_run, run_pipeline

    missing = [name for name, (path, *_) in SETS.items() if not path.exists()]
    if missing:
        sys.exit(f"datasets not found under {DATA}: {', '.join(missing)}")
    table: dict[str, dict[str, float]] = {}
    latency: dict[str, dict[str, float]] = {}
    for name, (path, source, tuned) in SETS.items():
        data = load_beir(path)
        cands = first_stage(data, source, 100)
        runs = [first_stage_run(cands)]
        pipelines = [(label, load(r), scores) for label, r, scores in RERANKERS]
        if args.int8:
            int8 = {"backend": "onnx", "quantize": "int8"}
            pipelines += [
                ("embedding, ONNX int8", load({"scorer": {"type": "embedding", **int8}}), False),
                (
                    "hybrid, with first-stage scores, ONNX int8",
                    load({"reranker": {"type": "hybrid", **int8}}),
                    True,
                ),
                (
                    "hybrid, texts only, ONNX int8",
                    load({"reranker": {"type": "hybrid", **int8}}),
                    False,
                ),
            ]
        if tuned is not None and args.tuned:
            pipelines.append(("tuned on the train split", load(tuned), True))
        for label, reranker, scores in pipelines:
            run = run_pipeline(label, reranker, data, cands, first_stage_scores=scores)
            latency.setdefault(label, {})[name] = 1000 * run.mean_latency
            runs.append(run)
        for row in evaluate_runs(data, runs, 100):
            table.setdefault(row["pipeline"], {})[name] = 100 * row["ndcg@10"]
        print(f"{name}: {len(data.queries)} queries done", file=sys.stderr, flush=True)
    print("nDCG@10 x 100 (test splits; mean rerank latency per query in ms, 2-core CPU):\n")
    print("| reranker | " + " | ".join(SETS) + " |")
    print("|---|" + "---:|" * len(SETS))
    for label, cells in table.items():
        ms = latency.get(label, {})
        values = " | ".join(
            (f"{cells[n]:.2f}" + (f" ({ms[n]:.0f} ms)" if n in ms else "")) if n in cells else "n/a"
            for n in SETS
        )
        print(f"| {label} | {values} |")


if __name__ == "__main__":
    main()
