"""Teaching the local ranker what an LLM judge knows: label the training queries with a judge
through ``rerankit label``, learn to rank from those labels, report test nDCG@10 once.

No real LLM can be reached here, so the judge is an oracle: a local OpenAI-compatible server
(``rerankit.llm.testing.FakeLLMServer``) that grades a document 9 when the collection's training
qrels say it is relevant and 1 otherwise, with a controlled share of its judgments flipped
(``--noise 0,0.1,0.3``: a relevant document graded 1, a non-relevant one 9; which ones is a
fixed hash of query and document). With ``--judge listwise`` the oracle orders each window
instead: the relevant documents first, the rest in a fixed hash order that says nothing
about them, then each document the same hash picks swapped with another position (the
noise); ``rerankit label`` turns the order into grades by position (``--positions``). The
labeller never sees the qrels: it calls the judge through the real OpenAI SDK, as a user's
run would. Learning is ``tune --method ltr``'s
procedure (learn.py: features of the BM25 top 100, the LightGBM setting chosen by nested
5-fold cross-validation over the training queries, compared there with the default, seed 0),
once on the human qrels and once per noise level on the judge's labels (trained on the
candidates the judge saw and cross-validated on them, as ``tune`` does for a folder
``rerankit label`` wrote, with the options fitted on ``ltr.denoise``'s labels compared too;
``--no-denoise`` leaves those out; ``--unjudged negative`` takes the rest as non-relevant);
each model is scored once on the test split, beside what ``tune`` would write (the default
when it does not adopt the learned model: for the judge's labels, unless it beats the default
by more than ``crossval.ADOPT_MARGIN`` x the noise, as ``tune`` requires of a labelled
folder). Also the judge itself on test (the same noisy oracle ranking the BM25 top 100),
the default ``hybrid`` given the first-stage scores (what ``tune`` compares with; learned
models are blended with 0.3 first stage + 0.7 MiniLM, as ``tune`` does), and the time
labelling took. ``--finetuned`` also fine-tunes MiniLM on each labelled folder (``rerankit
train embedding``; ``--held-out`` sets the share it keeps out) and learns to rank over features that
read it, the verdict made on the training queries it never saw (as ``tune
--embedding-model`` does); ``--cross-encoder``
trains a cross-encoder on the same labels.

Run: ``python -m benchmarks.quality.distill [--sets scifact,nfcorpus] [--noise 0,0.1,0.3] [--k 20]
[--judge listwise [--positions 3,10]] [--finetuned [--held-out 0.1]] [--cross-encoder]``
(document embeddings cached in ``.cache/embeddings.sqlite``, each split's features in
``.cache/distill-features/``: delete it after changing the features).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import BEIR as DATA
from benchmarks.common import ROOT, mean_ndcg_of, per_query_ndcg, use_embedding_cache
from benchmarks.quality.learn import default_scores, hybrid_scores, ndcg, rows_of

QUERY = re.compile(r'Query \(a JSON string\): ("(?:[^"\\]|\\.)*")')
DOC = re.compile(r'Document ("(?:[^"\\]|\\.)*") \(a JSON string\)')
CHUNKS = re.compile(
    r"Chunks \(JSON array\):\n(.*)\n\nQuestion \(a JSON string\): (\".*\")\s*$", re.S
)
PREFIX = 200  # the listwise oracle knows a document by its first characters


def flipped(query: str, doc: str, noise: float) -> bool:
    digest = hashlib.sha256(f"{query}\x00{doc}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < noise


def oracle_grade(relevant: set[str], query: str, doc: str, noise: float) -> int:
    good = doc in relevant
    return 9 if good != flipped(query, doc, noise) else 1


def _hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:8], "big")


def oracle_order(grades: dict[str, int], query: str, docs: list[str], noise: float) -> list[int]:
    """The listwise oracle's order of a window of ``docs`` (ids): the relevant ones first,
    best grade first, the rest in an order that says nothing about them (a fixed hash); then
    each position whose document ``flipped`` picks is swapped with another (a fixed hash)."""
    order = sorted(range(len(docs)), key=lambda i: (-grades.get(docs[i], 0), _hash(query, docs[i])))
    for i in range(len(order)):
        if flipped(query, docs[order[i]], noise):
            j = _hash(query, docs[order[i]], "swap") % len(order)
            order[i], order[j] = order[j], order[i]
    return order


def label_with_oracle(
    name: str, train, noise: float, k: int, work: Path, judge_kind: str, positions: str | None
) -> tuple[Path, dict]:
    from rerankit.cli import main
    from rerankit.llm.testing import FakeLLMServer, Reply
    from rerankit.training.labelling import LABEL_REPORT

    graded: dict[str, dict[str, int]] = {}  # query text -> its documents' grades
    for qid, judged in train.qrels.items():
        graded.setdefault(train.queries[qid], {}).update(judged)
    relevant = {query: {d for d, g in judged.items() if g} for query, judged in graded.items()}
    by_text = {train.text(d)[:PREFIX]: d for d in train.corpus}

    def respond(request):
        if judge_kind == "listwise":
            chunks, question = CHUNKS.search(request.prompt).groups()
            query = json.loads(question)
            docs = [by_text.get(t[:PREFIX], "") for t in json.loads(chunks)]
            order = oracle_order(graded.get(query, {}), query, docs, noise)
            answer = {"reranked_indices": order, "is_rejected": False, "rejection_reason": ""}
            return Reply(text=json.dumps(answer))
        query = json.loads(QUERY.search(request.prompt).group(1))
        doc = json.loads(DOC.search(request.prompt).group(1))
        grade = oracle_grade(relevant.get(query, set()), query, doc, noise)
        return Reply(text=json.dumps({"id": doc, "score": grade}))

    kind = "" if judge_kind == "pointwise" else f"-{judge_kind}"
    out = work / f"{name}{kind}-noise{noise:g}"
    with FakeLLMServer(responder=respond) as server:
        judge = work / f"judge-{judge_kind}-{noise:g}.toml"
        judge.write_text(
            f'[scorer]\ntype = "llm_{judge_kind}"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
            f'base_url = "{server.openai_url}"\napi_key_env = "DISTILL_KEY"\n'
            f'cache = "{work / f"judgments-{judge_kind}-{noise:g}.sqlite"}"\nmax_concurrency = 32\n'
        )
        os.environ["DISTILL_KEY"] = "local"
        args = ["label", "--data", str(DATA / name), "--split", "train", "--judge", str(judge)]
        args += ["--candidates", str(k), "--out", str(out), "--no-progress"]
        code = main([*args, *(["--positions", positions] if positions else [])])
        if code != 0:
            raise SystemExit(f"rerankit label failed ({code})")
    return out, json.loads((out / LABEL_REPORT).read_text())


def learned_ndcg(
    train_rows,
    train_hybrid,
    qrels,
    test_rows,
    test_qrels,
    test_default,
    judged_only: bool = False,
    denoised: bool = True,
    among: set[str] | None = None,
) -> tuple[float, bool, str]:
    """tune --method ltr's choice on ``qrels`` (compared with the default hybrid's scores
    ``train_hybrid``), seed 0, scored once on test, whether tune would adopt it, and the
    option chosen. ``denoised``: with ``judged_only``, also the options fitted on
    ``ltr.denoise``'s labels, as tune compares for a labelled folder. Adopting needs
    ``crossval.ADOPT_MARGIN`` x the noise, as in tune, whoever made the labels.
    ``among``: the verdict on these queries only (those a fine-tuned model in the features
    never saw, as tune does)."""
    from rerankit.training import crossval, ltr

    rows = {q: r for q, r in train_rows.items() if q in qrels}
    blended = default_scores(rows)  # what learned models are blended with, as tune does
    hybrid = {q: train_hybrid[q] for q in rows}
    if judged_only:  # as tune does for a labelled folder: learn and cross-validate on those
        _, hybrid = ltr.judged_candidates(rows, qrels, hybrid)
        rows, blended = ltr.judged_candidates(rows, qrels, blended)
    per_query = per_query_ndcg(rows, hybrid, qrels)
    tops = (None, ltr.DENOISE_TOP) if judged_only and denoised else (None,)
    fit = ltr.options(rows, qrels, default=blended, denoise_tops=tops)
    cv = crossval.cross_validate(list(rows), fit)
    verdict = crossval.verdict(cv, per_query, margin=crossval.ADOPT_MARGIN, among=among)
    booster = ltr.fit_option(rows, qrels, list(rows), cv.best, seed=0)
    setting, trees, blend, top = cv.best
    chosen = f"{setting}, {trees} trees, blend {blend:g}" + ("" if top is None else ", denoised")
    chosen += f"; cross-validated gain {100 * verdict.gain:+.2f}, noise {100 * verdict.noise:.2f}"
    if among is not None:
        chosen += f" on the {verdict.queries} queries the fine-tuned model never saw"
    return ndcg(booster, test_rows, test_qrels, blend, test_default), verdict.adopt, chosen


def label_quality(train, train_rows, labels) -> str:
    """How many of the judge's relevant labels are right (the human qrels say so), as
    labelled and after ``ltr.denoise`` over all the training queries (what ``tune``'s
    denoised options train on)."""
    from rerankit.training import ltr

    qids = [q for q in labels if q in train_rows]
    relevant = {q: {d for d, g in train.qrels.get(q, {}).items() if g} for q in qids}
    reachable = sum(len(relevant[q] & set(labels[q])) for q in qids)

    def count(qrels) -> str:
        said = [(q, d) for q in qids for d, g in qrels[q].items() if g > 0]
        true = sum(d in relevant[q] for q, d in said)
        return f"{len(said)} relevant labels, {true} right (precision {true / len(said):.2f})"

    cleaned = ltr.denoise(train_rows, labels, qids)
    return (
        f"judged {reachable} of the human qrels' relevant documents; the judge said "
        f"{count(labels)}; after ltr.denoise {count(cleaned)}"
    )


def verdict_note(adopted: bool) -> str:
    return "adopted" if adopted else "not adopted: tune writes the default"


def features_of(data, split: str, signals, folder: Path | None = None):
    """``rows_of`` of a split, kept in ``.cache/distill-features`` (minutes to build), or in
    ``folder`` (beside the fine-tuned model the features read, so they go with it)."""
    path = (folder or ROOT / ".cache" / "distill-features") / f"{data.name}-{split}.pkl"
    if path.is_file():
        with path.open("rb") as f:
            return pickle.load(f)  # written by this script
    rows, _ = rows_of(data, signals)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump(rows, f)
    return rows


def judge_on_test(test, test_rows, noise: float, judge_kind: str) -> float:
    """The oracle itself ranking each test query's BM25 top 100: pointwise, by its grades;
    listwise, by its windows of 20 moved by 10 from the back, as ``llm_listwise`` does."""
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.scorers.llm_listwise import windows

    values = []
    for qid, (ids, _) in test_rows.items():
        query, judged = test.queries[qid], test.qrels[qid]
        if judge_kind == "listwise":
            order = list(ids)
            for a, b in windows(len(order), 20, 10):
                window = order[a:b]
                order[a:b] = [window[i] for i in oracle_order(judged, query, window, noise)]
            values.append(ranked_ndcg(order, list(range(len(order), 0, -1)), judged))
            continue
        relevant = {d for d, g in judged.items() if g}
        grades = [oracle_grade(relevant, query, d, noise) for d in ids]
        values.append(ranked_ndcg(ids, grades, judged))
    return 100 * sum(values) / len(test.qrels)  # a query without candidates scores 0


def cross_encoder_ndcg(
    folder: Path, test, test_rows, test_default, work: Path
) -> tuple[float, float, str]:
    """``rerankit train cross-encoder`` on a labelled folder (from the bundled MiniLM, one
    epoch), then the trained model on each test query's BM25 top 100: test nDCG@10 x 100
    alone and blended half and half with the default's min-max scores, and the times."""
    from rerankit.cli import main as cli
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.normalize import normalize_scores
    from rerankit.scorers.cross_encoder import CrossEncoderScorer

    out = work / f"ce-{folder.name}"
    start = time.perf_counter()
    if cli(["train", "cross_encoder", "--data", str(folder), "--out", str(out), "--no-progress"]):
        raise SystemExit("rerankit train cross-encoder failed")
    trained = time.perf_counter() - start
    scorer = CrossEncoderScorer(str(out))
    start = time.perf_counter()
    alone, blended, pairs = 0.0, 0.0, 0
    for qid, (ids, _) in test_rows.items():
        scores = scorer.score_texts(test.queries[qid], [test.text(d) for d in ids])
        pairs += len(ids)
        alone += ranked_ndcg(ids, scores, test.qrels[qid])
        mixed = 0.5 * normalize_scores(scores, "min_max") + 0.5 * test_default[qid]
        blended += ranked_ndcg(ids, mixed, test.qrels[qid])
    scored = time.perf_counter() - start
    n = len(test.qrels)  # a query without candidates scores 0
    note = f"training {trained / 60:.1f} min, scoring {pairs} test pairs {scored / 60:.1f} min"
    return 100 * alone / n, 100 * blended / n, note


def finetuned_ndcg(
    folder: Path,
    k: int,
    train,
    test,
    labels,
    train_hybrid,
    held_out: float,
    cross_fit: int | None = None,
    **options,
) -> tuple[float, bool, str]:
    """``rerankit train embedding`` on a labelled folder (its defaults: MiniLM fine-tuned on
    the judged pairs with BM25 hard negatives; ``held_out``: the share of the queries kept
    out, for its check and for the verdict here),
    then ``learned_ndcg`` over features that use the fine-tuned model instead of MiniLM,
    with the verdict on the training queries the model never saw (as ``tune`` makes it).
    ``cross_fit``: ``train embedding --cross-fit K`` instead (the model trained on every
    query, and K fold models), each training query's features read by the fold model never
    trained on it and the verdict made on all of them, as ``tune`` does then.
    The model and its features are kept in ``.cache/distill-ft/`` (delete it to retrain)."""
    from rerankit.cli import main as cli
    from rerankit.scorers import learned
    from rerankit.training.trainer import CROSS_FIT, TRAINED_ON

    trained = f"cf{cross_fit}" if cross_fit else f"held{held_out:g}"
    out = ROOT / ".cache" / "distill-ft" / f"{folder.name}-k{k}-{trained}"
    record = out / TRAINED_ON  # written last by `train`: the model is complete
    folds = [out / CROSS_FIT / f"fold-{i}" for i in range(cross_fit or 0)]
    start = time.perf_counter()
    if record.is_file() and all((f / TRAINED_ON).is_file() for f in folds):
        note = "fine-tuned in an earlier run"
    else:
        command = ["train", "embedding", "--data", str(folder), "--out", str(out)]
        command += ["--cross-fit", str(cross_fit)] if cross_fit else ["--held-out", f"{held_out:g}"]
        if cli([*command, "--no-progress"]):
            raise SystemExit("rerankit train embedding failed")
        note = f"fine-tuning {(time.perf_counter() - start) / 60:.1f} min"
    # the labelled folder is new in every run, so the record's queries, not its folder
    seen = set(json.loads(record.read_text())["queries"])
    start = time.perf_counter()
    if folds:  # each query's features from the fold model that never saw it
        train_rows = {}
        for fold in folds:
            unseen = set(train.queries) - set(
                json.loads((fold / TRAINED_ON).read_text())["queries"]
            )
            part = dataclasses.replace(
                train, queries={q: t for q, t in train.queries.items() if q in unseen}
            )
            train_rows.update(features_of(part, "train", learned.Signals(str(fold)), fold))
    else:
        train_rows = features_of(train, "train", learned.Signals(str(out)), out)
    test_rows = features_of(test, "test", learned.Signals(str(out)), out)
    note += f", features {(time.perf_counter() - start) / 60:.1f} min"
    start = time.perf_counter()
    score, adopted, chosen = learned_ndcg(
        train_rows,
        train_hybrid,
        labels,
        test_rows,
        test.qrels,
        default_scores(test_rows),
        among=None if folds else set(train_rows) - seen,
        **options,
    )
    note += f", learning {time.perf_counter() - start:.0f} s"
    return score, adopted, f"{chosen}; {note}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,nfcorpus")
    parser.add_argument("--noise", default="0,0.1,0.3")
    parser.add_argument("--k", type=int, default=20, help="candidates judged per query")
    parser.add_argument(
        "--judge",
        choices=("pointwise", "listwise"),
        default="pointwise",
        help="the oracle grades each document (pointwise: noise flips a grade) or orders "
        "windows of 20 (listwise: noise swaps a document with another position)",
    )
    parser.add_argument(
        "--positions",
        help="listwise: rerankit label's --positions (default theirs, 3,10: the first 3 "
        "grade 2, up to the 10th grade 1)",
    )
    parser.add_argument(
        "--unjudged",
        choices=("skip", "negative"),
        default="skip",
        help="candidates the judge did not see: left out of training (skip, as tune does "
        "for labelled folders) or taken as non-relevant",
    )
    parser.add_argument(
        "--no-denoise",
        action="store_true",
        help="on the judge's labels, compare only the options fitted on the labels as they "
        "are (without ltr.denoise's, which tune also compares for a labelled folder)",
    )
    parser.add_argument(
        "--cross-encoder",
        action="store_true",
        help="also train a cross-encoder on each labelled folder (rerankit train "
        "cross-encoder) and score it on test: most of an hour per row on two CPU cores",
    )
    parser.add_argument(
        "--finetuned",
        action="store_true",
        help="also fine-tune MiniLM on each labelled folder (rerankit train embedding) and "
        "learn to rank over features that use it: about half an hour per row on two CPU "
        "cores, mostly encoding the corpus with the new model",
    )
    parser.add_argument(
        "--held-out",
        type=float,
        default=0.1,
        help="with --finetuned: the share of the training queries the fine-tuning keeps out "
        "(rerankit train embedding --held-out); the verdict is made on those (default 0.1, "
        "train's own)",
    )
    parser.add_argument(
        "--cross-fit",
        type=int,
        default=None,
        metavar="K",
        help="with --finetuned: fine-tune with rerankit train embedding --cross-fit K instead "
        "of a held-out share, so the verdict is made on every training query",
    )
    args = parser.parse_args()
    use_embedding_cache()
    from rerankit.eval import load_beir
    from rerankit.scorers import learned

    signals = learned.Signals()
    work = Path(tempfile.mkdtemp(prefix="rerankit-distill-"))
    for name in args.sets.split(","):
        train = load_beir(DATA / name, "train")
        test = load_beir(DATA / name, "test")
        start = time.perf_counter()
        train_rows = features_of(train, "train", signals)
        test_rows = features_of(test, "test", signals)
        print(f"{name}: features in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        test_default = default_scores(test_rows)  # what learned models are blended with
        train_hybrid = hybrid_scores(train, train_rows)
        hybrid = mean_ndcg_of(test_rows, hybrid_scores(test, test_rows), test.qrels)
        human, human_adopted, human_chosen = learned_ndcg(
            train_rows, train_hybrid, train.qrels, test_rows, test.qrels, test_default
        )
        human_note = f"{verdict_note(human_adopted)} ({human_chosen})"
        print(f"{name} human qrels: {human:.2f} ({human_note})", file=sys.stderr, flush=True)
        lines, notes = [], []
        moved = "flipped" if args.judge == "pointwise" else "swapped"
        for noise in (float(x) for x in args.noise.split(",")):
            folder, report = label_with_oracle(
                name, train, noise, args.k, work, args.judge, args.positions
            )
            labels = load_beir(folder, "train").qrels
            quality = label_quality(train, train_rows, labels)
            print(f"{name} noise {noise:g}: {quality}", file=sys.stderr, flush=True)
            notes.append(f"- {100 * noise:.0f} % {moved}: {quality}")
            start = time.perf_counter()
            score, adopted, chosen = learned_ndcg(
                train_rows,
                train_hybrid,
                labels,
                test_rows,
                test.qrels,
                test_default,
                judged_only=args.unjudged == "skip",
                denoised=not args.no_denoise,
            )
            took = time.perf_counter() - start
            written = score if adopted else hybrid
            lines.append(
                f"| judge's labels, {100 * noise:.0f} % {moved} | {score:.2f} | "
                f"{score - human:+.2f} | {written:.2f} | "
                f"{judge_on_test(test, test_rows, noise, args.judge):.2f} | "
                f"{report['labels']} labels, {report['calls']} calls, {report['failed']} "
                f"failed, ${report['cost_usd']:.2f} at gpt-4o-mini's list price, "
                f"{report['seconds']:.0f} s; learning {took:.0f} s; {verdict_note(adopted)} "
                f"({chosen}) |"
            )
            print(f"{name} noise {noise:g}: {lines[-1]}", file=sys.stderr, flush=True)
            if args.finetuned:
                trained_how = (
                    f"cross-fitted over {args.cross_fit} folds"
                    if args.cross_fit
                    else f"{100 * args.held_out:.0f} % of the queries held out"
                )
                score, adopted, chosen = finetuned_ndcg(
                    folder,
                    args.k,
                    train,
                    test,
                    labels,
                    train_hybrid=train_hybrid,
                    held_out=args.held_out,
                    cross_fit=args.cross_fit,
                    judged_only=args.unjudged == "skip",
                    denoised=not args.no_denoise,
                )
                written = score if adopted else hybrid
                lines.append(
                    f"| same labels, LTR over MiniLM fine-tuned on them ({100 * noise:.0f} % "
                    f"flipped, {trained_how}) | "
                    f"{score:.2f} | {score - human:+.2f} | {written:.2f} | | "
                    f"{verdict_note(adopted)} ({chosen}) |"
                )
                print(f"{name} noise {noise:g}: {lines[-1]}", file=sys.stderr, flush=True)
            if args.cross_encoder:
                alone, blended, note = cross_encoder_ndcg(
                    folder, test, test_rows, test_default, work
                )
                lines.append(
                    f"| same labels, MiniLM cross-encoder ({100 * noise:.0f} % flipped) | "
                    f"{alone:.2f} | {alone - human:+.2f} | | | blended 0.5 with the default: "
                    f"{blended:.2f}; {note} |"
                )
                print(f"{name} noise {noise:g}: {lines[-1]}", file=sys.stderr, flush=True)
        print(
            f"\n{name}: {len(train.queries)} training queries labelled (top {args.k} of BM25, "
            f"{args.judge} judge{', positions ' + args.positions if args.positions else ''}), "
            f"{len(test.queries)} test queries, unjudged candidates: {args.unjudged}, "
            "nDCG@10 x 100\n"
        )
        print(
            "| learned from | LTR test | vs human | what tune writes | the judge itself on "
            "test | labelling |"
        )
        print("|---|---:|---:|---:|---:|---|")
        print(f"| human qrels | {human:.2f} | | | | {human_note} |")
        print("\n".join(lines))
        print(f"| (the default hybrid, first-stage scores given) | {hybrid:.2f} | | | | |")
        print("\nthe judge's labels of the training queries:\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
