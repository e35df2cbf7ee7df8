"""Two more pair-wise lexical signals for the calibrated texts-only hybrid, on development
queries only (SciFact train, NFCorpus dev; test splits are never read):

1. the background-idf BM25 signal with its idf raised to a power ``p`` (weighting a
   query's rarer words more), refitted with ``tune.fit_calibrated_sets``;
2. Dirichlet-smoothed query likelihood against the same word-frequency table (minus the
   empty document's score, so it depends on the pair alone), as a third calibrated
   signal beside BM25 and MiniLM, logit-space weights on a grid.

Prints the mean development nDCG@10 (x 100) of each setting next to the hybrid they were
tried on (the whole-document cosine, before the hybrid read documents by passages; see
``benchmarks/calibration.py``). Neither gained more than about 0.1-0.15, so neither is in
the hybrid.

Run: ``python benchmarks/pairwise_dev.py`` (document embeddings cached in
``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "beir"
DEV = (("scifact", "train"), ("nfcorpus", "dev"))
POWERS = (1.0, 1.5, 2.0, 3.0)
MUS = (50.0, 200.0, 1000.0)
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def main() -> None:
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit import EmbeddingScorer
    from rerankit.calibration import fit_calibration
    from rerankit.eval import load_beir
    from rerankit.eval.metrics import mean_ndcg
    from rerankit.eval.runner import first_stage
    from rerankit.eval.tune import fit_calibrated_sets
    from rerankit.rerankers.hybrid import HYBRID_BM25, HYBRID_CALIBRATION
    from rerankit.scorers._language import BackgroundFrequencies
    from rerankit.scorers.lexical import Analyzer, BM25Scorer

    class PoweredIdf(BackgroundFrequencies):
        def __init__(self, power: float) -> None:
            super().__init__("en")
            self.power = power

        def idf(self, terms, surfaces):
            return np.asarray(super().idf(terms, surfaces)) ** self.power

    analyzer, background = Analyzer(language="en"), BackgroundFrequencies("en")
    embedding = EmbeddingScorer()
    avgdl = HYBRID_CALIBRATION["avgdl"]
    bm25 = {
        p: BM25Scorer(
            analyzer=analyzer, idf=PoweredIdf(p), avgdl=avgdl, query_normalized=True, **HYBRID_BM25
        )
        for p in POWERS
    }

    def likelihood(query: str, texts: list[str]) -> dict[float, np.ndarray]:
        terms, surfaces = analyzer.query_terms(query)
        batch = analyzer.analyze(texts)
        n, lengths = batch.n_docs, batch.lengths.astype(float)
        out = {mu: np.zeros(n) for mu in MUS}
        for t in terms:
            p_bg = max(background.frequency(surfaces.get(t, [t])), 1e-9)
            tid = batch.vocab.get(t)
            tf = np.zeros(n)
            if tid is not None:
                tf = np.bincount(batch.doc_idx[batch.term_ids == tid], minlength=n).astype(float)
            for mu in MUS:
                out[mu] += np.log1p(tf / (mu * p_bg)) + np.log(mu / (lengths + mu))
        return out

    sets = []  # (data, query -> {ids, y, cos, bm25: {p: ...}, ql: {mu: ...}})
    for name, split in DEV:
        data = load_beir(DATA / name, split)
        rows = {}
        for qid, ranked in first_stage(data, "bm25", 100).items():
            if not ranked:
                continue
            ids = [d for d, _ in ranked]
            texts = [data.text(d) for d in ids]
            q = data.queries[qid]
            rows[qid] = {
                "ids": ids,
                "y": np.array([float(data.qrels.get(qid, {}).get(d, 0) >= 1) for d in ids]),
                "cos": embedding.score_texts(q, texts),
                "bm25": {p: s.score_texts(q, texts) for p, s in bm25.items()},
                "ql": likelihood(q, texts),
            }
        sets.append((data, rows))

    print("1. background idf ** p (best BM25 weight in logit space per p):\n")
    for p in POWERS:
        fit = fit_calibrated_sets(
            [
                (d, {q: (r["ids"], np.vstack([r["bm25"][p], r["cos"]])) for q, r in rows.items()})
                for d, rows in sets
            ],
            WEIGHTS,
        )
        w = max(fit["ndcg_by_weight"], key=fit["ndcg_by_weight"].get)
        note = " (the whole-document hybrid)" if p == 1.0 else ""
        print(f"  p = {p:g}: mean {100 * fit['ndcg_by_weight'][w]:.2f} at weight {w}{note}")

    def pooled(get) -> np.ndarray:
        return np.concatenate([get(r) for _, rows in sets for r in rows.values()])

    def mean_dev(score) -> float:
        cells = []
        for data, rows in sets:
            run = {
                q: [r["ids"][i] for i in np.argsort(-score(r), kind="stable")]
                for q, r in rows.items()
            }
            cells.append(100 * mean_ndcg(run, data.qrels))
        return float(np.mean(cells))

    y = pooled(lambda r: r["y"])
    cos_cal = fit_calibration(pooled(lambda r: r["cos"]), y)
    bm_cal = fit_calibration(pooled(lambda r: r["bm25"][1.0]), y)
    ql_cal = {mu: fit_calibration(pooled(lambda r, mu=mu: r["ql"][mu]), y) for mu in MUS}
    base = mean_dev(lambda r: 0.5 * bm_cal.logit(r["bm25"][1.0]) + 0.5 * cos_cal.logit(r["cos"]))
    print(
        f"\n2. query likelihood as a third signal (the whole-document hybrid: {base:.2f}); "
        "best five:\n"
    )
    table = []
    for mu, wq, wb in itertools.product(
        MUS, (0.0, 0.1, 0.2, 0.3, 0.4, 0.5), (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    ):
        if wq + wb > 0.8:
            continue

        def fused(r, mu=mu, wq=wq, wb=wb):
            return (
                wq * ql_cal[mu].logit(r["ql"][mu])
                + wb * bm_cal.logit(r["bm25"][1.0])
                + (1 - wq - wb) * cos_cal.logit(r["cos"])
            )

        table.append((mean_dev(fused), mu, wq, wb))
    for score, mu, wq, wb in sorted(table, reverse=True)[:5]:
        print(f"  {score:.2f}  mu {mu:g}, weights: likelihood {wq:.1f}, bm25 {wb:.1f}")


if __name__ == "__main__":
    main()
