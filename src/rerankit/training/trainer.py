"""What the training commands share: the trainer's settings, its run (resumable, quiet, the
losses recorded) and the summary it returns."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._optional import require
from ..backends.local import quiet_loading

__all__ = ["run_trainer", "trainer_settings"]


def trainer_settings(
    checkpoints: Path,
    steps: int,
    *,
    epochs: float,
    batch_size: int,
    learning_rate: float,
    seed: int,
    progress: bool,
) -> dict[str, Any]:
    """Keyword arguments of a sentence-transformers training-arguments class."""
    return {
        "output_dir": str(checkpoints),
        "num_train_epochs": epochs,
        "per_device_train_batch_size": batch_size,
        "learning_rate": learning_rate,
        "warmup_steps": 0.1,  # a share of the steps (Transformers 5)
        "logging_steps": max(1, steps // 20),
        "save_steps": max(1, steps // 5),
        "save_total_limit": 2,
        "seed": seed,
        "disable_tqdm": not progress,
        "report_to": [],
        "use_cpu": not require("torch", "training").cuda.is_available(),
    }


def run_trainer(
    make: Callable[[list[Any]], Any],
    checkpoints: Path,
    pairs: int,
    save: Callable[[], Any],
    *,
    progress: bool = True,
) -> dict[str, Any]:
    """Build a trainer with ``make(callbacks)``, train it (resuming from the last checkpoint
    under ``checkpoints``), ``save()`` the model, and return the summary: pairs, steps, the
    logged training losses, seconds, resumed. Nothing is printed; without ``progress``,
    transformers' bars for loading checkpoints and writing the model are off too."""
    callbacks = require("transformers.trainer_callback", "training")
    losses: list[float] = []

    class _Record(callbacks.TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    trainer = make([_Record()])
    trainer.remove_callback(callbacks.PrinterCallback)  # the library never prints
    resume = any(checkpoints.glob("checkpoint-*")) if checkpoints.exists() else False
    began = time.perf_counter()
    with contextlib.nullcontext() if progress else quiet_loading():
        trainer.train(resume_from_checkpoint=True if resume else None)
        save()
    return {
        "pairs": pairs,
        "steps": int(trainer.state.global_step),
        "losses": losses,
        "seconds": time.perf_counter() - began,
        "resumed": bool(resume),
    }
