"""Reranking quality on ../shared/data: the README's table, regenerated.

Runs ``rerankit eval`` on SciFact and NFCorpus (test splits; first stage: BM25 over the
corpus, k1=0.9, b=0.4, top 100) and TREC DL19 (the stored BM25 top-100 run) with ``bm25``
(BM25 recomputed over the candidates), ``embedding`` (bundled MiniLM), ``hybrid`` (the
default), ``hybrid-bm25`` (the hybrid without a first-stage score) and the pipelines tuned
by ``rerankit tune`` on each dataset's training split (``examples/tuned/*.toml``), then
prints nDCG@10 x 100 side by side. Document embeddings are cached in
``.cache/embeddings.sqlite`` so a second run skips the encoding.

Run: ``python benchmarks/quality.py`` (also ``make quality``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SETS = {
    "SciFact": (DATA / "beir" / "scifact", "bm25", ROOT / "examples/tuned/scifact.toml"),
    "NFCorpus": (DATA / "beir" / "nfcorpus", "bm25", ROOT / "examples/tuned/nfcorpus.toml"),
    "DL19": (DATA / "msmarco" / "trec-dl-2019-bm25-top100", "run", None),
}
RERANKERS = ["bm25", "embedding", "hybrid", "hybrid-bm25"]


def main() -> None:
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit.api import load
    from rerankit.eval import load_beir
    from rerankit.eval.runner import evaluate_runs, first_stage, first_stage_run, run_pipeline

    missing = [name for name, (path, *_) in SETS.items() if not path.exists()]
    if missing:
        sys.exit(f"datasets not found under {DATA}: {', '.join(missing)}")
    table: dict[str, dict[str, float]] = {}
    for name, (path, source, tuned) in SETS.items():
        data = load_beir(path)
        cands = first_stage(data, source, 100)
        runs = [first_stage_run(cands)]
        pipelines = [(r, load(r)) for r in RERANKERS]
        if tuned is not None:
            pipelines.append(("tuned (train split)", load(tuned)))
        for label, reranker in pipelines:
            runs.append(run_pipeline(label, reranker, data, cands))
        for row in evaluate_runs(data, runs, 100):
            table.setdefault(row["pipeline"], {})[name] = 100 * row["ndcg@10"]
        print(f"{name}: {len(data.queries)} queries done", file=sys.stderr, flush=True)
    print("| reranker | " + " | ".join(SETS) + " |")
    print("|---|" + "---:|" * len(SETS))
    for label, cells in table.items():
        values = " | ".join(f"{cells[n]:.2f}" if n in cells else "n/a" for n in SETS)
        print(f"| {label} | {values} |")


if __name__ == "__main__":
    main()
