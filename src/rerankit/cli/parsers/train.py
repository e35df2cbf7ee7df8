"""``train``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.train`, imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..args import (
    MODEL_KINDS_SHOWN,
    add_candidates_argument,
    add_data_argument,
    add_no_progress_argument,
    add_old_spelling,
    examples,
    model_kind_name,
    non_negative_float,
    positive_float,
    positive_int,
)
from .shown import MAX_HELD_OUT

__all__ = ["add_commands", "held_out_share"]


def held_out_share(value: str) -> float:
    """``--held-out``: a share from 0 to :data:`MAX_HELD_OUT`, refused with the library's
    own words (:func:`~rerankit.training.fine_tuning.held_out_error`)."""
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 0.1, got {value!r}") from None
    if not 0 <= share <= MAX_HELD_OUT:
        from ...training.fine_tuning import held_out_error  # training, only to say it

        raise argparse.ArgumentTypeError(held_out_error(share))
    return share


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
        **examples(
            "rerankit train embedding --data my-data --out ./my-model",
            "rerankit train cross-encoder --data my-data --out ./my-ce --epochs 2",
            "rerankit eval --data my-data --rerankers hybrid,./my-ce --baseline hybrid  "
            "# beats the default?",
        ),
    )
    tr.add_argument(
        "what",
        type=model_kind_name,
        metavar=MODEL_KINDS_SHOWN,
        help="what to train (cross_encoder works too)",
    )
    add_data_argument(tr)
    tr.add_argument(
        "--train-split",
        dest="train_split",
        metavar="SPLIT",
        default="train",
        help="the split to train on (default train; SPLIT:odd / SPLIT:even for half of a "
        "split's queries, as `rerankit tune --train-split` reads it)",
    )
    add_old_spelling(tr, "--split", dest="train_split", now="--train-split")
    tr.add_argument("--out", required=True, help="folder for the fine-tuned model")
    tr.add_argument(
        "--model",
        default="all-MiniLM-L6-v2",
        help="model to start from (the bundled MiniLM); a cross-encoder learns far faster "
        "from a cross-encoder checkpoint than from this embedding model",
    )
    tr.add_argument(
        "--max-pairs",
        type=positive_int,
        default=None,
        metavar="N",
        help="use at most N judged-relevant (query, document) pairs, each with its negatives "
        "(a cross-encoder's: 3 from the first stage)",
    )
    tr.add_argument(
        "--epochs",
        type=positive_float,
        default=1.0,
        help="passes over the pairs, above 0 (1; 0.5 is half a pass)",
    )
    tr.add_argument(
        "--batch-size", type=positive_int, default=16, metavar="N", help="pairs per step (16)"
    )
    add_candidates_argument(
        tr,
        "BM25 candidates per query to draw hard negatives from; the held-out check reranks "
        "the top 20 of them at most (the eval command it prints, all of them)",
    )
    tr.add_argument(
        "--learning-rate",
        type=non_negative_float,
        default=None,
        help="the optimiser's step size (2e-5; 0 keeps the model's weights, e.g. to train a "
        "cross-encoder's head alone)",
    )
    tr.add_argument(
        "--head-learning-rate",
        type=non_negative_float,
        default=None,
        help="cross-encoder: the relevance head's step size (1e-3 for a checkpoint without "
        "a head, whose new head starts from random weights; else --learning-rate's; 0 keeps "
        "the head as it is)",
    )
    tr.add_argument(
        "--held-out",
        type=held_out_share,
        default=None,
        metavar="SHARE",
        help=f"share of the training queries kept out of training to check the result on, "
        f"from 0 (no check) to {MAX_HELD_OUT} (half) (default 0.1 and at most 200 queries; "
        "none, said, below "
        "10 judged queries): the trained model against BM25, and `tune --embedding-model` "
        "makes its verdict on these queries",
    )
    tr.add_argument(
        "--cross-fit",
        type=int,
        default=None,
        metavar="K",
        help="also train K fold models (OUT/cross-fit), each with one of K folds of the "
        "queries left out and checked on it: every judged query checks the training, not a "
        "held-out share (K+1 trainings; --held-out then defaults to 0); an embedding model's "
        "folds also let `rerankit tune --embedding-model OUT` measure on every training query",
    )
    add_no_progress_argument(tr)
