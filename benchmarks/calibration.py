"""Fitting the calibrated texts-only hybrid on development queries only (SciFact train,
NFCorpus dev), and how well its probabilities match observed relevance.

For each development query the BM25 top 100 of the corpus (k1=0.9, b=0.4) are scored by
the two signals whose scores depend on the (query, document) pair alone: the bundled
all-MiniLM-L6-v2 cosine and BM25 with background idf (a general word-frequency table),
a fixed average document length and query normalisation (the score divided by the most
any document could score for the query). Then, on the pooled development pairs
(relevant = judged >= 1, unjudged = not relevant):

1. each signal gets a logistic calibration of relevance on its raw score;
2. every fixed ``avgdl`` in AVGDL and logit-space weight in WEIGHTS is ranked by the mean
   nDCG@10 over the two development sets; the best is the ``hybrid``'s default;
3. an output calibration (a logistic fit of relevance on the fused logit) makes the
   fused score an estimate of P(relevant).

Prints the choice table, the constants to put in ``rerankit/rerankers/hybrid.py``, and
the expected calibration error (ECE, 10 bins) per development set with its reliability
bins. DL19 has no training split and takes no part. Test splits are never read.

Run: ``python benchmarks/calibration.py`` (document embeddings cached in
``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "beir"
DEV = {"SciFact train": ("scifact", "train"), "NFCorpus dev": ("nfcorpus", "dev")}
AVGDL = (100.0, 200.0, 400.0)
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)  # weight of BM25 in logit space (embedding: the rest)


def main() -> None:
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit import EmbeddingScorer
    from rerankit.calibration import expected_calibration_error, reliability_bins
    from rerankit.eval import load_beir
    from rerankit.eval.runner import first_stage
    from rerankit.eval.tune import fit_calibrated_sets
    from rerankit.rerankers.hybrid import background_bm25
    from rerankit.scorers.lexical import Analyzer

    embedding = EmbeddingScorer()
    analyzer = Analyzer(language="en")
    bm25 = {a: background_bm25(analyzer, avgdl=a) for a in AVGDL}
    # per avgdl, per dev set: (data, query -> (candidate ids, [bm25 row, cosine row]))
    sets: dict[float, list] = {a: [] for a in AVGDL}
    for label, (name, split) in DEV.items():
        start = time.perf_counter()
        data = load_beir(DATA / name, split)
        rows: dict[float, dict] = {a: {} for a in AVGDL}
        for qid, ranked in first_stage(data, "bm25", 100).items():
            if not ranked:
                continue
            ids = [d for d, _ in ranked]
            texts = [data.text(d) for d in ids]
            cos = embedding.score_texts(data.queries[qid], texts)
            for a, scorer in bm25.items():
                rows[a][qid] = (ids, np.vstack([scorer.score_texts(data.queries[qid], texts), cos]))
        for a in AVGDL:
            sets[a].append((data, rows[a]))
        print(
            f"{label}: {len(rows[AVGDL[0]])} queries in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )

    fits = {a: fit_calibrated_sets(sets[a], WEIGHTS) for a in AVGDL}
    table = [
        (100 * float(np.mean(cells)), a, w, [100 * c for c in cells])
        for a, fit in fits.items()
        for w, cells in fit["ndcg_by_set"].items()
    ]
    best = max(table, key=lambda r: r[0])
    print("| avgdl | BM25 weight (logit space) | " + " | ".join(DEV) + " | mean |")
    print("|---:|---:|" + "---:|" * (len(DEV) + 1))
    for mean, a, w, cells in table:
        mark = " **(chosen)**" if (a, w) == best[1:3] else ""
        print(
            f"| {a:g} | {w:.1f}{mark} | "
            + " | ".join(f"{c:.2f}" for c in cells)
            + f" | {mean:.2f} |"
        )
    _, a, w, _ = best
    fit = fits[a]  # its weight is the best for this avgdl, so the chosen one
    cal = fit["calibration"]
    print("\nconstants (rerankit/rerankers/hybrid.py):")
    print(f"  avgdl = {a:g}; weights: embedding {1 - w:.1f}, bm25_background {w:.1f}")
    print(f"  embedding calibration: {cal['calibration']['embedding']}")
    print(f"  bm25_background calibration: {cal['calibration']['bm25_background']}")
    print(f"  output calibration: {cal['output_calibration']}")
    print("\nexpected calibration error (10 bins) of the calibrated hybrid, development pairs:")
    for label, p, labels in zip(DEV, fit["probabilities"], fit["labels"], strict=True):
        ece = expected_calibration_error(p, labels)
        print(f"  {label}: ECE {ece:.4f} over {labels.size} pairs ({int(labels.sum())} relevant)")
        for b in reliability_bins(p, labels):
            print(
                f"    [{b['low']:.1f}, {b['high']:.1f}): {b['count']:6d} pairs, "
                f"predicted {b['predicted']:.3f}, observed {b['observed']:.3f}"
            )


if __name__ == "__main__":
    main()
