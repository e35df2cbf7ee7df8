"""Exporting local models to ONNX (needs the ``torch`` and ``onnx`` extras), and the cache
of exports made on first use.

:func:`export` turns a sentence-transformers embedding model or a cross-encoder into a
folder: ``model.onnx`` (float32, exported with ``torch.onnx``), optionally
``model.int8.onnx`` (ONNX Runtime's dynamic int8 quantisation, :mod:`.quantize`), the
tokenizer as ``tokenizer.json`` and a manifest ``rerankit_onnx.json`` (kind, pooling,
normalisation, maximum length, labels); the weights of each ``.onnx`` file sit beside it
(``model.onnx.data``, ...) so that ONNX Runtime maps them rather than copies them.
:class:`~.onnx.OnnxModel` runs the folder without torch.

:func:`cached_export` keeps one export per model, kind and maximum length in the rerankit
cache directory (``onnx/``; a folder by its path and files, a hub id by its commit:
:mod:`.export_keys`), made on first use: written into a staging folder beside it and
renamed into place when complete, under a file lock, so processes that ask at once make it
once and no process ever reads a half-written export.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

from .._optional import require
from ..errors import (
    ConfigError,
    MissingDependencyError,
    ModelLoadError,
    keyword_flag,
    said_for,
)
from .bundled import BUNDLED_NAMES, resolve_source
from .detect import check_tokenizer, model_kind
from .export_cache import (
    CACHE_LAYOUT,
    CACHED_FOR,
    LOCK_TIMEOUT,
    cache_source,
    can_export,
    export_complete,
    export_folder,
    export_lock,
    export_missing,
    export_needed,
    onnx_cache_root,
    publish_export,
    remove_stale_exports,
)
from .hub import cache_only_model_options, hub_options
from .local import quiet_loading, without_new_model_line
from .manifest import KINDS, MANIFEST, check_backend, read_manifest
from .quantize import SMOOTH_ALPHA, calibration_feeds, cross_encoder_int8, quantize_int8

__all__ = [
    "CACHE_LAYOUT",
    "LOCK_TIMEOUT",
    "OPSET",
    "cached_export",
    "can_export",
    "export",
    "export_folder",
    "export_kind",
    "export_missing",
    "export_needed",
    "onnx_cache_root",
    "weights_beside",
]

logger = logging.getLogger(__name__)

_FILES = {None: "model.onnx", "int8": "model.int8.onnx"}


def _hub_options(model: str, what: str, revision: str | None = None) -> dict[str, Any]:
    """:func:`.hub.hub_options` for an export: its hint names the folder to export instead."""
    command, python = "rerankit export {folder}", 'export("{folder}", out)'
    return hub_options(
        model, what, python, command, pipeline_file=False, revision=revision, exportable=False
    )


def _embedding_parts(
    model: str, trust_remote_code: bool, revision: str | None
) -> tuple[Any, Any, dict[str, Any]]:
    st = require("sentence_transformers", "exporting an embedding model")
    source = resolve_source(model)
    hub = _hub_options(source, "embedding model", revision)
    loaded = st.SentenceTransformer(
        source,
        device="cpu",
        trust_remote_code=trust_remote_code,
        revision=revision,
        model_kwargs=cache_only_model_options(hub),
        **hub,
    )
    modules = list(loaded)
    transformer = modules[0]
    pooling = "mean"
    normalize = False
    for module in modules[1:]:
        name = type(module).__name__
        if name == "Pooling":
            pooling = str(getattr(module, "pooling_mode", "mean")).lower()
            if pooling not in ("mean", "cls", "max"):
                raise ModelLoadError(
                    f"{model}: {pooling} pooling has no ONNX path here (mean, cls, max)"
                )
        elif name == "Normalize":
            normalize = True
        else:
            raise ModelLoadError(
                f"{model}: module {name} after the transformer has no ONNX export here "
                "(supported: Pooling, Normalize)"
            )
    info = {
        "pooling": pooling,
        "normalize": normalize,
        "max_length": int(loaded.max_seq_length or 512),
    }
    return transformer.auto_model.eval(), loaded.tokenizer, info


def _cross_encoder_parts(
    model: str, trust_remote_code: bool, revision: str | None
) -> tuple[Any, Any, dict[str, Any]]:
    st = require("sentence_transformers", "exporting a cross-encoder")
    hub = _hub_options(model, "cross-encoder", revision)
    with without_new_model_line():  # a save_pretrained folder's weights are used
        loaded = st.CrossEncoder(
            model,
            device="cpu",
            trust_remote_code=trust_remote_code,
            revision=revision,
            model_kwargs=cache_only_model_options(hub),
            **hub,
        )
    hf = loaded.model.eval()
    info = {
        "num_labels": int(hf.config.num_labels),
        "id2label": {str(k): str(v) for k, v in (hf.config.id2label or {}).items()},
        "max_length": int(
            getattr(loaded, "max_seq_length", None) or loaded.tokenizer.model_max_length
        ),
    }
    if info["max_length"] > 100_000:  # the tokenizer's "no limit" sentinel
        info["max_length"] = int(getattr(hf.config, "max_position_embeddings", 512))
    return hf, loaded.tokenizer, info


def export_kind(model: str, kind: str | None = None) -> str:
    """``kind`` as the registry spells it (``cross-encoder`` -> ``cross_encoder``), or, when
    None, what ``model`` is, told from its files as ``-r MODEL`` tells it
    (:func:`.detect.model_kind`: a sequence-classification architecture is a
    cross-encoder, sentence-transformers files an embedding model). A model that is
    neither, or cannot be told, is a :class:`ConfigError` saying which kind to name."""
    if kind is not None:
        kind = kind.replace("-", "_")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        return kind
    if model in BUNDLED_NAMES:
        return "embedding"
    name = said_for(
        f"{keyword_flag('kind', 'embedding')} or 'cross_encoder'",
        "--kind embedding or --kind cross-encoder",
    )
    _hub_options(model, "model")  # fails at once, saying what to do, offline
    try:
        found, options = model_kind(model)
    except ConfigError:
        raise ConfigError(
            f"cannot tell whether {model!r} is an embedding model or a cross-encoder: no "
            "sentence-transformers files and no sequence-classification architecture in "
            f"its config.json; name it with {name}"
        ) from None
    if options.get("backend") == "onnx":
        raise ConfigError(f"{model!r} is an ONNX export already: load it with backend='onnx'")
    if found not in KINDS:
        raise ConfigError(
            f"{model!r} is a {found} model: export writes embedding models and "
            f"cross-encoders only ({name} if it is one of them)"
        )
    return found


#: the ONNX opset an export targets unless told
OPSET = 17


def export(
    model: str,
    out: str | Path,
    *,
    kind: str | None = None,
    quantize: str | None = None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
    opset: int = OPSET,
    smooth_alpha: float | None = SMOOTH_ALPHA,
    per_token: bool = True,
) -> Path:
    """Export ``model`` (hub id or directory; ``kind`` ``embedding`` or ``cross_encoder``,
    by default what the model's files say: :func:`export_kind`) to the folder ``out`` and
    return it. Needs the ``torch`` and ``onnx`` extras; the result
    runs with the ``onnx`` extra alone. ``quantize="int8"`` also writes
    ``model.int8.onnx``; ``max_length`` caps the tokens per input (the model's own limit by
    default); ``revision``: a hub id's branch, tag or commit (ignored for a folder). A
    cross-encoder's int8 file is quantised after :func:`.quantize.smooth`
    with ``smooth_alpha`` (calibrated on word-frequency pseudo-text; ``None``: not
    smoothed) and, with ``per_token``, with one scale per token
    (:func:`.quantize.quantize_int8_per_token`; ``False``: ONNX Runtime's one scale per
    tensor); both keep its order closer to float32's. ``smooth_alpha=None,
    per_token=False`` is plain dynamic int8; either, changed, without ``quantize="int8"``
    or for an embedding model (whose int8 file is always dynamic int8) is a ValueError."""
    check_backend("onnx", quantize)
    kind = export_kind(model, kind)
    _refuse_unused_int8(kind, quantize, smooth_alpha=smooth_alpha, per_token=per_token)
    out = _write_export(
        model,
        Path(out),
        kind=kind,
        quantize=quantize,
        max_length=max_length,
        trust_remote_code=trust_remote_code,
        revision=revision,
        opset=opset,
        smooth_alpha=smooth_alpha,
        per_token=per_token,
    )
    logger.info("exported %s (%s) to %s", model, kind, out)
    return out


def _refuse_unused_int8(kind: str, quantize: str | None, **options: Any) -> None:
    """A ValueError naming each of :func:`export`'s int8 ``options`` (``smooth_alpha``,
    ``per_token``) changed from its default where it would shape nothing."""
    defaults = {"smooth_alpha": SMOOTH_ALPHA, "per_token": True}
    changed = [f"{k}={v!r}" for k, v in options.items() if v != defaults[k]]
    if not changed or (quantize == "int8" and kind == "cross_encoder"):
        return
    why = (
        "without quantize='int8'"
        if quantize != "int8"
        else "for an embedding model (its int8 file is ONNX Runtime's dynamic int8)"
    )
    raise ValueError(
        f"{', '.join(changed)} {'has' if len(changed) == 1 else 'have'} no effect {why}: "
        "smooth_alpha and per_token shape a cross-encoder's int8 weights; leave "
        f"{'it' if len(changed) == 1 else 'them'} out"
    )


def _write_export(
    model: str,
    out: Path,
    *,
    kind: str,
    quantize: str | None,
    max_length: int | None,
    trust_remote_code: bool,
    revision: str | None,
    opset: int,
    smooth_alpha: float | None,
    per_token: bool,
) -> Path:
    """:func:`export`'s files, written into ``out`` (a staging folder when the cache makes
    them: the log names the folder they end in, not this one)."""
    check_backend("onnx", quantize)
    check_tokenizer(model, "cross-encoder" if kind == "cross_encoder" else "embedding model")
    torch = require("torch", "exporting a model to ONNX")
    require("onnx", "exporting a model to ONNX")
    parts = _embedding_parts if kind == "embedding" else _cross_encoder_parts
    with quiet_loading():  # no weight-loading bar: the library never prints
        hf, tokenizer, info = parts(model, trust_remote_code, revision)
    if max_length is not None:
        info["max_length"] = int(max_length)
    names = ["input_ids", "attention_mask"]
    sample = tokenizer(
        ["an example", "a second, longer example"], padding=True, return_tensors="pt"
    )
    if "token_type_ids" in sample:
        names.append("token_type_ids")
    output = "last_hidden_state" if kind == "embedding" else "logits"

    class _Wrapped(torch.nn.Module):  # keyword inputs, one tensor out
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            result = self.inner(**dict(zip(names, inputs, strict=True)))
            return getattr(result, output)

    out.mkdir(parents=True, exist_ok=True)

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's notes on tracing
        torch.onnx.export(
            _Wrapped(hf).eval(),
            tuple(sample[n] for n in names),
            str(out / _FILES[None]),
            input_names=names,
            output_names=[output],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, output]}
            if kind == "embedding"
            else {**{n: {0: "batch", 1: "sequence"} for n in names}, output: {0: "batch"}},
            opset_version=opset,
            dynamo=False,
        )
    files = {"float32": _FILES[None]}
    int8: dict[str, Any] = {}  # what the manifest records about the int8 file
    if quantize == "int8":
        source, target = out / _FILES[None], out / _FILES["int8"]
        if kind == "cross_encoder":
            feeds = calibration_feeds(tokenizer, names, int(info["max_length"]))
            int8 = cross_encoder_int8(source, target, feeds, smooth_alpha, per_token)
        else:
            quantize_int8(source, target)
        files["int8"] = _FILES["int8"]
    for file in files.values():
        weights_beside(out / file)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ModelLoadError(f"{model}: needs a fast (Rust) tokenizer to run without torch")
    backend.save(str(out / "tokenizer.json"))
    manifest = {
        "format": 1,
        "kind": kind,
        "source": model,
        **({"revision": revision} if revision else {}),
        "inputs": names,
        "output": output,
        "files": files,
        "pad_token_id": int(tokenizer.pad_token_id or 0),
        **info,
    }
    manifest.update(int8)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return out


def weights_beside(path: Path) -> None:
    """Re-save the ONNX file ``path`` with its weights in ``<name>.data`` beside it (unless
    they are in external files already): ONNX Runtime then maps that file instead of
    copying every weight out of the protobuf, so a session starts sooner (for the bundled
    MiniLM, 0.05 s of CPU instead of 0.15 here). The numbers are the same."""
    onnx = require("onnx", "exporting a model to ONNX")
    if any(
        t.data_location == onnx.TensorProto.EXTERNAL
        for t in onnx.load(str(path), load_external_data=False).graph.initializer
    ):
        return
    model = onnx.load(str(path))
    staging = path.with_name(f"{path.name}.partial")
    onnx.save_model(
        model,
        str(staging),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=f"{path.name}.data",
        size_threshold=1024,
    )
    # onnx writes the data file readable by its owner only: as readable as the model
    os.chmod(path.with_name(f"{path.name}.data"), staging.stat().st_mode & 0o777)
    os.replace(staging, path)


def cached_export(
    model: str,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
) -> Path:
    """The export of ``model`` in the cache directory (:func:`export_folder`: a folder by
    its resolved path and its files, a hub id by the commit ``revision`` resolves to), made
    on first use (which needs torch): both the float32 and the int8 weights, written into a
    staging folder and renamed into place when complete, under a file lock (processes that
    ask at once wait for one export; none reads a partial one). The export of a folder's
    earlier files (it was saved again since) is removed then."""
    folder = export_folder(model, kind=kind, max_length=max_length, revision=revision)
    if export_complete(folder, quantize):  # the usual case: no lock, no torch
        return folder
    if importlib.util.find_spec("torch") is None:
        raise MissingDependencyError(export_needed(model, kind))
    made_of = {**cache_source(model, revision), "kind": kind, "max_length": max_length}
    source = made_of["source"] if "files" in made_of else model  # a folder: its full path
    folder.parent.mkdir(parents=True, exist_ok=True)
    with export_lock(folder):
        if export_complete(folder, quantize):  # another process made it while this one waited
            return folder
        # (``exporting``: what the CLI reads to say it on stderr before the wait)
        logger.info(
            "exporting %s to ONNX once (cached in %s)", model, folder, extra={"exporting": model}
        )
        staging = folder.with_name(f".{folder.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        staging.mkdir()
        try:
            with quiet_loading(warnings=False):
                _write_export(
                    source,
                    staging,
                    kind=export_kind(source, kind),
                    quantize="int8",  # both files: either can be asked for later
                    max_length=max_length,
                    trust_remote_code=trust_remote_code,
                    revision=made_of.get("revision") or revision,  # the commit keyed
                    opset=OPSET,
                    smooth_alpha=SMOOTH_ALPHA,
                    per_token=True,
                )
            manifest = read_manifest(staging)
            manifest[CACHED_FOR] = made_of
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
            publish_export(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        # (the folder it is read from: the staging folder it was written in is gone)
        logger.info("exported %s (%s) to %s", model, kind, folder)
    if "files" in made_of:
        remove_stale_exports(folder, made_of)
    return folder
