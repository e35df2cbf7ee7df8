"""What the training commands share: the trainer's settings, its run (resumable, quiet, the
losses recorded) and the summary it returns."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._optional import require
from .._words import counted
from ..backends.local import quiet_loading
from ..errors import InputError

__all__ = [
    "CHECKPOINT_ORDER_LOGGER",
    "CROSS_FIT",
    "RUN_FILE",
    "TRAINED_ON",
    "Progress",
    "TrainingRun",
    "claim_checkpoints",
    "cross_fit_models",
    "no_widget_examples",
    "queries_trained_on",
    "record_trained_on",
    "run_trainer",
    "save_every",
    "saves",
    "spoken_time",
    "step_line",
    "trainer_settings",
]

logger = logging.getLogger(__name__)

#: the file in a checkpoint folder that records the settings of the run writing it
RUN_FILE = "run.json"
#: the file in a trained model's folder naming the collection and queries it learned from
TRAINED_ON = "rerankit_trained_on.json"
#: the folder inside a model folder where ``rerankit train embedding --cross-fit K`` writes
#: its K fold models (``fold-0`` ...), each trained with one fold of the queries left out
CROSS_FIT = "cross-fit"


def record_trained_on(
    out: str | Path, data: str | Path, split: str, queries: Sequence[str]
) -> None:
    """Write :data:`TRAINED_ON` into the model folder ``out``: the collection folder, split
    and query ids whose judgments the model was trained on, so that ``rerankit tune`` can
    leave those queries out of a verdict on a pipeline that reads the model."""
    record = {"data": str(Path(data).resolve()), "split": split, "queries": sorted(queries)}
    (Path(out) / TRAINED_ON).write_text(json.dumps(record) + "\n", encoding="utf-8")


def queries_trained_on(model: str | Path | None, data: str | Path) -> set[str]:
    """The query ids of the collection folder ``data`` whose judgments the model folder
    ``model`` was trained on (:func:`record_trained_on`); empty for a model trained
    elsewhere, one without the record, or a hub id."""
    if model is None:
        return set()
    path = Path(model) / TRAINED_ON
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(record, dict) or record.get("data") != str(Path(data).resolve()):
        return set()
    return {str(q) for q in record.get("queries", [])}


def cross_fit_models(model: str | Path | None, data: str | Path) -> list[tuple[str, set[str]]]:
    """The fold models in ``model``'s :data:`CROSS_FIT` folder that were trained on the
    judgments of the collection folder ``data``, each with the query ids it was trained on
    (by folder name); empty when there are none (a fold whose training did not finish has
    no record and is left out)."""
    if model is None or not (Path(model) / CROSS_FIT).is_dir():
        return []
    folds = sorted(p for p in (Path(model) / CROSS_FIT).iterdir() if p.is_dir())
    found = [(str(p), queries_trained_on(p, data)) for p in folds]
    return [(path, seen) for path, seen in found if seen]


def _fingerprint(rows: Sequence[Mapping[str, Any]]) -> str:
    """A digest of the training rows, so that a run on other rows is another run."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def claim_checkpoints(
    checkpoints: Path, rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any]
) -> bool:
    """Record ``settings`` (what the run trains: model, step sizes, ...) and a digest of
    its training ``rows`` as the run of ``checkpoints``, before any model is loaded, and
    say whether there are checkpoints to resume. A folder holding checkpoints of a run
    with other settings or rows is refused (an :class:`InputError` naming what differs):
    the trainer would resume that run, continuing someone else's training or failing deep
    inside the optimizer. Checkpoints written without a record (before it existed) are
    resumed as they were."""
    record = checkpoints / RUN_FILE
    now = json.loads(json.dumps({**settings, "rows": _fingerprint(rows)}))  # as it reads back
    resume = checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*"))
    if resume and record.is_file():
        before = json.loads(record.read_text(encoding="utf-8"))
        changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        if changed:
            differences = "; ".join(
                f"{k}: {before.get(k)!r} there, {now.get(k)!r} now" for k in changed
            )
            raise InputError(
                f"{checkpoints} holds the checkpoints of another run ({differences}); a "
                "rerun resumes only the same run: delete that folder to start again, or "
                "write to another output folder"
            )
    checkpoints.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(now, indent=2) + "\n", encoding="utf-8")
    return resume


#: how training shows its progress: True, the trainer's bars (for a terminal); False,
#: nothing; a callable, which hears a plain line now and then (``step 4/20, loss 0.6916``:
#: for a log file, where a bar redrawn in place writes a mess), with no bars at all
Progress = bool | Callable[[str], Any]


def step_line(step: int, steps: int, loss: float) -> str:
    """The plain progress line of a logged training step."""
    return f"step {step}/{steps}, loss {loss:.4f}"


def spoken_time(seconds: float) -> str:
    """``seconds`` as a person says a duration: ``40 s`` below two minutes (1 s at least),
    ``12 min`` below two hours, else ``3.5 h``."""
    if seconds < 120:
        return f"{max(1, round(seconds))} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


#: a checkpoint holds the model's weights and the optimiser's (AdamW's) two moments of each:
#: about this many times the weights' size written
CHECKPOINT_COPIES = 3
#: below this many steps the time estimate is said to be rough (fixed costs weigh there)
ROUGH_BELOW = 20
#: the most of a model's weights the time estimate writes to time a checkpoint (bytes)
PROBE_BYTES = 64_000_000


def save_every(steps: int) -> int:
    """Steps between two checkpoints of a run of ``steps``: about five in a run."""
    return max(1, steps // 5)


def saves(steps: int) -> int:
    """The checkpoints a run of ``steps`` writes: every :func:`save_every` steps, and one at
    the end (transformers' trainer saves its last step too)."""
    return math.ceil(steps / save_every(steps))


def _write_seconds(model: Any, folder: Path) -> tuple[int, float]:
    """The size of ``model``'s weights in bytes, and the seconds writing them all takes
    here: its first tensors, up to :data:`PROBE_BYTES`, written to a file in ``folder``
    (removed after), timed and scaled up. ``(0, 0.0)`` for a model without weights."""
    torch = require("torch", "training")
    tensors = [t for t in model.state_dict().values() if hasattr(t, "element_size")]
    size = sum(t.numel() * t.element_size() for t in tensors)
    if not size:
        return 0, 0.0
    part: dict[str, Any] = {}
    taken = 0
    for i, tensor in enumerate(tensors):
        if part and taken + tensor.numel() * tensor.element_size() > PROBE_BYTES:
            break
        part[str(i)] = tensor
        taken += tensor.numel() * tensor.element_size()
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / "write-probe.pt"
    start = time.perf_counter()
    try:
        torch.save(part, probe)
        seconds = time.perf_counter() - start
    finally:
        probe.unlink(missing_ok=True)
    return size, seconds * size / taken


def trainer_settings(
    checkpoints: Path,
    steps: int,
    *,
    epochs: float,
    batch_size: int,
    learning_rate: float,
    seed: int,
    progress: Progress,
) -> dict[str, Any]:
    """Keyword arguments of a sentence-transformers training-arguments class (the trainer's
    bars only when ``progress`` is True: see :data:`Progress`)."""
    return {
        "output_dir": str(checkpoints),
        "num_train_epochs": epochs,
        "per_device_train_batch_size": batch_size,
        "learning_rate": learning_rate,
        "warmup_steps": 0.1,  # a share of the steps (Transformers 5)
        "logging_steps": max(1, steps // 20),
        "save_steps": save_every(steps),
        "save_total_limit": 2,
        "seed": seed,
        "disable_tqdm": progress is not True,
        "report_to": [],
        "use_cpu": not require("torch", "training").cuda.is_available(),
    }


@dataclass(frozen=True)
class TrainingRun:
    """What every fine-tuning shares: the training ``rows``, the output folder ``out`` (its
    checkpoints in ``out/checkpoints``), the model it starts from and the trainer's
    settings; ``log`` hears the time estimate (default: this module's logger)."""

    rows: Sequence[Mapping[str, Any]]
    out: Path
    model: str
    epochs: float
    batch_size: int
    learning_rate: float
    seed: int
    progress: Progress
    log: Callable[[str], Any] | None = None

    @classmethod
    def of(
        cls,
        rows: Sequence[Mapping[str, Any]],
        out: str | Path,
        *,
        model: str = "all-MiniLM-L6-v2",
        epochs: float = 1.0,
        batch_size: int = 16,
        learning_rate: float = 2e-5,
        seed: int = 0,
        progress: Progress = True,
        log: Callable[[str], Any] | None = None,
    ) -> TrainingRun:
        """A run with the settings every fine-tuning takes as keywords (these defaults)."""
        return cls(rows, Path(out), model, epochs, batch_size, learning_rate, seed, progress, log)

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"

    @property
    def steps(self) -> int:
        """The optimiser steps the trainer takes: every batch a step, the last one short
        included, times the epochs (rounded up, as transformers' trainer counts them)."""
        batches = math.ceil(len(self.rows) / self.batch_size)
        return max(1, math.ceil(batches * self.epochs))

    def claim(self, kind: str, **settings: Any) -> bool:
        """:func:`claim_checkpoints` for this run of ``kind`` with its other ``settings``."""
        common = {
            "kind": kind,
            "model": self.model,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "seed": self.seed,
        }
        return claim_checkpoints(self.checkpoints, self.rows, {**common, **settings})

    def estimate(self, loss_of: Callable[[Sequence[Mapping[str, Any]]], Any], model: Any) -> None:
        """Say about how long training takes: one forward and backward pass of
        ``loss_of(the first batch of rows)`` on ``model``, timed, times the steps, and the
        checkpoints the trainer writes (:func:`saves` of them, each the weights and the
        optimiser's two moments of each, and the model at the end), timed by writing part
        of the weights. Said to be rough below :data:`ROUGH_BELOW` steps: starting the
        trainer and its first step, not counted, weigh there."""
        start = time.perf_counter()
        loss_of(self.rows[: self.batch_size]).backward()
        model.zero_grad()
        per_step = time.perf_counter() - start
        written = saves(self.steps)
        size, writing = _write_seconds(model, self.checkpoints)
        checkpoints = written * CHECKPOINT_COPIES * writing
        total = self.steps * per_step + checkpoints + writing
        said = (
            f"{counted(len(self.rows), 'training pair')}, {counted(self.steps, 'step')} of "
            f"{self.batch_size}: about {spoken_time(total)} on this machine"
        )
        if written and size:
            said += (
                f", {spoken_time(checkpoints)} of it writing {counted(written, 'checkpoint')} "
                f"of {size * CHECKPOINT_COPIES / 1e6:,.0f} MB"
            )
        if self.steps < ROUGH_BELOW:
            said += (
                f" (rough: in a run of under {ROUGH_BELOW} steps, starting the trainer, not "
                "counted, weighs too)"
            )
        (self.log or logger.info)(said)

    def arguments(self, make: Callable[..., Any], **extra: Any) -> Any:
        """The trainer's training arguments: ``make`` (a sentence-transformers
        training-arguments class) with :func:`trainer_settings` and ``extra``."""
        settings = trainer_settings(
            self.checkpoints,
            self.steps,
            epochs=self.epochs,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            seed=self.seed,
            progress=self.progress,
        )
        return make(**settings, **extra)


@contextlib.contextmanager
def no_widget_examples(model: Any) -> Iterator[None]:
    """While a sentence-transformers trainer is built for ``model``: its model-card
    callback computes widget examples (for a Hub page) only when the card has none, and
    draws a tqdm bar for it on stderr ("Computing widget examples") that no progress
    setting turns off. A placeholder makes it skip them; the card is left with none."""
    card = getattr(model, "model_card_data", None)
    if card is None or not isinstance(getattr(card, "widget", None), list) or card.widget:
        yield
        return
    card.widget = [{}]
    try:
        yield
    finally:
        card.widget = []


#: the logger of transformers' "mtime may not be reliable on this filesystem, falling back
#: to numerical ordering": said when two checkpoints were written within a second (a small
#: model, a GPU), it orders them by step, as a resume reads them anyway
CHECKPOINT_ORDER_LOGGER = "transformers.trainer_utils"


class _NoCheckpointOrderLine(logging.Filter):
    """Drops that one warning (:data:`CHECKPOINT_ORDER_LOGGER`); any other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING or not record.getMessage().startswith(
            "mtime may not be reliable"
        )


def run_trainer(
    make: Callable[[list[Any]], Any],
    pairs: int,
    save: Callable[[], Any],
    *,
    resume: bool,
    progress: Progress = True,
) -> dict[str, Any]:
    """Build a trainer with ``make(callbacks)``, train it (with ``resume``, from the last
    checkpoint in its output folder: :func:`claim_checkpoints` says), ``save()`` the model,
    and return the summary: pairs, steps, the logged training losses, seconds, resumed.
    Nothing is printed; unless ``progress`` is True, transformers' bars for loading
    checkpoints and writing the model are off too, and a callable ``progress`` hears a plain
    line at each logged step (:data:`Progress`)."""
    callbacks = require("transformers.trainer_callback", "training")
    losses: list[float] = []

    class _Record(callbacks.TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))
                if callable(progress):
                    progress(step_line(state.global_step, state.max_steps, losses[-1]))

    trainer = make([_Record()])
    trainer.remove_callback(callbacks.PrinterCallback)  # the library never prints
    began = time.perf_counter()
    order_line = _NoCheckpointOrderLine()
    logging.getLogger(CHECKPOINT_ORDER_LOGGER).addFilter(order_line)
    try:
        with contextlib.nullcontext() if progress is True else quiet_loading():
            trainer.train(resume_from_checkpoint=True if resume else None)
            save()
    finally:
        logging.getLogger(CHECKPOINT_ORDER_LOGGER).removeFilter(order_line)
    return {
        "pairs": pairs,
        "steps": int(trainer.state.global_step),
        "losses": losses,
        "seconds": time.perf_counter() - began,
        "resumed": resume,
    }
