"""Fitting the calibrated texts-only hybrid on development queries only (SciFact train,
NFCorpus dev), and how well its probabilities match observed relevance.

For each development query the BM25 top 100 of the corpus (k1=0.9, b=0.4) are scored by
the two signals whose scores depend on the (query, document) pair alone: the bundled
all-MiniLM-L6-v2 cosine (of the whole document, or of its best passage of about N words
for N in PASSAGE_WORDS) and BM25 with background idf (a general word-frequency table),
a fixed average document length and query normalisation (the score divided by the most
any document could score for the query). Then, on the pooled development pairs
(relevant = judged >= 1, unjudged = not relevant):

1. each signal gets a logistic calibration of relevance on its raw score;
2. every passage length in PASSAGE_WORDS, fixed ``avgdl`` in AVGDL and logit-space
   weight in WEIGHTS is ranked by the mean nDCG@10 over the two development sets; the
   best is the ``hybrid``'s default;
3. an output calibration (a logistic fit of relevance on the fused logit) makes the
   fused score an estimate of P(relevant).

Prints the choice table, the constants to put in ``rerankit/rerankers/hybrid.py``, and
the expected calibration error (ECE, 10 bins) per development set with its reliability
bins. DL19 has no training split and takes no part. Test splits are never read.

Run: ``python benchmarks/calibration.py`` (document and passage embeddings cached in
``.cache/embeddings.sqlite``; from an empty cache the passages take about 40 minutes to
encode on two CPU cores, a second run about a minute).
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "beir"
DEV = {"SciFact train": ("scifact", "train"), "NFCorpus dev": ("nfcorpus", "dev")}
AVGDL = (100.0, 200.0, 400.0)
PASSAGE_WORDS = (None, 48, 80, 128)  # None: the whole document (as the model truncates it)
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
    readers = {words: embedding.with_passages(words) for words in PASSAGE_WORDS}
    analyzer = Analyzer(language="en")
    bm25 = {a: background_bm25(analyzer, avgdl=a) for a in AVGDL}
    grid = list(itertools.product(PASSAGE_WORDS, AVGDL))
    # per (passage words, avgdl), per dev set: (data, query -> (ids, [bm25 row, cosine row]))
    sets: dict[tuple, list] = {g: [] for g in grid}
    for label, (name, split) in DEV.items():
        start = time.perf_counter()
        data = load_beir(DATA / name, split)
        rows: dict[tuple, dict] = {g: {} for g in grid}
        for qid, ranked in first_stage(data, "bm25", 100).items():
            if not ranked:
                continue
            ids = [d for d, _ in ranked]
            texts = [data.text(d) for d in ids]
            query = data.queries[qid]
            cos = {words: r.score_texts(query, texts) for words, r in readers.items()}
            lexical = {a: scorer.score_texts(query, texts) for a, scorer in bm25.items()}
            for words, a in grid:
                rows[words, a][qid] = (ids, np.vstack([lexical[a], cos[words]]))
        for g in grid:
            sets[g].append((data, rows[g]))
        print(
            f"{label}: {len(rows[grid[0]])} queries in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )

    fits = {g: fit_calibrated_sets(sets[g], WEIGHTS) for g in grid}
    table = [
        (100 * float(np.mean(cells)), g, w, [100 * c for c in cells])
        for g, fit in fits.items()
        for w, cells in fit["ndcg_by_set"].items()
    ]
    best = max(table, key=lambda r: r[0])
    print("| passage words | avgdl | BM25 weight (logit space) | " + " | ".join(DEV) + " | mean |")
    print("|---:|---:|---:|" + "---:|" * (len(DEV) + 1))
    for mean, (words, a), w, cells in table:
        mark = " **(chosen)**" if ((words, a), w) == best[1:3] else ""
        print(
            f"| {words or 'whole'} | {a:g} | {w:.1f}{mark} | "
            + " | ".join(f"{c:.2f}" for c in cells)
            + f" | {mean:.2f} |"
        )
    _, (words, a), w, _ = best
    fit = fits[words, a]  # its weight is the best for this setting, so the chosen one
    cal = fit["calibration"]
    print("\nconstants (rerankit/rerankers/hybrid.py):")
    print(f"  passage_words = {words}; avgdl = {a:g}")
    print(f"  weights: embedding {1 - w:.1f}, bm25_background {w:.1f}")
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
