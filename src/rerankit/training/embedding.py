"""Fine-tuning the embedding model on a training split: ``rerankit train embedding``.

Pairs are (query, a relevant document) from the split's judgments, each with a hard
negative: the first-stage (BM25) candidate ranked highest that is not judged relevant.
Training is sentence-transformers' own ``SentenceTransformerTrainer`` with
``MultipleNegativesRankingLoss`` (the other pairs of a batch are negatives too); checkpoints
go under ``<out>/checkpoints`` and a run resumes from the last one. The result is a
sentence-transformers folder: ``EmbeddingScorer(out)`` loads it, and ``rerankit export``
turns it into an ONNX folder. Extras ``torch`` and ``train`` (``datasets``, ``accelerate``).
"""

from __future__ import annotations

import contextlib
import logging
import random
from pathlib import Path
from typing import Any

from .._optional import require
from ..backends.bundled import resolve_source
from ..backends.local import quiet_loading
from ..errors import InputError
from .trainer import TrainingRun, no_widget_examples, run_trainer

__all__ = ["embedding_pairs", "fine_tune_embedding"]

logger = logging.getLogger(__name__)


def embedding_pairs(
    data: Any,
    cands: dict[str, list[tuple[str, float]]],
    *,
    max_pairs: int | None = None,
    seed: int = 0,
) -> list[dict[str, str]]:
    """``{anchor, positive, negative}`` rows: every judged-relevant document of a query with
    the best-ranked unjudged-or-irrelevant candidate as its hard negative; shuffled and cut
    to ``max_pairs``."""
    rows = []
    for qid, judged in data.qrels.items():
        if qid not in data.queries:
            continue
        negatives = [d for d, _ in cands.get(qid, []) if judged.get(d, 0) <= 0]
        if not negatives:
            continue
        for doc, grade in judged.items():
            if grade > 0 and doc in data.corpus:
                rows.append(
                    {
                        "anchor": data.queries[qid],
                        "positive": data.text(doc),
                        "negative": data.text(negatives[0]),
                    }
                )
    if not rows:
        raise InputError("no training pairs: the split has no judged-relevant documents")
    random.Random(seed).shuffle(rows)
    return rows[:max_pairs] if max_pairs else rows


def fine_tune_embedding(
    rows: list[dict[str, str]],
    out: str | Path,
    *,
    max_length: int | None = None,
    **training: Any,
) -> dict[str, Any]:
    """Fine-tune ``model`` on ``rows`` into ``out``; returns the run's summary (steps, the
    training loss at its start and end, seconds). Resumes from the last checkpoint in
    ``out/checkpoints`` when there is one. ``training``: the settings every fine-tuning
    takes (:meth:`~rerankit.training.trainer.TrainingRun.of`: ``model``, ``epochs``,
    ``batch_size``, ``learning_rate``, ``seed``, ``progress``, and ``log``, which receives
    the time estimate). Trains on the GPU when torch sees one."""
    st = require("sentence_transformers", "fine-tuning an embedding model")
    datasets = require("datasets", "fine-tuning an embedding model")
    require("accelerate", "fine-tuning an embedding model")
    try:  # their newer homes first
        from sentence_transformers.sentence_transformer.losses import (
            MultipleNegativesRankingLoss,
        )
        from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    except ImportError:  # pragma: no cover - older sentence-transformers
        from sentence_transformers.losses import MultipleNegativesRankingLoss
        from sentence_transformers.training_args import BatchSamplers

    run = TrainingRun.of(rows, out, **training)
    resume = run.claim("embedding", max_length=max_length)
    with quiet_loading():  # no weight-loading bar: the library never prints
        loaded = st.SentenceTransformer(resolve_source(run.model))  # on the GPU when there is one
    if max_length:
        loaded.max_seq_length = max_length
    dataset = datasets.Dataset.from_list(rows)
    prepare = getattr(loaded, "preprocess", None) or loaded.tokenize
    loss = MultipleNegativesRankingLoss(loaded)

    def loss_of(probe: Any) -> Any:  # the time estimate's batch, on the model's device
        features = [
            {n: v.to(loaded.device) if hasattr(v, "to") else v for n, v in batch.items()}
            for batch in (
                prepare([r[k] for r in probe]) for k in ("anchor", "positive", "negative")
            )
        ]
        return loss(features, None)

    run.estimate(loss_of, loaded)
    arguments = run.arguments(
        st.SentenceTransformerTrainingArguments, batch_sampler=BatchSamplers.NO_DUPLICATES
    )

    def build(callbacks: list[Any]) -> Any:
        with contextlib.nullcontext() if run.progress is True else no_widget_examples(loaded):
            return st.SentenceTransformerTrainer(
                model=loaded, args=arguments, train_dataset=dataset, loss=loss, callbacks=callbacks
            )

    return run_trainer(
        build,
        len(rows),
        lambda: loaded.save(str(run.out)),
        resume=resume,
        progress=run.progress,
    )
