"""Training a cross-encoder on a training split: ``rerankit train cross_encoder``.

Rows are (query, document, label): every judged-relevant document with label 1 and, per
relevant document, ``negatives`` hard negatives with label 0: the best BM25 candidates not
judged relevant (topped up with random documents of the corpus when BM25 finds too few).
Training is sentence-transformers' own ``CrossEncoderTrainer`` with
``BinaryCrossEntropyLoss``, from the bundled MiniLM (ms-marco-MiniLM-L6-v2's shape; its
relevance head starts untrained and learns at its own step size,
``NEW_HEAD_LEARNING_RATE``) or any local or hub model. Checkpoints go under
``<out>/checkpoints`` and a run resumes from the last one. The result is an ordinary
cross-encoder folder: ``CrossEncoderScorer(out)`` (registry ``cross_encoder`` with
``model=``) loads it, and ``rerankit export OUT --kind cross_encoder`` turns it into ONNX.
Extras ``torch`` and ``train``. Labels made by ``rerankit label`` train it the same way.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

from .._optional import require
from ..backends.bundled import resolve_source
from ..backends.local import quiet_loading
from ..errors import InputError
from .trainer import TrainingRun, run_trainer

__all__ = ["NEW_HEAD_LEARNING_RATE", "cross_encoder_rows", "fine_tune_cross_encoder"]

logger = logging.getLogger(__name__)

#: the step size of a relevance head that starts from random weights (a checkpoint without one, such
#: as the bundled MiniLM): at the encoder's 2e-5 it barely moves and the model ranks no better than
#: chance (``benchmarks/experiments/train_ce.py`` on SciFact's held-out training queries, nDCG@10 of
#: the BM25 top 100 after 4 epochs: 10.11, and 47.64 with the head at 1e-3)
NEW_HEAD_LEARNING_RATE = 1e-3


def has_relevance_head(source: str) -> bool:
    """Whether the checkpoint ``source`` holds a sequence-classification head (True when its
    config cannot be read: loading reports that itself)."""
    transformers = require("transformers", "training a cross-encoder")
    try:
        config = transformers.AutoConfig.from_pretrained(source)
    except (OSError, ValueError):
        return True
    return any(a.endswith("ForSequenceClassification") for a in config.architectures or [])


def _in_head(name: str) -> bool:
    """Whether a parameter belongs to the relevance head (pooler or classifier)."""
    parts = name.split(".")
    return "pooler" in parts or "classifier" in parts


def cross_encoder_rows(
    data: Any,
    cands: dict[str, list[tuple[str, float]]],
    *,
    negatives: int = 3,
    max_pairs: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """``{query, document, label}`` rows (see the module), shuffled; ``max_pairs`` caps the
    relevant documents used (each brings its negatives)."""
    groups = []
    rng = random.Random(seed)
    corpus = list(data.corpus)
    for qid, judged in data.qrels.items():
        if qid not in data.queries:
            continue
        hard = [d for d, _ in cands.get(qid, []) if judged.get(d, 0) <= 0]
        relevant = [d for d, g in judged.items() if g > 0 and d in data.corpus]
        for k, doc in enumerate(relevant):
            group = [{"query": data.queries[qid], "document": data.text(doc), "label": 1.0}]
            picked = hard[k * negatives : (k + 1) * negatives] or hard[:negatives]
            while len(picked) < negatives and len(corpus) > len(judged) + len(picked):
                other = rng.choice(corpus)  # too few BM25 candidates: random documents
                if judged.get(other, 0) <= 0 and other not in picked:
                    picked = [*picked, other]
            group += [
                {"query": data.queries[qid], "document": data.text(d), "label": 0.0} for d in picked
            ]
            groups.append(group)
    if not groups:
        raise InputError("no training pairs: the split has no judged-relevant documents")
    rng.shuffle(groups)
    rows = [row for group in groups[:max_pairs] for row in group]
    rng.shuffle(rows)
    return rows


def fine_tune_cross_encoder(
    rows: list[dict[str, Any]],
    out: str | Path,
    *,
    max_length: int = 256,
    positive_weight: float | None = None,
    head_learning_rate: float | None = None,
    **training: Any,
) -> dict[str, Any]:
    """Train a cross-encoder from ``model`` on ``rows`` into ``out``; returns the run's
    summary (rows, steps, the training losses, seconds, resumed). ``training``: the
    settings every fine-tuning takes (:meth:`~rerankit.training.trainer.TrainingRun.of`:
    ``model``, ``epochs``, ``batch_size``, ``learning_rate``, ``seed``, ``progress``,
    ``log``).

    ``positive_weight`` weighs the relevant pairs' loss (e.g. the negatives' count per
    relevant document, to balance the classes; None: unweighted). ``head_learning_rate`` is
    the step size of the relevance head (the pooler and the classifier); None:
    ``NEW_HEAD_LEARNING_RATE`` when the checkpoint has no head (a new head starts from
    random weights and at the encoder's step size barely moves), else the rest's. Training
    runs on the GPU when there is one. ``log`` receives the time estimate, measured on one
    batch before training (default: the module's logger)."""
    st = require("sentence_transformers", "training a cross-encoder")
    datasets = require("datasets", "training a cross-encoder")
    require("accelerate", "training a cross-encoder")
    torch = require("torch", "training a cross-encoder")
    trainers = require("sentence_transformers.cross_encoder", "training a cross-encoder")
    losses_module = require("sentence_transformers.cross_encoder.losses", "training")

    run = TrainingRun.of(rows, out, **training)
    torch.manual_seed(run.seed)
    source = resolve_source(run.model)
    new_head = not has_relevance_head(source)
    if new_head and head_learning_rate is None:
        head_learning_rate = NEW_HEAD_LEARNING_RATE
    resume = run.claim(
        "cross-encoder",
        head_learning_rate=head_learning_rate,
        positive_weight=positive_weight,
        max_length=max_length,
    )
    # no weight-loading bar (the library never prints), and for a checkpoint without a head
    # no transformers table of the head's "MISSING" weights either: one line says it instead
    with quiet_loading(warnings=not new_head):
        loaded = st.CrossEncoder(source, num_labels=1, max_length=max_length)
    if new_head:
        (run.log or logger.info)(
            f"{run.model}: no relevance head in this checkpoint, a new one starts from random "
            f"weights and learns at step size {head_learning_rate:g} (a cross-encoder "
            "checkpoint learns far faster)"
        )
    weight = (
        None
        if positive_weight is None
        else torch.tensor(float(positive_weight), device=loaded.device)
    )
    loss = losses_module.BinaryCrossEntropyLoss(loaded, pos_weight=weight)
    run.estimate(
        lambda probe: loss(
            [[r["query"] for r in probe], [r["document"] for r in probe]],
            torch.tensor([r["label"] for r in probe], device=loaded.device),
        ),
        loaded,
    )
    arguments = run.arguments(trainers.CrossEncoderTrainingArguments)
    dataset = datasets.Dataset.from_list(rows)
    optimizer = None  # the trainer's own, unless the head has a step size of its own
    if head_learning_rate is not None and head_learning_rate != run.learning_rate:
        head, rest = [], []
        for name, parameter in loaded.named_parameters():
            (head if _in_head(name) else rest).append(parameter)
        if head:
            groups = [{"params": rest}, {"params": head, "lr": head_learning_rate}]
            optimizer = torch.optim.AdamW(groups, lr=run.learning_rate, weight_decay=0.0)
    return run_trainer(
        lambda callbacks: trainers.CrossEncoderTrainer(
            model=loaded,
            args=arguments,
            train_dataset=dataset,
            loss=loss,
            callbacks=callbacks,
            optimizers=(optimizer, None),
        ),
        len(rows),
        lambda: loaded.save_pretrained(str(run.out)),
        resume=resume,
        progress=run.progress,
    )
