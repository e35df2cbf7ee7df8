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

With ``--finetuned DIR``: MiniLM fine-tuned on SciFact's training split (``rerankit train
embedding``'s defaults; trained into DIR first when DIR is empty, and timed), and the same
learning to rank over features that use it, on SciFact.

Run: ``python benchmarks/learn.py [--finetuned .cache/ft-scifact]`` (document embeddings
cached in ``.cache/embeddings.sqlite``).
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


def learn_and_score(train, test, signals, label):
    """Features, the settings chosen on held-out training queries, three seeds scored on
    test: (scores, train seconds per seed, latency ms, seed-0 booster, test rows, choice)."""
    from rerankit import learn
    from rerankit.eval.tune import held_out

    train_rows, _ = rows_of(train, signals)
    test_rows, latency = rows_of(test, signals)
    valid = held_out(list(train_rows))
    params, table = learn.choose(train_rows, train.qrels, valid=valid, seeds=SEEDS)
    scores, times, first = [], [], None
    for seed in SEEDS:
        start = time.perf_counter()
        booster, _ = learn.train(train_rows, train.qrels, valid=valid, seed=seed, params=params)
        times.append(time.perf_counter() - start)
        scores.append(ndcg(booster, test_rows, test.qrels))
        first = first or booster
    start = time.perf_counter()
    for _ids, x in list(test_rows.values())[:50]:
        first.predict(x)
    predict = (time.perf_counter() - start) / 50
    print(f"{label}: done", file=sys.stderr, flush=True)
    return scores, times, 1000 * (latency + predict), first, test_rows, (params, table)


def fine_tuned(folder: Path, train) -> float | None:
    """Fine-tune MiniLM on SciFact's training split (``train``) into ``folder`` as
    ``rerankit train embedding`` does with its defaults, unless it is there already; the
    minutes it took."""
    from rerankit.eval.runner import first_stage
    from rerankit.train import embedding_pairs, fine_tune_embedding

    if (folder / "modules.json").is_file():
        return None
    rows = embedding_pairs(train, first_stage(train, "bm25", 100))
    summary = fine_tune_embedding(rows, folder, progress=False)
    return summary["seconds"] / 60


def mean_and_each(scores) -> str:
    return f"{statistics.fmean(scores):.2f} ({', '.join(f'{s:.2f}' for s in scores)})"


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--finetuned",
        type=Path,
        default=None,
        help="also learn to rank over this fine-tuned embedding on SciFact (trained into "
        "the folder first, with `rerankit train embedding`'s defaults, when it is empty)",
    )
    args = parser.parse_args()
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit import learn
    from rerankit.eval import load_beir

    signals = learn._Signals()
    report, trains, tests, boosters, test_rows, chosen = {}, {}, {}, {}, {}, {}
    for label, name in SETS.items():
        trains[label] = load_beir(DATA / name, "train")
        tests[label] = load_beir(DATA / name, "test")
        out = learn_and_score(trains[label], tests[label], signals, label)
        report[label] = out[:3]
        boosters[label], test_rows[label], chosen[label] = out[3:]
    ft = None
    if args.finetuned is not None:
        minutes = fine_tuned(args.finetuned, trains["SciFact"])
        ft_signals = learn._Signals(str(args.finetuned.resolve()))
        out = learn_and_score(
            trains["SciFact"], tests["SciFact"], ft_signals, "SciFact, fine-tuned"
        )
        ft = (minutes, *out[:3])
        chosen["SciFact, over the fine-tuned embedding"] = out[5]

    print("nDCG@10 x 100 on the test splits (BM25 top 100; trained on the training split):\n")
    print("| | SciFact | NFCorpus |")
    print("|---|---:|---:|")
    cells = [mean_and_each(report[label][0]) for label in SETS]
    print(f"| LTR, mean of seeds 0-2 (each) | {' | '.join(cells)} |")
    times = [f"{statistics.fmean(report[label][1]):.1f} s" for label in SETS]
    print(f"| training time per seed (features built once before) | {' | '.join(times)} |")
    latency = [f"{report[label][2]:.0f} ms" for label in SETS]
    print(f"| rerank latency per query (features + prediction) | {' | '.join(latency)} |")
    if ft is not None:
        minutes, scores, seconds, ms = ft
        took = "already trained" if minutes is None else f"{minutes:.1f} min"
        row = "LTR over the fine-tuned embedding, mean of seeds 0-2 (each)"
        print(f"| {row} | {mean_and_each(scores)} | |")
        print(
            f"| its training time: fine-tuning + per seed | {took} + "
            f"{statistics.fmean(seconds):.1f} s | |"
        )
        print(f"| its rerank latency per query | {ms:.0f} ms | |")
    cross = []
    for label in SETS:
        other = next(o for o in SETS if o != label)
        cross.append(f"{ndcg(boosters[other], test_rows[label], tests[label].qrels):.2f}")
    print(f"| LTR trained on the other set (seed 0) | {' | '.join(cross)} |")
    for label, (params, table) in chosen.items():
        print(f"\n{label}: held-out training nDCG@10 by setting (mean of seeds):")
        for p, score in table:
            mark = " (chosen)" if p == params else ""
            print(f"  {100 * score:.2f}  {p}{mark}")


if __name__ == "__main__":
    main()
