"""Learning to rank (``rerankit tune --method ltr``): test nDCG@10 over three seeds, train
time, rerank latency, and what happens across domains.

For SciFact and NFCorpus: each query's BM25 top 100 of the corpus (k1=0.9, b=0.4), the
features of ``rerankit.learn`` built once per split, a LightGBM lambdarank model trained
on the training split (SciFact train, NFCorpus train) with early stopping on a fixed fifth
of the training queries, with the LightGBM settings of ``rerankit.learn.GRID`` that score
best on those held-out training queries (mean over the seeds), for seeds 0, 1 and 2; each
model is then scored once on the test split. Also each set's seed-0 model applied to the
other set's test split (cross-domain). Latency: features + prediction
per query (document embeddings cached, as in the quality table).

Run: ``python benchmarks/learn.py`` (document embeddings cached in
``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "beir"
SETS = {"SciFact": "scifact", "NFCorpus": "nfcorpus"}
SEEDS = (0, 1, 2)


def rows_of(data, signals):
    from rerankit.eval.runner import first_stage
    from rerankit.learn import features

    rows, seconds = {}, []
    for qid, ranked in first_stage(data, "bm25", 100).items():
        if not ranked:
            continue
        start = time.perf_counter()
        texts = [data.text(d) for d, _ in ranked]
        x = features(signals, data.queries[qid], texts, [s for _, s in ranked])
        seconds.append(time.perf_counter() - start)
        rows[qid] = ([d for d, _ in ranked], x)
    return rows, statistics.fmean(seconds)


def ndcg(booster, rows, qrels) -> float:
    from rerankit.eval.metrics import mean_ndcg

    run = {}
    for qid, (ids, x) in rows.items():
        scores = booster.predict(x)
        run[qid] = [ids[i] for i in np.argsort(-scores, kind="stable")]
    return 100 * mean_ndcg(run, qrels)


def main() -> None:
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit import learn
    from rerankit.eval import load_beir
    from rerankit.eval.tune import held_out

    signals = learn._Signals()
    train_rows, test_rows, tests, boosters, report, chosen = {}, {}, {}, {}, {}, {}
    for label, name in SETS.items():
        train = load_beir(DATA / name, "train")
        test = load_beir(DATA / name, "test")
        train_rows[label], _ = rows_of(train, signals)
        test_rows[label], latency = rows_of(test, signals)
        tests[label] = test
        valid = held_out(list(train_rows[label]))
        params, table = learn.choose(train_rows[label], train.qrels, valid=valid, seeds=SEEDS)
        chosen[label] = (params, table)
        scores, times = [], []
        for seed in SEEDS:
            start = time.perf_counter()
            booster, _ = learn.train(
                train_rows[label], train.qrels, valid=valid, seed=seed, params=params
            )
            times.append(time.perf_counter() - start)
            scores.append(ndcg(booster, test_rows[label], test.qrels))
            boosters[label, seed] = booster
        start = time.perf_counter()
        for _ids, x in list(test_rows[label].values())[:50]:
            boosters[label, 0].predict(x)
        predict = (time.perf_counter() - start) / 50
        report[label] = (scores, times, 1000 * (latency + predict))
        print(f"{label}: done", file=sys.stderr, flush=True)

    print("nDCG@10 x 100 on the test splits (BM25 top 100; trained on the training split):\n")
    print("| | SciFact | NFCorpus |")
    print("|---|---:|---:|")
    cells = []
    for label in SETS:
        scores, _, _ = report[label]
        cells.append(f"{statistics.fmean(scores):.2f} ({', '.join(f'{s:.2f}' for s in scores)})")
    print(f"| LTR, mean of seeds 0-2 (each) | {' | '.join(cells)} |")
    times = [f"{statistics.fmean(report[label][1]):.1f} s" for label in SETS]
    print(f"| training time per seed (features built once before) | {' | '.join(times)} |")
    latency = [f"{report[label][2]:.0f} ms" for label in SETS]
    print(f"| rerank latency per query (features + prediction) | {' | '.join(latency)} |")
    cross = []
    for label in SETS:
        other = next(o for o in SETS if o != label)
        cross.append(f"{ndcg(boosters[other, 0], test_rows[label], tests[label].qrels):.2f}")
    print(f"| LTR trained on the other set (seed 0) | {' | '.join(cross)} |")
    for label, (params, table) in chosen.items():
        print(f"\n{label}: held-out training nDCG@10 by setting (mean of seeds):")
        for p, score in table:
            mark = " (chosen)" if p == params else ""
            print(f"  {100 * score:.2f}  {p}{mark}")


if __name__ == "__main__":
    main()
