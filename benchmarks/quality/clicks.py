"""Learning from simulated clicks (``rerankit.training.clicks``), against the default and
against learning to rank on people's judgments; and the interleaving report.

The logging ranker is the default ``hybrid``: each training query's BM25 top 100 (k1=0.9,
b=0.4) with their first-stage scores, reranked, the top 10 shown. Users follow the
position-based click model with ULTRA's settings (``rerankit.training.clicks.simulate``:
examination by rank 0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06 raised to
eta, nothing below rank 10 examined; click probability by grade 0.1, 0.16, 0.28, 0.52, 1.0;
the collection's grades mapped onto 0-4 by its maximum grade: SciFact's 1 is a 4, NFCorpus's
1 and 2 are 2 and 4; unjudged documents are 0). For 10, 100 and 1,000 sessions a query and
eta 0.5, 1 and 2: the propensities are estimated from the log (regression EM), the
bias-corrected learner and the naive one (clicks as labels) are cross-validated against
what was served, and the test split is scored once: the default, each learned ranker
(whatever the verdict), and what the verdict writes (the learned pipeline, or the default).
Learning to rank on the human judgments (``tune --method ltr``'s procedure) is the
reference. The settings with 10 sessions a query go through the JSON Lines click log
(written by ``ClickLog``, read back by ``read_log``); the others are learned from the
same sessions in memory. One more setting per collection (``--explore``, by default 1,000
sessions a query at eta 1) is logged with RandPair swapping 10 % of the adjacent pairs
below the top 3, so the propensities below position 3 are measured from the swaps.

Interleaving: on SciFact's test queries, two rankers whose test nDCG@10 differ by about 2
points are team-draft interleaved for 8,000 simulated sessions (queries drawn at random,
eta 1), 20 times with different seeds; the report's verdict after 250, 500, 1,000, 2,000,
4,000 and 8,000 sessions.

NFCorpus's training queries are a seeded sample of 800 of its 2,590 (see
``benchmarks/quality/clicks_data.py``).

Run: ``python -m benchmarks.quality.clicks`` (features cached in .cache/clicks-features/,
document embeddings in .cache/embeddings.sqlite; ``--sets``, ``--sessions``, ``--eta`` to
run part of it).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks.quality.clicks_data import CACHE, prepared

#: the collections' names on disk and in the tables
SETS = {"scifact": "SciFact", "nfcorpus": "NFCorpus"}
#: the settings whose sessions go through the JSON Lines log
THROUGH_FILE = 10


def test_values(scores, rows, qrels) -> dict:
    """nDCG@10 x 100 of each judged test query (a query without candidates scores 0)."""
    from rerankit.eval.metrics import ranked_ndcg

    judged = [q for q, j in qrels.items() if any(g > 0 for g in j.values())]
    return {
        q: 100 * ranked_ndcg(rows[q][0], scores[q], qrels[q]) if q in rows else 0.0 for q in judged
    }


def test_ndcg(scores, rows, qrels) -> float:
    """nDCG@10 x 100 over the judged test queries (a query without candidates scores 0)."""
    values = test_values(scores, rows, qrels)
    return sum(values.values()) / len(values)


def paired(a: dict, b: dict) -> tuple[float, float, float]:
    """The mean of ``a - b`` over their queries and its 95 % interval (normal, paired by
    query): how far apart two rankers' test scores are, and how surely."""
    diff = np.array([a[q] - b[q] for q in a])
    half = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff))
    return float(diff.mean()), float(diff.mean() - half), float(diff.mean() + half)


def learned_scores(booster, features, blend, rows) -> dict:
    """The learned pipeline's scores: the booster's min-max score blended with the first
    stage + MiniLM fusion, as the pipeline ``tune`` writes."""
    from rerankit.scorers.learned import feature_columns, min_max
    from rerankit.training.clicks.learn import blend_base

    columns = feature_columns(list(features))
    out = {}
    for q, (_, x) in rows.items():
        s = min_max(booster.predict(x[:, columns]))
        out[q] = blend * s + (1 - blend) * blend_base(x) if blend < 1 else s
    return out


def simulate(name, rows, hybrid, qrels, top, sessions, eta, seed, explore=0.0):
    """The logging ranker's sessions of every training query: ``{qid: QueryLog}`` (with
    RandPair swapping that share of the pairs below the top 3 when ``explore``)."""
    from rerankit.scorers.learned import FEATURES
    from rerankit.training.clicks.simulate import PositionBasedModel, grades_0_to_4, simulate_query

    model = PositionBasedModel(eta=eta)
    rng = np.random.default_rng([seed, sessions, int(eta * 10), len(name), int(explore * 100)])
    fs = FEATURES.index("first_stage")
    logs = {}
    for q, (ids, x) in rows.items():
        order = np.argsort(-np.asarray(hybrid[q]), kind="stable")
        logs[q] = simulate_query(
            model,
            key=q,
            query=q,
            doc_ids=ids,
            order=order,
            grades=grades_0_to_4(ids, qrels.get(q, {}), top),
            sessions=sessions,
            rng=rng,
            first_stage=x[:, fs].tolist(),
            explore=explore,
            pipeline="hybrid",
        )
    return model, logs


def through_file(logs, path):
    """The sessions written as the service would log them and read back."""
    from rerankit.training.clicks import ClickLog, collect, read_log
    from rerankit.training.clicks.sessions import records

    path.unlink(missing_ok=True)
    log = ClickLog(path, store="id", max_bytes=0)
    for q in logs.values():
        for impression, feedback in records(q):
            log.write(impression)
            if feedback is not None:
                log.write(feedback)
    sessions, report = read_log(path)
    back = collect(sessions)
    for q, original in logs.items():
        if not np.array_equal(back[q].clicked, original.clicked):
            raise SystemExit(f"the log changed the sessions of query {q}")
    size = path.stat().st_size
    path.unlink()
    return back, report, size


def reference(train_rows, hybrid_train, train_qrels, test_rows, test_qrels) -> tuple:
    """``tune --method ltr``'s procedure on the human judgments: nested 5-fold choice of
    setting, trees and blend, the verdict against the default, the chosen model fitted on
    every training query (seed 0) and scored on test."""
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.training import crossval, ltr
    from rerankit.training.clicks.learn import blend_base

    base = {q: blend_base(x) for q, (_, x) in train_rows.items()}
    default = {
        q: ranked_ndcg(ids, hybrid_train[q], train_qrels.get(q, {}))
        for q, (ids, _) in train_rows.items()
    }
    cv = crossval.cross_validate(
        list(train_rows), ltr.options(train_rows, train_qrels, default=base)
    )
    verdict = crossval.verdict(cv, default)
    names = ltr.feature_set(len(train_rows))
    booster = ltr.fit_option(train_rows, train_qrels, list(train_rows), cv.best, features=names)
    values = test_values(
        learned_scores(booster, names, cv.best[2], test_rows), test_rows, test_qrels
    )
    return sum(values.values()) / len(values), verdict, values


def run_set(key, args, out):
    from rerankit.training.clicks.simulate import max_grade

    label = SETS[key]
    train, train_rows, train_hybrid = prepared(key, "train")
    test, test_rows, test_hybrid = prepared(key, "test")
    top = max(max_grade(train.qrels), max_grade(test.qrels))
    default_values = test_values(test_hybrid, test_rows, test.qrels)
    default = sum(default_values.values()) / len(default_values)
    out[label] = {"default": default, "rows": [], "top": top, "default_values": default_values}
    if args.reference:
        start = time.perf_counter()
        out[label]["reference"] = reference(
            train_rows, train_hybrid, train.qrels, test_rows, test.qrels
        )
        out[label]["reference_seconds"] = time.perf_counter() - start
    settings = [(n, eta, 0.0) for n in args.sessions for eta in args.eta]
    settings += [(n, eta, share) for n, eta, share in args.explore]
    for sessions, eta, explore in settings:
        row = one_setting(
            key,
            train,
            train_rows,
            train_hybrid,
            test,
            test_rows,
            top,
            default,
            sessions,
            eta,
            explore,
            args,
        )
        row["against"] = {"default": paired(row["values"], default_values)}
        if "reference" in out[label]:
            row["against"]["judgments"] = paired(row["values"], out[label]["reference"][2])
        out[label]["rows"].append(row)
        print(
            f"{label} {sessions}/query eta {eta} explore {explore}: learned "
            f"{row['learned']['test']:.2f} (written {row['learned']['written']:.2f}), naive "
            f"{row['naive']['test']:.2f}, default {default:.2f}; {row['seconds']:.0f} s",
            file=sys.stderr,
            flush=True,
        )


def one_setting(
    key,
    train,
    train_rows,
    train_hybrid,
    test,
    test_rows,
    top,
    default,
    sessions,
    eta,
    explore,
    args,
) -> dict:
    from rerankit.training.clicks import estimate_propensities, learn_from_clicks

    start = time.perf_counter()
    model, logs = simulate(
        key, train_rows, train_hybrid, train.qrels, top, sessions, eta, args.seed, explore
    )
    via = "memory"
    if sessions <= THROUGH_FILE:
        path = CACHE / f"log-{key}-{sessions}-{eta}.jsonl"
        logs, report, size = through_file(logs, path)
        via = f"log file ({report.impressions} impressions, {size / 1e6:.0f} MB)"
    prop = estimate_propensities(logs, train_rows)
    error = float(np.nanmax(np.abs(prop.values - model.propensities(10))))
    row = {
        "sessions": sessions,
        "eta": eta,
        "explore": explore,
        "via": via,
        "error": error,
        "propensities": prop,
    }
    for kind, correct in (("learned", True), ("naive", False)):
        result = learn_from_clicks(
            logs,
            train_rows,
            propensities=prop,
            correct=correct,
            keep_learned=True,
            curve=args.curve if correct else None,
        )
        scores = learned_scores(result.booster, result.features, result.option[2], test_rows)
        values = test_values(scores, test_rows, test.qrels)
        learned = sum(values.values()) / len(values)
        if correct:
            row["values"] = values
        row[kind] = {
            "test": learned,
            "written": learned if result.adopt else default,
            "adopt": result.adopt,
            "verdict": result.verdict,
            "option": result.option,
            "curve": result.curve,
        }
    row["seconds"] = time.perf_counter() - start
    return row


def cell(entry) -> str:
    v = entry["verdict"]
    mark = "adopted" if entry["adopt"] else "kept the default"
    return (
        f"{entry['test']:.2f} | {entry['written']:.2f} ({mark}; cv gain "
        f"{100 * v.gain:+.2f}, noise {100 * v.noise:.2f})"
    )


def print_tables(out) -> None:
    print(
        "nDCG@10 x 100 on the test splits (BM25 top 100; logging ranker: the default "
        "`hybrid`, top 10 shown):\n"
    )
    for label, res in out.items():
        print(f"### {label}\n")
        print(f"the default `hybrid`: {res['default']:.2f}")
        if "reference" in res:
            ref, verdict, _ = res["reference"]
            print(
                f"learning to rank on people's judgments (tune's LTR): {ref:.2f} "
                f"({'adopted' if verdict.adopt else 'not adopted'}; cv gain "
                f"{100 * verdict.gain:+.2f}, noise {100 * verdict.noise:.2f}; "
                f"{res['reference_seconds'] / 60:.1f} min)"
            )
        print(f"grades mapped onto 0-4 by the maximum grade {res['top']}\n")
        print(
            "| sessions/query | eta | propensity error (max) | learned (corrected) | "
            "written by the verdict | naive (clicks as labels) | naive written | time |"
        )
        print("|---:|---:|---:|---:|---|---:|---|---:|")
        for row in res["rows"]:
            sessions = str(row["sessions"])
            if row["explore"]:
                sessions += f", RandPair {100 * row['explore']:g} %"
            print(
                f"| {sessions} | {row['eta']:g} | {row['error']:.3f} | "
                f"{cell(row['learned'])} | {cell(row['naive'])} | {row['seconds']:.0f} s |"
            )
        print()
        for row in res["rows"]:
            explore = f", RandPair {100 * row['explore']:g} %" if row["explore"] else ""
            versus = "; ".join(
                f"{name} {mean:+.2f} (95 % interval {low:+.2f} to {high:+.2f})"
                for name, (mean, low, high) in row["against"].items()
            )
            print(
                f"- {row['sessions']}/query, eta {row['eta']:g}{explore}: learned (corrected) "
                f"minus, paired by test query: {versus}"
            )
        print()
        for row in res["rows"]:
            prop = row["propensities"]
            est = ", ".join(f"{v:.3f}" for v in prop.values)
            curve = "; ".join(f"{s:.0f}: {100 * m:.2f}" for s, m in row["learned"]["curve"])
            explore = f", RandPair {100 * row['explore']:g} %" if row["explore"] else ""
            print(
                f"- {row['sessions']}/query, eta {row['eta']:g}{explore} ({row['via']}): "
                f"propensities ({prop.method}) {est}; learning curve (sessions a query: "
                f"cv counterfactual nDCG@10) {curve}"
            )
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,nfcorpus")
    parser.add_argument("--sessions", default="10,100,1000")
    parser.add_argument("--eta", default="0.5,1,2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--explore",
        default="1000:1:0.1",
        help="extra settings logged with RandPair, SESSIONS:ETA:SHARE[,...] ('' for none)",
    )
    parser.add_argument(
        "--no-reference",
        dest="reference",
        action="store_false",
        help="skip learning to rank on the human judgments",
    )
    parser.add_argument("--no-interleaving", dest="interleaving", action="store_false")
    parser.add_argument(
        "--no-curve", dest="curve", action="store_const", const=None, default=(0.1, 0.25, 0.5, 1.0)
    )
    args = parser.parse_args()
    args.sessions = [int(s) for s in args.sessions.split(",")]
    args.eta = [float(e) for e in args.eta.split(",")]
    args.explore = [
        (int(n), float(e), float(share))
        for n, e, share in (item.split(":") for item in args.explore.split(",") if item)
    ]
    out: dict = {}
    for key in args.sets.split(","):
        run_set(key, args, out)
    print_tables(out)
    if args.interleaving:
        from benchmarks.quality.clicks_interleave import interleaving_table

        interleaving_table()


if __name__ == "__main__":
    main()
