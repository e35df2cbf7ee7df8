"""Learning to rank (``rerankit tune --method ltr``): test nDCG@10 over three seeds, train
time, rerank latency, and what happens across domains.

For SciFact and NFCorpus: each query's BM25 top 100 of the corpus (k1=0.9, b=0.4), the
features of ``rerankit.scorers.learned`` built once per split, and ``tune``'s procedure on the
training split (SciFact train, NFCorpus train): the LightGBM setting, number of trees and
blend with 0.3 first stage + 0.7 MiniLM (``rerankit.ltr.SETTINGS``, ``TREES``, ``BLENDS``)
chosen by nested 5-fold cross-validation over the training queries, compared there with
the default ``hybrid`` given the first-stage scores (as ``tune`` does); the chosen model
is then trained on every training query with seeds 0, 1 and 2 and each is scored once on
the test split. Also each set's seed-0 model applied to the
other set's test split (cross-domain, without the blend). Latency: features + prediction
per query (document embeddings cached, as in the quality table).

With ``--finetuned DIR``: MiniLM fine-tuned on SciFact's training split (``rerankit train
embedding``'s defaults; trained into DIR first when DIR is empty, and timed), and the same
learning to rank over features that use it, on SciFact.

Run: ``python -m benchmarks.quality.learn [--finetuned .cache/ft-scifact]`` (document embeddings
cached in ``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import BEIR as DATA
from benchmarks.common import mean_ndcg_of, per_query_ndcg, use_embedding_cache

SETS = {"SciFact": "scifact", "NFCorpus": "nfcorpus"}
SEEDS = (0, 1, 2)


def rows_of(data, signals):
    from rerankit.eval.first_stage import first_stage
    from rerankit.scorers.learned import features

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


def default_scores(rows):
    """0.3 first stage + 0.7 MiniLM, min-max: what ``tune`` blends learned models with (the
    default hybrid given first-stage scores until 2026-11)."""
    from rerankit.normalize import normalize_scores
    from rerankit.scorers import learned
    from rerankit.training.fusion_search import DEFAULT_HYBRID

    fs, cos = learned.FEATURES.index("first_stage"), learned.FEATURES.index("cosine")
    w = DEFAULT_HYBRID["weights"]
    return {
        q: w["first_stage"] * normalize_scores(x[:, fs], "min_max")
        + w["embedding"] * normalize_scores(x[:, cos], "min_max")
        for q, (_, x) in rows.items()
    }


def hybrid_scores(data, rows):
    """The default ``hybrid``'s scores of each query's candidates in ``rows``, given their
    first-stage scores (the ``first_stage`` feature): the default ``tune`` compares learned
    pipelines with."""
    from rerankit.scorers import learned
    from rerankit.training.selection import default_hybrid_scores

    fs = learned.FEATURES.index("first_stage")
    cands = {q: list(zip(ids, x[:, fs].tolist(), strict=True)) for q, (ids, x) in rows.items()}
    return default_hybrid_scores(data, cands)


def ndcg(booster, rows, qrels, blend=1.0, default=None) -> float:
    """Test nDCG@10 x 100 of a booster (blended with the default's scores when blend < 1)."""
    from rerankit.eval.metrics import mean_ndcg
    from rerankit.normalize import normalize_scores

    names = list(booster.feature_name())
    from rerankit.scorers.learned import feature_columns as _columns

    columns = _columns(names)
    run = {}
    for qid, (ids, x) in rows.items():
        scores = normalize_scores(booster.predict(x[:, columns]), "min_max")
        if blend < 1:
            scores = blend * scores + (1 - blend) * default[qid]
        run[qid] = [ids[i] for i in np.argsort(-scores, kind="stable")]
    return 100 * mean_ndcg(run, qrels)


def learn_and_score(train, test, signals, label):
    """Features, tune's cross-validated choice (compared with the default hybrid), three
    seeds of the chosen model scored on test: (scores, train seconds per seed, latency ms,
    seed-0 booster, test rows, (cross-validation, verdict, seconds), the default's test
    nDCG@10 x 100)."""
    from rerankit.scorers import learned
    from rerankit.training import crossval, ltr

    train_rows, _ = rows_of(train, signals)
    test_rows, latency = rows_of(test, signals)
    train_default = default_scores(train_rows)  # what learned models are blended with
    per_query = per_query_ndcg(train_rows, hybrid_scores(train, train_rows), train.qrels)
    fit = ltr.options(train_rows, train.qrels, default=train_default)
    start = time.perf_counter()
    cv = crossval.cross_validate(list(train_rows), fit)
    cv_seconds = time.perf_counter() - start
    verdict = crossval.verdict(cv, per_query)
    blend = cv.best[2]
    names = ltr.feature_set(len(train_rows))
    test_default = default_scores(test_rows)
    scores, times, first = [], [], None
    for seed in SEEDS:
        start = time.perf_counter()
        booster = ltr.fit_option(
            train_rows, train.qrels, list(train_rows), cv.best, features=names, seed=seed
        )
        times.append(time.perf_counter() - start)
        scores.append(ndcg(booster, test_rows, test.qrels, blend, test_default))
        first = first or booster
    columns = learned.feature_columns(names)
    start = time.perf_counter()
    for _ids, x in list(test_rows.values())[:50]:
        first.predict(x[:, columns])
    predict = (time.perf_counter() - start) / 50
    default_test = mean_ndcg_of(test_rows, hybrid_scores(test, test_rows), test.qrels)
    print(f"{label}: done", file=sys.stderr, flush=True)
    return (
        scores,
        times,
        1000 * (latency + predict),
        first,
        test_rows,
        (cv, verdict, cv_seconds),
        default_test,
    )


def fine_tuned(folder: Path, train) -> float | None:
    """Fine-tune MiniLM on SciFact's training split (``train``) into ``folder`` as
    ``rerankit train embedding`` does with its defaults, unless it is there already; the
    minutes it took."""
    from rerankit.eval.first_stage import first_stage
    from rerankit.training.embedding import embedding_pairs, fine_tune_embedding

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
    use_embedding_cache()
    from rerankit.eval import load_beir
    from rerankit.scorers import learned

    signals = learned.Signals()
    report, trains, tests, boosters, test_rows, chosen, defaults = {}, {}, {}, {}, {}, {}, {}
    for label, name in SETS.items():
        trains[label] = load_beir(DATA / name, "train")
        tests[label] = load_beir(DATA / name, "test")
        out = learn_and_score(trains[label], tests[label], signals, label)
        report[label] = out[:3]
        boosters[label], test_rows[label], chosen[label], defaults[label] = out[3:]
    ft = None
    if args.finetuned is not None:
        minutes = fine_tuned(args.finetuned, trains["SciFact"])
        ft_signals = learned.Signals(str(args.finetuned.resolve()))
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
    cells = [f"{defaults[label]:.2f}" for label in SETS]
    print(f"| the default hybrid, first-stage scores given | {' | '.join(cells)} |")
    adopted = [
        "yes" if chosen[label][1].adopt else "no (tune writes the default)" for label in SETS
    ]
    print(f"| adopted by tune's cross-validation | {' | '.join(adopted)} |")
    took = [f"{chosen[label][2] / 60:.1f} min" for label in SETS]
    print(f"| cross-validation (features built once before) | {' | '.join(took)} |")
    times = [f"{statistics.fmean(report[label][1]):.1f} s" for label in SETS]
    print(f"| training the chosen model, per seed | {' | '.join(times)} |")
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
    for label, (cv, verdict, _) in chosen.items():
        setting, trees, blend, _ = cv.best
        print(f"\n{label}: chosen {setting}, {trees} trees, blend {blend:g}; {verdict.describe()}")


if __name__ == "__main__":
    main()
