"""Choosing the texts-only hybrid on development queries only (SciFact train, NFCorpus dev).

Decided: ``hybrid-relative``'s texts-only fusion (0.2 BM25 with the candidates' idf, 0.2 with
background idf, 0.6 embedding) and the background idf's document length. Reported in
docs/documents.md and docs/measured.md.

For each development query, the BM25 top 100 of the corpus (k1=0.9, b=0.4) are reranked
WITHOUT their first-stage scores: the lexical signal is BM25 over the candidates, with its
idf from the candidates themselves (``lucene``, the old texts-only hybrid) or from a
general word-frequency table (``background``), with or without stemming and stopwords,
and with two (k1, b) settings. Each is fused with the bundled all-MiniLM-L6-v2 (weighted
sum of min-max normalised scores) at lexical weights 0.1 to 0.6. The table gives nDCG@10
x 100 on each development set and their mean; the best mean among the background-idf rows
is the ``hybrid``'s texts-only default (the candidates-idf rows: the old default and a
variant, for comparison).
DL19 has no training split and takes no part. Test splits are never read.

Run: ``python -m benchmarks.experiments.hybrid_dev`` (document embeddings cached in
``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import numpy as np

from benchmarks.common import BEIR as DATA
from benchmarks.common import use_embedding_cache

DEV = {"SciFact train": ("scifact", "train"), "NFCorpus dev": ("nfcorpus", "dev")}
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def variants():
    from rerankit.scorers import BM25Scorer
    from rerankit.text import BackgroundFrequencies

    plain = {"stopwords": None, "stemmer": None}
    anserini = {"k1": 0.9, "b": 0.4}
    out = {
        "candidates idf, stemmed (old)": BM25Scorer(),
        "candidates idf, stemmed, k1=0.9 b=0.4": BM25Scorer(**anserini),
    }
    for length in (20, 100, 1000):
        idf = BackgroundFrequencies("en", doc_length=length)
        out[f"background idf (doc length {length}), stemmed, k1=0.9 b=0.4"] = BM25Scorer(
            idf=idf, **anserini
        )
    idf = BackgroundFrequencies("en", doc_length=100)
    out["background idf (doc length 100), stemmed"] = BM25Scorer(idf=idf)
    out["background idf (doc length 100), plain words"] = BM25Scorer(idf=idf, **plain)
    return out


def ndcg(scores, ids, qrels) -> float:
    """nDCG@10 x 100 of the orders the scores give (ties keep the first-stage order)."""
    from rerankit.eval.metrics import mean_ndcg

    run = {q: [ids[q][i] for i in np.argsort(-s, kind="stable")] for q, s in scores.items()}
    return 100 * mean_ndcg(run, qrels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    use_embedding_cache()
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.fusion import fuse, normalize_rows
    from rerankit.scorers import EmbeddingScorer

    embedding = EmbeddingScorer()
    lexical = variants()
    table: dict[str, dict[str, float]] = {}
    for label, (name, split) in DEV.items():
        start = time.perf_counter()
        data = load_beir(DATA / name, split)
        cands = first_stage(data, "bm25", 100)
        signals: dict[str, dict[str, np.ndarray]] = {v: {} for v in lexical}
        cosine: dict[str, np.ndarray] = {}
        ids: dict[str, list[str]] = {}
        for qid, ranked in cands.items():
            if not ranked:
                continue
            ids[qid] = [d for d, _ in ranked]
            texts = [data.text(d) for d in ids[qid]]
            cosine[qid] = embedding.score_texts(data.queries[qid], texts)
            for v, scorer in lexical.items():
                signals[v][qid] = scorer.score_texts(data.queries[qid], texts)

        table.setdefault("embedding alone", {})[label] = ndcg(cosine, ids, data.qrels)
        for v in lexical:
            table.setdefault(f"{v} alone", {})[label] = ndcg(signals[v], ids, data.qrels)
            for w in WEIGHTS:
                fused = {
                    q: fuse(
                        normalize_rows(
                            np.vstack([signals[v][q], cosine[q]]), "weighted_average", "min_max"
                        ),
                        "weighted_average",
                        np.array([w, 1 - w]),
                    )
                    for q in ids
                }
                table.setdefault(f"{v} + embedding, w={w:.1f}", {})[label] = ndcg(
                    fused, ids, data.qrels
                )
        # three signals: BM25 with the candidates' idf, BM25 with background idf, MiniLM
        cand = "candidates idf, stemmed, k1=0.9 b=0.4"
        background = "background idf (doc length 1000), stemmed, k1=0.9 b=0.4"
        for wc, wb in itertools.product((0.1, 0.2, 0.3), repeat=2):
            fused = {
                q: fuse(
                    normalize_rows(
                        np.vstack([signals[cand][q], signals[background][q], cosine[q]]),
                        "weighted_average",
                        "min_max",
                    ),
                    "weighted_average",
                    np.array([wc, wb, 1 - wc - wb]),
                )
                for q in ids
            }
            row = f"three signals: candidates idf {wc:.1f} + background idf {wb:.1f} + embedding"
            table.setdefault(row, {})[label] = ndcg(fused, ids, data.qrels)
        print(
            f"{label}: {len(ids)} queries in {time.perf_counter() - start:.0f} s", file=sys.stderr
        )
    names = list(DEV)
    print("| texts-only signal | " + " | ".join(names) + " | mean |")
    print("|---|" + "---:|" * (len(names) + 1))
    best = max(
        (r for r in table if ("w=" in r and r.startswith("background")) or "three" in r),
        key=lambda r: np.mean(list(table[r].values())),
    )
    for row, cells in table.items():
        values = [cells[n] for n in names]
        mark = " **(chosen)**" if row == best else ""
        print(
            f"| {row}{mark} | "
            + " | ".join(f"{v:.2f}" for v in values)
            + f" | {np.mean(values):.2f} |"
        )


if __name__ == "__main__":
    main()
