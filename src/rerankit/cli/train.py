"""``rerankit train``: fine-tune the embedding model, or train a cross-encoder, on
judgments, and check the result on held-out training queries."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..eval.first_stage import first_stage
from ..eval.metrics import ranked_ndcg
from ..scorers.cross_encoder import CrossEncoderScorer
from ..scorers.embedding import EmbeddingScorer
from ..training import crossval
from ..training.cross_encoder import cross_encoder_rows, fine_tune_cross_encoder
from ..training.embedding import embedding_pairs, fine_tune_embedding
from ..training.trainer import CROSS_FIT, queries_trained_on, record_trained_on
from .args import positive_int
from .eval_support import read_collection

__all__ = ["add_commands"]

#: how many first-stage candidates the held-out check of ``rerankit train`` reranks
CHECK_DEPTH = 20


#: the share of the training queries ``rerankit train`` keeps out when not told, and at most
#: how many: the check then costs little and a large collection keeps its queries to train on
DEFAULT_HELD_OUT, DEFAULT_HELD_OUT_CAP = 0.1, 200


def held_out(qids: list[str], share: float, cap: int | None = DEFAULT_HELD_OUT_CAP) -> list[str]:
    """The training queries kept out of training to check the result: ``share`` of them
    (at most ``cap`` and half, at least 1 when ``share`` > 0 and there are 10 or more), by a
    hash of each id so the choice does not depend on the file's order."""
    if share <= 0 or len(qids) < 10:
        return []
    count = max(1, round(share * len(qids)))
    if cap is not None:
        count = min(cap, count)
    return crossval.kfold(qids, 2)[0][:count]


def check_on_held_out(
    scorer: Any, data: Any, cands: dict[str, list[tuple[str, float]]], qids: list[str], k: int
) -> tuple[float, float]:
    """Mean nDCG@10 over the held-out ``qids`` of the first stage's top ``k`` as ranked,
    and as the trained ``scorer`` reranks it."""
    first, model = [], []
    for q in qids:
        ranked = cands.get(q, [])[:k]
        ids, judged = [d for d, _ in ranked], data.qrels.get(q, {})
        first.append(ranked_ndcg(ids, -np.arange(len(ids), dtype=float), judged))
        scores = scorer.score_texts(data.queries[q], [data.text(d) for d in ids]) if ids else []
        model.append(ranked_ndcg(ids, np.asarray(scores, dtype=float), judged))
    return float(np.mean(first)), float(np.mean(model))


def cmd_train(args: argparse.Namespace) -> int:

    if args.split == "test":
        raise InputError("train on a training split; the test split is for reporting")
    if args.what == "embedding" and args.head_learning_rate is not None:
        raise InputError(
            "--head-learning-rate is for cross-encoders: an embedding model has no head"
        )
    if args.held_out is not None and not 0 <= args.held_out < 1:
        raise InputError(f"--held-out is a share of the queries in [0, 1), got {args.held_out}")
    if args.cross_fit is not None and args.what != "embedding":
        raise InputError(
            "--cross-fit is for embedding models, which `rerankit tune` reads as features"
        )
    if args.cross_fit is not None and args.cross_fit < 2:
        raise InputError(f"--cross-fit needs at least 2 folds, got {args.cross_fit}")
    data = read_collection(args.data, args.split)
    cands = first_stage(data, "bm25", args.k)
    judged = [q for q in data.qrels if q in data.queries]
    if args.cross_fit is not None and len(judged) < 2 * args.cross_fit:
        raise InputError(
            f"--cross-fit {args.cross_fit}: {len(judged)} judged queries are too few for "
            f"{args.cross_fit} folds of at least 2"
        )
    if args.held_out is None and args.cross_fit:  # the folds check it: train on them all
        checked = []
    elif args.held_out is None:  # the default share, capped; a share asked for is kept
        checked = held_out(judged, DEFAULT_HELD_OUT)
    else:
        checked = held_out(judged, args.held_out, cap=None)
    kept_out = set(checked)
    if args.what == "cross-encoder":
        pairs, train = cross_encoder_rows, fine_tune_cross_encoder
        load_with, what = "CrossEncoderScorer", "cross-encoder"
        export = f"rerankit export {args.out} --kind cross-encoder --quantize int8"
    else:
        pairs, train = embedding_pairs, fine_tune_embedding
        load_with, what = "EmbeddingScorer", "embedding model"
        export = f"rerankit export {args.out} --quantize int8"
    options = {} if args.learning_rate is None else {"learning_rate": args.learning_rate}
    if args.head_learning_rate is not None:  # cross-encoders only: refused above otherwise
        options["head_learning_rate"] = args.head_learning_rate
    summary = _train_without(args, data, cands, kept_out, args.out, pairs, train, options)
    losses = summary["losses"]
    trend = f"; training loss {losses[0]:.3f} -> {losses[-1]:.3f}" if len(losses) > 1 else ""
    print(
        f"{summary['steps']} steps in {summary['seconds'] / 60:.1f} min"
        f"{' (resumed)' if summary['resumed'] else ''}{trend}\nwrote {args.out}: load it with "
        f"{load_with}({str(args.out)!r}), or `{export}`"
    )
    if checked:
        scorer = (
            CrossEncoderScorer(str(args.out))
            if args.what == "cross-encoder"
            else EmbeddingScorer(str(args.out), cache=False)
        )
        first, model = check_on_held_out(scorer, data, cands, checked, CHECK_DEPTH)
        start, before, began = _starting_model(args), "", None
        if start is not None:
            began = check_on_held_out(start, data, cands, checked, CHECK_DEPTH)[1]
            before = f", the model it started from {100 * began:.2f}"
        print(
            f"held-out check, {len(checked)} training queries it never saw (BM25's top "
            f"{CHECK_DEPTH} reranked), nDCG@10: BM25 {100 * first:.2f}{before}, the trained "
            f"{what} {100 * model:.2f}"
        )
        if model <= first:
            use = (
                "`rerankit tune --method ltr` learns from the same judgments"
                if args.what == "cross-encoder"
                else "as features it may still help: `rerankit tune --method ltr "
                f"--embedding-model {args.out}` measures that against the default"
            )
            print(
                f"warning: the trained {what} does not rank better than BM25 on queries it "
                "did not see; do not serve it as it is (more --epochs, a higher "
                f"--learning-rate or more judgments may help; {use})",
                file=sys.stderr,
            )
        if began is not None and model <= began:
            print(
                f"warning: the trained {what} ranks no better than the model it started from "
                "on queries it did not see",
                file=sys.stderr,
            )
    if args.cross_fit:
        _cross_fit(args, data, cands, judged, options)
    return 0


def _cross_fit(
    args: argparse.Namespace, data: Any, cands: Any, judged: list[str], options: dict[str, Any]
) -> None:
    """``--cross-fit K``: K more models in ``OUT/cross-fit/fold-i``, each trained as the
    model was but with the i-th of K folds of the judged queries left out (a fold already
    trained on the same queries is kept), and the check of each on the fold it never saw:
    every judged query measured, where a held-out share measures few. ``rerankit tune
    --embedding-model OUT`` then reads each training query with the fold model that never
    saw it."""
    folds = crossval.kfold(judged, args.cross_fit)
    first, model = [], []
    for i, fold in enumerate(folds):
        out = Path(args.out) / CROSS_FIT / f"fold-{i}"
        if queries_trained_on(out, args.data) == set(data.qrels) - set(fold):
            print(f"fold {i + 1} of {len(folds)}: trained in an earlier run ({out})")
        else:
            print(f"fold {i + 1} of {len(folds)}: {len(fold)} queries left out")
            _train_without(
                args, data, cands, set(fold), out, embedding_pairs, fine_tune_embedding, options
            )
        scorer = EmbeddingScorer(str(out), cache=False)
        bm25, trained = check_on_held_out(scorer, data, cands, fold, CHECK_DEPTH)
        first += [bm25] * len(fold)
        model += [trained] * len(fold)
    print(
        f"cross-fitted check, all {len(judged)} judged training queries, each ranked by the "
        f"fold model never trained on it (BM25's top {CHECK_DEPTH} reranked), nDCG@10: BM25 "
        f"{100 * np.mean(first):.2f}, the fold models {100 * np.mean(model):.2f}\nwrote "
        f"{len(folds)} fold models in {Path(args.out) / CROSS_FIT}: `rerankit tune "
        f"--embedding-model {args.out}` reads them; serving the model does not need them"
    )


def _train_without(
    args: argparse.Namespace,
    data: Any,
    cands: Any,
    left_out: set[str],
    out: str | Path,
    pairs: Any,
    train: Any,
    options: dict[str, Any],
) -> dict[str, Any]:
    """``train`` (a fine-tuning function) on the rows ``pairs`` builds from the judgments of
    ``data``'s queries but ``left_out``, into ``out`` with the command's settings, and the
    record of the queries it was trained on; returns the training's summary."""
    training = dataclasses.replace(
        data, qrels={q: j for q, j in data.qrels.items() if q not in left_out}
    )
    summary = train(
        pairs(training, cands, max_pairs=args.max_pairs),
        out,
        model=args.model,
        epochs=args.epochs,
        batch_size=args.batch_size,
        progress=not args.no_progress,
        log=print,
        **options,
    )
    record_trained_on(out, args.data, args.split, list(training.qrels))
    return summary


def _starting_model(args: argparse.Namespace) -> Any:
    """The model training started from, to show in the held-out check what training
    changed; None for a cross-encoder trained from the bundled embedding model, whose
    relevance head starts random."""
    if args.what == "cross-encoder":
        return None if args.model is None else CrossEncoderScorer(args.model)
    return EmbeddingScorer(*(() if args.model is None else (args.model,)))


def add_commands(sub: Any) -> None:
    tr = sub.add_parser(
        "train",
        help="fine-tune the embedding model, or train a cross-encoder, on your judgments",
        description="embedding: fine-tune a sentence-transformers embedding model on (query, "
        "relevant document, hard negative) triples from a training split, the hard negative "
        "being the best BM25 candidate not judged relevant (MultipleNegativesRankingLoss). "
        "cross-encoder: train a cross-encoder on (query, document, 1/0) pairs, each relevant "
        "document with the 3 best BM25 candidates not judged relevant "
        "(BinaryCrossEntropyLoss), from the bundled MiniLM or --model. sentence-transformers' "
        "trainers; a time estimate first; checkpoints under OUT/checkpoints, and a rerun "
        "with the same settings resumes from them (those of other "
        "settings are refused) (extras torch and train). Judgments from `rerankit label` "
        "work too.",
    )
    tr.add_argument("what", choices=("embedding", "cross-encoder"), help="what to train")
    tr.add_argument("--data", required=True, help="BEIR-layout folder")
    tr.add_argument("--split", default="train", help="the training split (default train)")
    tr.add_argument("--out", required=True, help="folder for the fine-tuned model")
    tr.add_argument(
        "--model",
        default="all-MiniLM-L6-v2",
        help="model to start from (the bundled MiniLM); a cross-encoder learns far faster "
        "from a cross-encoder checkpoint than from this embedding model",
    )
    tr.add_argument("--max-pairs", type=positive_int, default=None, help="use at most N pairs")
    tr.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (1)")
    tr.add_argument("--batch-size", type=positive_int, default=16, help="pairs per step (16)")
    tr.add_argument("--k", type=positive_int, default=100, help="BM25 candidates for negatives")
    tr.add_argument(
        "--learning-rate", type=float, default=None, help="the optimiser's step size (2e-5)"
    )
    tr.add_argument(
        "--head-learning-rate",
        type=float,
        default=None,
        help="cross-encoder: the relevance head's step size (1e-3 for a checkpoint without "
        "a head, whose new head starts from random weights; else --learning-rate's)",
    )
    tr.add_argument(
        "--held-out",
        type=float,
        default=None,
        help="share of the training queries kept out of training to check the result on, "
        "at most half (default 0.1 and at most 200 queries; 0: no check): the trained model "
        "against BM25, and `tune --embedding-model` makes its verdict on these queries",
    )
    tr.add_argument(
        "--cross-fit",
        type=int,
        default=None,
        metavar="K",
        help="embedding: also train K fold models (OUT/cross-fit), each with one of K folds "
        "of the queries left out, so that `rerankit tune --embedding-model OUT` measures on "
        "every training query, not a held-out share (K+1 trainings; --held-out then "
        "defaults to 0)",
    )
    tr.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tr.set_defaults(func=cmd_train)
