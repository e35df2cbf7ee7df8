"""What the local-model scorers share (:class:`LocalModelScorer`): the hardware profile
with explicit overrides, the model's id, lazy thread-safe loading on the model thread
(:mod:`rerankit.backends.local`) and the ONNX backend."""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from .._optional import missing_package, require
from .._threads import in_model_thread
from ..backends.choice import choose_backend
from ..backends.export import export_missing
from ..backends.hardware import device_problem
from ..backends.hub import hub_options, missing_folder
from ..backends.local import (
    LazyModel,
    missing_weights,
    model_label,
    model_lock,
    settings,
    shared_load,
    weights_fingerprint,
)
from ..backends.manifest import is_exported, read_manifest
from ..backends.onnx import load_onnx
from ..backends.pairs import lengths, offsets, unpadded
from ..errors import (
    ConfigError,
    MissingDependencyError,
    ModelLoadError,
    command_running,
    no_such_file,
)
from ..types import Document
from .base import ScoreBatch, valid_query, valid_unicode

__all__ = [
    "LocalModelOptions",
    "LocalModelScorer",
    "load_models",
    "load_problems",
    "models_run",
]

logger = logging.getLogger(__name__)


class LocalModelOptions(TypedDict, total=False):
    """How a local model runs (the keyword arguments every local-model scorer takes):
    ``profile`` (a :class:`~rerankit.backends.HardwareProfile` or an object with its attributes),
    overridden by ``device``, ``batch_size``, ``dtype``, ``max_length`` and ``threads`` when
    given; ``trust_remote_code`` for models that ship their own code; ``revision`` (a
    branch, tag or commit) for a model named by a hub id (None: ``main``; a local folder
    ignores it, with a warning in the log); ``backend``
    (``"auto"``, the default, ``"torch"`` or ``"onnx"``) and ``quantize`` (None or
    ``"int8"``, ONNX only) for the scorers that can run on ONNX Runtime (see
    :mod:`rerankit.backends.onnx`; ``auto`` runs the bundled model and exported folders on
    it where it is installed, anything else on torch: :mod:`rerankit.backends.choice`)."""

    profile: Any
    device: str | None
    batch_size: int | None
    dtype: str | None
    max_length: int | None
    threads: int | None
    trust_remote_code: bool
    revision: str | None
    backend: str
    quantize: str | None


def _revision(revision: Any, model: Any) -> str | None:
    """``revision`` checked: None, or a branch, tag or commit name for a model given by
    name (a loaded model has no revision to choose)."""
    if revision is None:
        return None
    if not isinstance(revision, str) or not revision or revision != revision.strip():
        raise ValueError(
            "revision must be a branch, tag or commit of the hub model (a non-empty name "
            f"without surrounding spaces, such as 'main' or a commit hash), got {revision!r}"
        )
    if not isinstance(model, str):
        raise ValueError(
            "revision applies to a model named by a hub id, not to a loaded model (load that "
            "revision yourself, or give the hub id)"
        )
    return revision


def _an_export_on_torch(model: str, backend: str) -> str:
    """Why torch cannot load the folder ``model`` written by ``rerankit export``."""
    manifest = read_manifest(model)
    source = manifest.get("source")
    kind = str(manifest.get("kind", "embedding")).replace("_", "-")
    return (
        f"{model!r} is an ONNX export (written by `rerankit export`: its rerankit_onnx.json "
        f"says a {kind} model), which runs on ONNX Runtime, not on torch as "
        f'backend={backend!r} asks: load it with backend="onnx" (or the default "auto"; '
        '--backend onnx on the command line, backend = "onnx" in a pipeline file)'
        + (f", or give torch the model it was exported from, {source!r}" if source else "")
    )


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
    #: the packages :meth:`_load` imports to load the model on torch
    torch_packages: tuple[str, ...] = ("torch", "sentence_transformers")

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
        revision: str | None = None,
        backend: str = "auto",
        quantize: str | None = None,
        name: str,
    ) -> None:
        revision = _revision(revision, model)
        self.profile = settings(
            profile,
            device=device,
            batch_size=batch_size,
            dtype=dtype,
            max_length=max_length,
            threads=threads,
        )
        chosen = choose_backend(
            backend, quantize, model, self.onnx_kind, max_length=self.profile.max_length
        )
        if chosen == "torch" and self.onnx_kind and isinstance(model, str) and is_exported(model):
            raise ConfigError(_an_export_on_torch(model, backend))
        if chosen == "onnx" and not self.onnx_kind:
            raise ValueError(f"{type(self).__name__} runs on torch only (backend='torch')")
        if chosen == "onnx" and not isinstance(model, str):
            raise ValueError("backend='onnx' takes a model id or folder, not a loaded model")
        self.name = name
        #: where the model runs, ``torch`` or ``onnx`` (``auto`` resolved: see
        #: :func:`~rerankit.backends.choice.choose_backend`)
        self.backend, self.quantize = chosen, quantize
        self.trust_remote_code = trust_remote_code
        #: the hub model's branch, tag or commit (None: ``main``)
        self.revision = revision
        self.model_id = model if isinstance(model, str) else None
        loader = (
            (self._load_onnx if chosen == "onnx" else self._load)
            if isinstance(model, str)
            else (lambda: self._checked(self._adopt(model)))
        )
        if isinstance(model, str):  # one load per process for the same model and settings
            own = loader
            loader = lambda: shared_load(self._load_key(), lambda: self._there(own))  # noqa: E731
        # quiet: switch off transformers' progress bars while a torch model loads (the ONNX
        # path never imports transformers)
        quiet = chosen == "torch"
        self._model: LazyModel[Any] = LazyModel(self.what, model, loader, quiet=quiet)

    def _there(self, load: Callable[[], Any]) -> Any:
        """``load()``, once the model's folder is known to be there: a path that is not (a
        volume not mounted, a misspelt folder) is said as such, before any package loading
        would need (without torch, a missing folder read as a hub id asked for torch); and,
        on torch, once its device is one this PyTorch has (:func:`device_problem`: a
        :class:`ConfigError`, said naming the model)."""
        if self.model_id is not None and missing_folder(self.model_id):
            raise ModelLoadError(
                no_such_file(self.model_id, f"the {self.what} to load", folder=True)
            )
        if self.backend == "torch" and (problem := device_problem(self.profile.device)):
            raise ConfigError(problem)
        if self.revision and self.model_id and Path(self.model_id).expanduser().exists():
            logger.warning(
                "%s %s: revision %r is ignored: %s is a local folder, which is read as it is "
                "(a folder wins over a hub id of the same spelling)",
                self.what,
                self.model_id,
                self.revision,
                self.model_id,
            )
        return self._checked(load())

    def _checked(self, model: Any) -> Any:
        """``model``, just loaded (or adopted), once a subclass has checked it can score
        with it: one it cannot is a :class:`ModelLoadError` naming the model."""
        return model

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
            self.revision,
            getattr(self, "max_length", None),
        )

    def _hub_options(self, model: str, what: str, python: str) -> dict[str, Any]:
        """The options loading ``model`` takes (:func:`hub_options`: the local cache alone
        while the hub does not answer), with this scorer's ``revision`` when it has one,
        for ``from_pretrained`` and sentence-transformers' constructors."""
        tune = self.onnx_kind == "embedding" and command_running() == "tune"  # its own flag
        found = hub_options(
            model,
            what,
            python,
            "--embedding-model {folder}" if tune else "-r {folder}",
            revision=self.revision,
            exportable=self.onnx_kind is not None,
        )
        return {**found, "revision": self.revision} if self.revision else found

    @property
    def revision_key(self) -> str:
        """``@revision=REV`` for a scorer pinned to a hub revision, else empty: part of the
        keys of what it caches (vectors of one revision are not another's)."""
        return f"@revision={self.revision}" if self.revision else ""

    def score_texts(self, query: str, texts: Sequence[str]) -> Any:  # pragma: no cover
        raise NotImplementedError

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> ScoreBatch:
        """``score_texts`` on the model thread (one for all local models: see
        :mod:`rerankit._threads`), with text a tokenizer cannot take cleaned and flagged on
        its document only (see :func:`~rerankit.scorers.base.valid_unicode`)."""
        flags: dict[int, list[str]] = {}
        warnings: list[str] = []
        texts = valid_unicode([d.text for d in docs], flags, warnings, [d.id for d in docs])
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

    def _sentence_transformers(self) -> Any:
        """sentence-transformers, which loads the model on torch; without it, the error
        says both ways out: install the extra, or (for a model ONNX Runtime can run) export
        it where torch is and load the export."""
        try:
            return require("sentence_transformers", type(self).__name__)
        except MissingDependencyError as exc:
            if not (self.onnx_kind and self.model_id):
                raise
            raise MissingDependencyError(self._or_export(str(exc))) from exc

    def _or_export(self, said: str) -> str:
        """``said`` (a package torch loading needs is missing), with the way out without
        torch for a model ONNX Runtime can run. Short: the service cuts it at MESSAGE_CHARS."""
        if not (self.onnx_kind and self.model_id):
            return said
        export = f"`rerankit export {self.model_id} --out FOLDER` where torch is"
        if self.onnx_kind == "embedding" and command_running() == "tune":  # its own flag
            return f"{said}; or, without torch, give --embedding-model FOLDER after {export}"
        return f"{said}; or, without torch, load FOLDER on ONNX Runtime after {export}"

    def load_problem(self) -> str | None:
        """Why this scorer's model cannot load in this install, found without loading it
        (``rerankit check`` says it): on ONNX Runtime, a model with no export here that
        this install cannot export (:func:`~rerankit.backends.export.export_missing`, as
        loading says it); on torch, a package loading imports that is not installed (as
        loading says it). None when nothing here stops it (a hub model may yet fail to
        download). A model folder that holds no weights (only its config and tokenizer)
        cannot load in any install: said, naming the files looked for; so is a device
        this PyTorch cannot run on (``cuda`` on a CPU build: :func:`device_problem`)."""
        if self.model_id is None or missing_folder(self.model_id):
            return None  # a model the caller loaded; a folder not here (check warns of it)
        if (missing := missing_weights(self.model_id, self.what)) is not None:
            return missing
        if self.backend == "onnx":
            assert self.onnx_kind is not None
            for module in ("onnxruntime", "tokenizers"):
                if importlib.util.find_spec(module) is None:
                    return missing_package(module, f"{type(self).__name__} on backend 'onnx'")
            return export_missing(
                self.model_id,
                kind=self.onnx_kind,
                quantize=self.quantize,
                max_length=self.profile.max_length,
                revision=self.revision,
            )
        for module in self.torch_packages:
            if importlib.util.find_spec(module) is None:
                return self._or_export(missing_package(module, type(self).__name__))
        problem = device_problem(self.profile.device)
        return None if problem is None else f"{self.what} {self.model_id!r}: {problem}"

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
            revision=self.revision,
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


def _local(reranker: Any) -> list[LocalModelScorer]:
    return [s for s in reranker.scorers() if isinstance(s, LocalModelScorer)]


def models_run(reranker: Any) -> list[str]:
    """What local models ``reranker`` runs, and where, without loading them: ``"MODEL on
    onnx"``, ``"MODEL on onnx-int8"`` (its int8 file) or ``"MODEL on torch"`` (the backend
    ``auto`` resolved to; the service's ``/info`` names them the same) once each, in order."""
    said = (
        f"{s.model_id or 'a model loaded by the caller'} on {s.backend}"
        + (f"-{s.quantize}" if getattr(s, "quantize", None) else "")
        for s in _local(reranker)
    )
    return list(dict.fromkeys(said))


def load_problems(reranker: Any) -> list[str]:
    """Why each local model ``reranker`` runs cannot load in this install (see
    :meth:`LocalModelScorer.load_problem`), once each; empty when none is stopped."""
    return list(dict.fromkeys(p for s in _local(reranker) if (p := s.load_problem())))
