"""Which learning-to-rank objective stands a noisy judge best, chosen on training queries only.

Decided: ``tune`` keeps LightGBM's ``lambdarank`` for a judge's labels and, with
``learn_halves.py``, adopts a learned model only above twice the noise
(``crossval.ADOPT_MARGIN``). Reported in docs/evaluation.md.

For each collection's training split: the queries at odd positions learn from an oracle
judge's labels of their BM25 top ``--k`` (the same oracle as ``distill.py``: relevant per the
human qrels, with a share of judgments flipped by a fixed hash of query and document), the
even ones are scored on their human qrels over the BM25 top 100, and the other way round.
Learning is ``tune --method ltr``'s procedure for a folder ``rerankit label`` wrote (judged
candidates only, denoised labels compared, nested 5-fold cross-validation, the verdict
against the default ``hybrid``), once per LightGBM objective, the rest of each setting
unchanged: ``lambdarank`` (tune's), ``rank_xendcg`` (the cross-entropy of NDCG's softmax,
reported more robust to label noise) and ``cross_entropy`` (pointwise: each candidate's
grade scaled to a probability; ranking by a classifier's probability is unaffected by
symmetric label noise in the limit). Prints, per collection, noise and objective, the mean
over both directions of the held-out half's nDCG@10 (human qrels) of the learned model and
of what tune would write (adopting at ``crossval.ADOPT_MARGIN`` x the noise, its rule for a
labelled folder, and at 1 x, its rule for people's judgments), against the default; per
direction, the verdict, the held-out
gain, and the "full lists" gain: each outer fold's chosen model ranking its queries' whole
candidate lists, the unjudged taken as non-relevant, against the default (what
cross-validation on the judged candidates cannot see), with what tune would write at 1 x the
noise if it also required that gain to be positive.

Run: ``python -m benchmarks.experiments.judge_noise_dev [--sets scifact,nfcorpus] [--noise
0,0.1,0.3] [--objectives lambdarank,rank_xendcg,cross_entropy]`` (features cached as
distill.py's).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import numpy as np

from benchmarks.common import BEIR as DATA
from benchmarks.common import per_query_ndcg, use_embedding_cache
from benchmarks.quality.distill import features_of, oracle_grade
from benchmarks.quality.learn import default_scores, hybrid_scores


def oracle_labels(data, rows, qids, noise: float, k: int) -> dict[str, dict[str, int]]:
    """What ``rerankit label`` writes for the oracle: grade 3 (judged 9) or 0 (judged 1)
    for each query's first ``k`` candidates."""
    out = {}
    for q in qids:
        relevant = {d for d, g in data.qrels.get(q, {}).items() if g}
        query = data.queries[q]
        out[q] = {
            d: 3 if oracle_grade(relevant, query, d, noise) == 9 else 0 for d in rows[q][0][:k]
        }
    return out


def learned_on_half(rows, hybrid, labels, qids, objective: str):
    """tune's choice on the labelled ``qids``: (booster, blend, the verdict (at
    ``crossval.ADOPT_MARGIN`` x the noise, as tune decides for a labelled folder), chosen,
    the full-list gain and its standard error)."""
    from rerankit.training import crossval, ltr

    mine = {q: rows[q] for q in qids}
    full_blend = default_scores(mine)  # what learned models are blended with
    full_default = {q: hybrid[q] for q in qids}  # the default they are compared with
    _, default = ltr.judged_candidates(mine, labels, full_default)
    judged, blended = ltr.judged_candidates(mine, labels, full_blend)
    settings = {n: {**s, "objective": objective} for n, s in ltr.SETTINGS.items()}
    fit = ltr.options(
        judged, labels, default=blended, settings=settings, denoise_tops=(None, ltr.DENOISE_TOP)
    )
    cv = crossval.cross_validate(list(judged), fit)
    verdict = crossval.verdict(
        cv, per_query_ndcg(judged, default, labels), margin=crossval.ADOPT_MARGIN
    )
    full = full_list_gain(cv, judged, labels, mine, full_blend, full_default, settings)
    booster = ltr.fit_option(judged, labels, list(judged), cv.best, settings=settings)
    setting, trees, blend, top = cv.best
    chosen = f"{setting}, {trees} trees, blend {blend:g}" + (", denoised" if top else "")
    chosen += f", gain {100 * verdict.gain:+.2f} (noise {100 * verdict.noise:.2f})"
    chosen += f", full lists {100 * full[0]:+.2f} ({100 * full[1]:.2f})"
    return booster, blend, verdict, chosen, full


def blended_scores(booster, x, blend: float, default):
    """The booster's min-max scores of candidates ``x`` mixed with ``default``'s, as tune
    blends them."""
    from rerankit.normalize import normalize_scores
    from rerankit.scorers.learned import feature_columns

    model = normalize_scores(
        booster.predict(x[:, feature_columns(booster.feature_name())]), "min_max"
    )
    return blend * model + (1 - blend) * default


def full_list_gain(cv, judged, labels, rows, blended, hybrid, settings) -> tuple[float, float]:
    """What cross-validation on the judged candidates cannot see: each outer fold's chosen
    option, fitted on the other folds, ranking its queries' *whole* candidate lists, scored
    with the unjudged taken as non-relevant, against the default on the same lists: the
    mean per-query gain and its standard error."""
    from rerankit.eval.metrics import paired_standard_error, ranked_ndcg
    from rerankit.training import ltr

    gains = []
    for f, option in enumerate(cv.chosen_by_fold):
        outside = [q for q in judged if cv.fold_of[q] != f]
        booster = ltr.fit_option(judged, labels, outside, option, settings=settings)
        for q in (q for q in judged if cv.fold_of[q] == f):
            ids, x = rows[q]
            mixed = blended_scores(booster, x, option[2], blended[q])
            gains.append(
                ranked_ndcg(ids, mixed, labels[q]) - ranked_ndcg(ids, hybrid[q], labels[q])
            )
    return float(np.mean(gains)), float(paired_standard_error(gains) or 0.0)


def held_out(booster, blend, rows, default, qrels, qids) -> float:
    """Mean nDCG@10 x 100 of the ``qids`` ranked by the blended booster."""
    scores = {q: blended_scores(booster, rows[q][1], blend, default[q]) for q in qids}
    mine = {q: rows[q] for q in qids}
    return 100 * statistics.fmean(per_query_ndcg(mine, scores, qrels).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,nfcorpus")
    parser.add_argument("--noise", default="0,0.1,0.3")
    parser.add_argument("--objectives", default="lambdarank,rank_xendcg,cross_entropy")
    parser.add_argument("--k", type=int, default=20, help="candidates judged per query")
    args = parser.parse_args()
    use_embedding_cache()
    from rerankit.eval import load_beir
    from rerankit.scorers import learned

    signals = learned.Signals()
    for name in args.sets.split(","):
        train = load_beir(DATA / name, "train")
        rows = features_of(train, "train", signals)
        hybrid = hybrid_scores(train, rows)
        blend_with = default_scores(rows)
        qids = [q for q in train.queries if q in train.qrels and q in rows]
        halves = (qids[0::2], qids[1::2])
        default = [
            100
            * statistics.fmean(
                per_query_ndcg({q: rows[q] for q in h}, hybrid, train.qrels).values()
            )
            for h in halves
        ]
        print(
            f"\n{name}: {len(halves[0])} + {len(halves[1])} training queries; default "
            f"hybrid on the halves {default[0]:.2f} / {default[1]:.2f}, held-out nDCG@10 x 100, "
            "mean of both directions\n"
        )
        print(
            "| noise | objective | learned | what tune writes | at 1 x the noise | with the "
            "full-list check (1 x) | vs default | choices (a / b) | s |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|---|---:|", flush=True)
        for noise in (float(x) for x in args.noise.split(",")):
            for objective in args.objectives.split(","):
                start = time.perf_counter()
                learned_scores, written, at_one, checked, notes = [], [], [], [], []
                for i, (fit_half, test_half) in enumerate((halves, halves[::-1])):
                    labels = oracle_labels(train, rows, fit_half, noise, args.k)
                    booster, blend, verdict, chosen, full = learned_on_half(
                        rows, hybrid, labels, fit_half, objective
                    )
                    score = held_out(booster, blend, rows, blend_with, train.qrels, test_half)
                    learned_scores.append(score)
                    one = replace(verdict, margin=1.0).adopt  # tune's rule for people's judgments
                    written.append(score if verdict.adopt else default[1 - i])
                    at_one.append(score if one else default[1 - i])
                    checked.append(score if one and full[0] > 0 else default[1 - i])
                    said = "adopted at 1 x" if one else "not adopted"
                    said = "adopted" if verdict.adopt else said
                    notes.append(f"{said} (held out {score - default[1 - i]:+.2f}): {chosen}")
                mean_l, mean_w = statistics.fmean(learned_scores), statistics.fmean(written)
                print(
                    f"| {100 * noise:.0f} % | {objective} | {mean_l:.2f} | {mean_w:.2f} | "
                    f"{statistics.fmean(at_one):.2f} | {statistics.fmean(checked):.2f} | "
                    f"{mean_l - statistics.fmean(default):+.2f} "
                    f"| {' / '.join(notes)} | {time.perf_counter() - start:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
