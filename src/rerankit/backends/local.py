"""What the local-model scorers share: lazy thread-safe loading, load errors, OOM splits."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar

from .._threads import in_model_thread, loads_in_place, on_model_thread
from ..errors import MissingDependencyError, ModelLoadError
from ..hardware import HardwareProfile
from ..scorers.base import ScoreBatch, valid_query, valid_unicode
from ..types import Document
from .onnx import check_backend, load_onnx
from .pairs import lengths, offsets, unpadded

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


def weights_fingerprint(model: str) -> str:
    """For a local model folder, a short digest of its weight files' names, sizes and
    modification times, so a model retrained into the same folder never reads vectors
    cached for the old weights; empty for a hub id."""

    folder = Path(model)
    if not folder.is_dir():
        return ""
    stats = sorted(
        (str(rel), f.stat().st_size, f.stat().st_mtime_ns)
        for f in folder.rglob("*")
        if f.suffix in _WEIGHT_SUFFIXES
        and "checkpoints" not in (rel := f.relative_to(folder)).parts
        and f.is_file()
    )
    return "@" + hashlib.sha1(repr(stats).encode()).hexdigest()[:12]


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


class LazyModel(Generic[T]):
    """Loads a model on first use, once, on the model thread (see :mod:`rerankit._threads`;
    or in place on a loading thread, as the service loads), even when several threads ask at
    the same time.

    Load failures become :class:`ModelLoadError` naming the model (missing packages stay
    :class:`MissingDependencyError`), so a wrong id is reported, not degraded around.
    """

    def __init__(self, what: str, model: Any, load: Callable[[], T]) -> None:
        self.what, self.model, self._load = what, model, load
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
                        with quiet_loading():
                            self._value = self._load()
                    except (MissingDependencyError, ModelLoadError):
                        raise
                    except Exception as exc:
                        raise ModelLoadError(
                            f"could not load {self.what} {model_label(self.model)!r}: "
                            f"{type(exc).__name__}: {exc} (a hub id needs network access or a "
                            "local copy in the Hugging Face cache; a local directory path also "
                            "works)"
                        ) from exc
                    logger.info("loaded %s %s", self.what, model_label(self.model))
        return self._value


@contextlib.contextmanager
def quiet_loading(*, warnings: bool = True) -> Iterator[None]:
    """transformers draws a progress bar while loading weights; the library never prints,
    so it is switched off while a model loads (and restored after). ``warnings=False`` also
    silences transformers' warnings meanwhile (its load report, for one)."""
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
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if was_on:
            hf_logging.enable_progress_bar()


class LocalModelOptions(TypedDict, total=False):
    """How a local model runs (the keyword arguments every local-model scorer takes):
    ``profile`` (a :class:`~rerankit.HardwareProfile` or an object with its attributes),
    overridden by ``device``, ``batch_size``, ``dtype``, ``max_length`` and ``threads`` when
    given; ``trust_remote_code`` for models that ship their own code; ``backend``
    (``"torch"`` or ``"onnx"``) and ``quantize`` (None or ``"int8"``, ONNX only) for the
    scorers that can run on ONNX Runtime (see :mod:`rerankit.backends.onnx`)."""

    profile: Any
    device: str | None
    batch_size: int | None
    dtype: str | None
    max_length: int | None
    threads: int | None
    trust_remote_code: bool
    backend: str
    quantize: str | None


class LocalModelScorer:
    """What the local-model scorers share: the hardware profile with explicit overrides,
    the model's id, and lazy thread-safe loading (:class:`LazyModel`).

    ``model`` is a hub id or local directory (loaded by :meth:`_load` on first use) or an
    object already loaded (taken through :meth:`_adopt`). Subclasses set ``what`` (a label
    for messages) and implement :meth:`_load`.
    """

    what = "model"
    #: the kind of ONNX export this scorer runs (None: torch only)
    onnx_kind: str | None = None

    def __init__(
        self,
        model: Any,
        *,
        profile: Any = None,
        device: str | None = None,
        batch_size: int | None = None,
        dtype: str | None = None,
        max_length: int | None = None,
        threads: int | None = None,
        trust_remote_code: bool = False,
        backend: str = "torch",
        quantize: str | None = None,
        name: str,
    ) -> None:

        check_backend(backend, quantize)
        if backend == "onnx" and not self.onnx_kind:
            raise ValueError(f"{type(self).__name__} runs on torch only (backend='torch')")
        if backend == "onnx" and not isinstance(model, str):
            raise ValueError("backend='onnx' takes a model id or folder, not a loaded model")
        self.name = name
        self.backend, self.quantize = backend, quantize
        self.profile = settings(
            profile,
            device=device,
            batch_size=batch_size,
            dtype=dtype,
            max_length=max_length,
            threads=threads,
        )
        self.trust_remote_code = trust_remote_code
        self.model_id = model if isinstance(model, str) else None
        loader = (
            (self._load_onnx if backend == "onnx" else self._load)
            if isinstance(model, str)
            else (lambda: self._adopt(model))
        )
        if isinstance(model, str):  # one load per process for the same model and settings
            own = loader
            loader = lambda: shared_load(self._load_key(), own)  # noqa: E731
        self._model: LazyModel[Any] = LazyModel(self.what, model, loader)

    def _load_key(self) -> tuple:
        """What makes two scorers' loaded models the same object: the kind of scorer, the
        model, where and how it runs (subclasses add what else their loading reads)."""
        p = self.profile
        return (
            type(self).__name__,
            self.model_id,
            weights_fingerprint(self.model_id or ""),  # retrained in place: a new load
            self.backend,
            self.quantize,
            p.device,
            p.dtype,
            p.max_length,
            p.threads,
            self.trust_remote_code,
            getattr(self, "max_length", None),
        )

    def score_texts(self, query: str, texts: Sequence[str]) -> Any:  # pragma: no cover
        raise NotImplementedError

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        """``score_texts`` on the model thread (one for all local models: see
        :mod:`rerankit._threads`), with text a tokenizer cannot take cleaned and flagged on
        its document only (see :func:`~rerankit.scorers.base.valid_unicode`)."""
        flags: dict[int, list[str]] = {}
        warnings: list[str] = []
        texts = valid_unicode([d.text for d in docs], flags, warnings)
        query = valid_query(query, warnings)
        values = await in_model_thread(self.score_noted, query, texts, flags, warnings)
        return ScoreBatch(values=values, flags=flags, warnings=warnings)

    def score_noted(
        self, query: str, texts: Sequence[str], flags: dict[int, list[str]], warnings: list[str]
    ) -> Any:
        """:meth:`score_texts`, adding to ``flags`` (by position) and ``warnings`` what the
        model did to the input (a subclass that cuts input says so here)."""
        return self.score_texts(query, texts)

    def _load(self) -> Any:  # pragma: no cover - each subclass loads its own kind
        raise NotImplementedError

    def _load_onnx(self) -> Any:
        """The model on ONNX Runtime: an exported folder, or an export made once."""

        assert self.model_id is not None and self.onnx_kind is not None
        return load_onnx(
            self.model_id,
            kind=self.onnx_kind,
            quantize=self.quantize,
            max_length=self.profile.max_length,
            threads=self.profile.threads,
            trust_remote_code=self.trust_remote_code,
        )

    def _adopt(self, model: Any) -> Any:
        """An object the caller loaded, as :attr:`model` holds it."""
        return model

    @property
    def model(self) -> Any:
        """The loaded model (loads it on first access)."""
        return self._model.get()

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]] | None:
        """Each text's tokens as the model reads them (no special tokens, no length cap),
        as ``(start, end)`` character offsets; None when the model's tokenizer does not
        report offsets (loads the model)."""
        return self._read_whole_texts(texts, "token_spans", offsets)

    def token_lengths(self, texts: Sequence[str]) -> list[int] | None:
        """How many tokens each text takes as the model reads it (no special tokens, no
        length cap): :meth:`token_spans` counted, without building the offsets."""
        return self._read_whole_texts(texts, "token_lengths", lengths)

    def _read_whole_texts(self, texts: Sequence[str], method: str, read: Callable) -> Any:
        """``read(tokenizer, texts)`` with a copy of the model's fast tokenizer without
        padding or truncation, which needs no lock (the ONNX backend's own ``method``);
        None when the model has no fast tokenizer."""
        model = self.model
        texts = valid_unicode(list(texts), {}, [])
        if hasattr(model, method):  # the ONNX backend
            return getattr(model, method)(texts)
        tokenizer = getattr(model, "tokenizer", None)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or not getattr(tokenizer, "is_fast", False):
            return None
        found = self.__dict__.get("_span_tokenizer")
        if found is None or found[0] is not backend:
            found = self._span_tokenizer = (backend, unpadded(backend))
        return read(found[1], texts)

    @property
    def max_tokens(self) -> int | None:
        """The most tokens the model reads in one input (None when it does not say)."""
        model = self.model
        for attribute in ("max_seq_length", "max_length"):
            value = getattr(model, attribute, None)
            if isinstance(value, int) and value > 0:
                return value
        value = getattr(getattr(model, "tokenizer", None), "model_max_length", None)
        return value if isinstance(value, int) and 0 < value < 1_000_000 else None

    def using_model(self) -> threading.RLock:
        """The loaded model's lock (see :func:`model_lock`): hold it while using the model."""
        return model_lock(self.model)

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded."""
        return self._model.loaded

    def __repr__(self) -> str:
        return f"{type(self).__name__}({model_label(self.model_id or self._model.model)!r})"


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


def load_models(reranker: Any) -> float:
    """Load the local models ``reranker``'s scorers run, on the model thread where they
    would load on first use, so that a first call's latency is reranking, not loading
    (``rerankit eval`` times queries after this); returns the seconds it took (about 0 when
    every model was loaded or there is none). A model that cannot load raises as its first
    use would."""
    start = time.perf_counter()
    for scorer in reranker.scorers():
        if isinstance(scorer, LocalModelScorer) and not scorer.loaded:
            scorer.model  # noqa: B018 - loads it, on the model thread (LazyModel.get)
    return time.perf_counter() - start
