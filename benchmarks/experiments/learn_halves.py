"""Learning to rank on little data: each classic collection split into halves, trained on one
half and applied to the other, as ``rerankit tune --method ltr --train-split test:odd
--test-split test:even`` does.

Decided, with ``judge_noise_dev.py``: ``tune`` adopts a learned model only when it beats the
default by twice the noise (``crossval.ADOPT_MARGIN``; at one noise the one model adopted
here lost on the other half). Reported in docs/measured.md.

For CISI, CACM, MEDLINE and LISA (each with its shipped BM25 top 100 and the first-stage
scores given to the rerankers): the queries at odd positions in queries.jsonl train, the
even ones test, and the other way round. On the training half, ``tune``'s procedure: the
features of ``rerankit.scorers.learned``, LightGBM settings, numbers of trees and blends
with the default chosen by nested 5-fold cross-validation over the training queries, and
the learned pipeline adopted only when it beats the default ``hybrid`` given the
first-stage scores by more than ``tune``'s margin (twice) times the noise of that
comparison; otherwise the default is what ``tune`` writes. Blends mix the learned model
with 0.3 first stage + 0.7 MiniLM (min-max), as ``tune``'s do. Prints, per collection and
direction, the cross-validated gain and its noise, whether the learned pipeline was
adopted, and on the test half the nDCG@10 of the learned model, of the default, and of what
``tune`` wrote (the learned model when adopted, else the default).

``--blend-with default`` blends the learned model with the default ``hybrid``'s own scores
(min-max) instead, the other "fused combination of the two" a user might expect.

Run: ``python -m benchmarks.experiments.learn_halves [--blend-with fusion|default]``
(embeddings cached in ``.cache/embeddings.sqlite``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from benchmarks.common import CLASSIC, use_embedding_cache

SETS = {"CISI": "cisi", "CACM": "cacm", "MEDLINE": "med", "LISA": "lisa"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blend-with", choices=("fusion", "default"), default="fusion")
    args = parser.parse_args()
    use_embedding_cache()
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.normalize import normalize_scores
    from rerankit.scorers import learned
    from rerankit.training import crossval, ltr
    from rerankit.training.fusion_search import DEFAULT_HYBRID
    from rerankit.training.selection import default_hybrid_scores

    missing = [name for name in SETS.values() if not (CLASSIC / name).exists()]
    if missing:
        sys.exit(f"collections not found under {CLASSIC}: {', '.join(missing)}")
    signals = learned.Signals()
    fs, cos = learned.FEATURES.index("first_stage"), learned.FEATURES.index("cosine")
    weights = DEFAULT_HYBRID["weights"]
    rows_out = []
    for label, folder in SETS.items():
        halves = {h: load_beir(CLASSIC / folder, f"test:{h}") for h in ("odd", "even")}
        for train_half, test_half in (("odd", "even"), ("even", "odd")):
            start = time.perf_counter()
            train, test = halves[train_half], halves[test_half]
            feats, hybrid = {}, {}
            for data in (train, test):
                cands = first_stage(data, "auto", 100)
                hybrid.update(default_hybrid_scores(data, cands))
                for q, ranked in cands.items():
                    if ranked:
                        texts = [data.text(d) for d, _ in ranked]
                        x = learned.features(
                            signals, data.queries[q], texts, [s for _, s in ranked]
                        )
                        feats[q] = ([d for d, _ in ranked], x)
            qrels = {**train.qrels, **test.qrels}
            blended = {  # what a learned model is blended with (tune: the fusion)
                q: weights["first_stage"] * normalize_scores(x[:, fs], "min_max")
                + weights["embedding"] * normalize_scores(x[:, cos], "min_max")
                if args.blend_with == "fusion"
                else normalize_scores(hybrid[q], "min_max")
                for q, (_, x) in feats.items()
            }
            default = {  # the default hybrid given first-stage scores
                q: ranked_ndcg(ids, hybrid[q], qrels.get(q, {})) for q, (ids, _) in feats.items()
            }
            train_ids = [q for q in train.queries if q in feats]
            test_ids = [q for q in test.queries if q in feats]
            fit = ltr.options(feats, qrels, default=blended)
            cv = crossval.cross_validate(train_ids, fit)
            verdict = crossval.verdict(cv, default)
            model = fit(train_ids)[cv.best]
            n_test = len(test.queries)  # queries without candidates count 0
            on_test = sum(model(q) for q in test_ids) / n_test
            default_test = sum(default[q] for q in test_ids) / n_test
            written = on_test if verdict.adopt else default_test
            rows_out.append(
                (
                    label,
                    f"{train_half} -> {test_half}",
                    len(train_ids),
                    verdict,
                    cv.best,
                    100 * on_test,
                    100 * default_test,
                    100 * written,
                )
            )
            print(f"{label} {train_half}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    partner = "0.3 first stage + 0.7 MiniLM" if args.blend_with == "fusion" else "the default"
    print(
        f"learned models blended with {partner}; "
        "nDCG@10 x 100; gain and noise: cross-validated on the training half (noise: the "
        "larger of the mean gain's standard error over queries and its corrected standard "
        f"error over folds); adopted: a gain above {crossval.ADOPT_MARGIN:g} x the noise, as "
        "tune decides\n"
    )
    print(
        "| collection | train -> test | training queries | CV gain (noise) | adopted | "
        "best option | test: learned | test: default | test: written | written - default |"
    )
    print("|---|---|---:|---:|---|---|---:|---:|---:|---:|")
    for label, way, n, v, best, lt, dt, wt in rows_out:
        setting, trees, blend, _ = best
        option = f"{setting}, {trees} trees, blend {blend:g}"
        print(
            f"| {label} | {way} | {n} | {100 * v.gain:+.2f} ({100 * v.noise:.2f}) | "
            f"{'yes' if v.adopt else 'no'} | {option} | {lt:.2f} | {dt:.2f} | {wt:.2f} | "
            f"{wt - dt:+.2f} |"
        )
    diffs = [r[7] - r[6] for r in rows_out]
    always = [r[5] - r[6] for r in rows_out]
    print(
        f"\nwritten - default: mean {statistics.fmean(diffs):+.2f}, worst {min(diffs):+.2f}; "
        f"had the learned model always been written: mean {statistics.fmean(always):+.2f}, "
        f"worst {min(always):+.2f}"
    )


if __name__ == "__main__":
    main()
