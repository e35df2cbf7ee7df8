"""Local models on ONNX Runtime: export once (with torch), then serve without torch.

:func:`export` turns a sentence-transformers embedding model or a cross-encoder into a
folder: ``model.onnx`` (float32, exported with ``torch.onnx``), optionally
``model.int8.onnx`` (ONNX Runtime's dynamic int8 quantisation, :mod:`.quantize`), the
tokenizer as ``tokenizer.json`` and a manifest ``rerankit_onnx.json`` (kind, pooling,
normalisation, maximum length, labels). :class:`OnnxModel` runs such a folder with
``onnxruntime`` and ``tokenizers`` only (extra ``onnx``): mean/CLS/max pooling and
normalisation as the sentence-transformers model defines them, inputs sorted by token length
and padded per batch. ``EmbeddingScorer(..., backend="onnx")`` and
``CrossEncoderScorer(..., backend="onnx")`` use it: given a folder they load it; given a hub
id or a model directory they export it once into the rerankit cache directory
(``onnx/``), keyed by model, kind and maximum length.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import install_hint, require
from ..cache import default_cache_dir
from ..errors import MissingDependencyError, ModelLoadError
from .bundled import resolve_source
from .hub import hub_options
from .pairs import PairEncoder, lengths, offsets, padded_batches, unpadded
from .quantize import SMOOTH_ALPHA, calibration_feeds, cross_encoder_int8, quantize_int8

__all__ = [
    "BACKENDS",
    "MANIFEST",
    "QUANTIZATIONS",
    "OnnxModel",
    "cached_export",
    "export",
    "is_exported",
    "load_onnx",
    "onnx_cache_root",
]

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx")
QUANTIZATIONS = (None, "int8")
MANIFEST = "rerankit_onnx.json"
KINDS = ("embedding", "cross_encoder")
_FILES = {None: "model.onnx", "int8": "model.int8.onnx"}
_lock = threading.Lock()  # one export at a time in a process


def check_backend(backend: str, quantize: str | None) -> None:
    """``ValueError`` unless ``backend`` and ``quantize`` name a supported combination."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
    if quantize is not None and backend != "onnx":
        raise ValueError("quantize='int8' needs backend='onnx'")


def is_exported(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`export`."""
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of an exported folder."""
    try:
        return json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{path}: not a rerankit ONNX export ({exc})") from exc


# --- export (needs torch) -------------------------------------------------------------------


def _embedding_parts(model: str, trust_remote_code: bool) -> tuple[Any, Any, dict[str, Any]]:
    st = require("sentence_transformers", "exporting an embedding model")
    source = resolve_source(model)
    loaded = st.SentenceTransformer(
        source,
        device="cpu",
        trust_remote_code=trust_remote_code,
        **hub_options(source, "embedding model", "rerankit export {folder}"),
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


def _cross_encoder_parts(model: str, trust_remote_code: bool) -> tuple[Any, Any, dict[str, Any]]:
    st = require("sentence_transformers", "exporting a cross-encoder")
    loaded = st.CrossEncoder(
        model,
        device="cpu",
        trust_remote_code=trust_remote_code,
        **hub_options(model, "cross-encoder", "rerankit export {folder} --kind cross_encoder"),
    )
    hf = loaded.model.eval()
    info = {
        "num_labels": int(hf.config.num_labels),
        "max_length": int(
            getattr(loaded, "max_seq_length", None) or loaded.tokenizer.model_max_length
        ),
    }
    if info["max_length"] > 100_000:  # the tokenizer's "no limit" sentinel
        info["max_length"] = int(getattr(hf.config, "max_position_embeddings", 512))
    return hf, loaded.tokenizer, info


def export(
    model: str,
    out: str | Path,
    *,
    kind: str = "embedding",
    quantize: str | None = None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
    opset: int = 17,
    smooth_alpha: float | None = SMOOTH_ALPHA,
    per_token: bool = True,
) -> Path:
    """Export ``model`` (hub id or directory; ``kind`` ``embedding`` or ``cross_encoder``)
    to the folder ``out`` and return it. Needs the ``torch`` and ``onnx`` extras; the result
    runs with the ``onnx`` extra alone. ``quantize="int8"`` also writes
    ``model.int8.onnx``; ``max_length`` caps the tokens per input (the model's own limit by
    default). A cross-encoder's int8 file is quantised after :func:`.quantize.smooth`
    with ``smooth_alpha`` (calibrated on word-frequency pseudo-text; ``None``: not
    smoothed) and, with ``per_token``, with one scale per token
    (:func:`.quantize.quantize_int8_per_token`; ``False``: ONNX Runtime's one scale per
    tensor); both keep its order closer to float32's. ``smooth_alpha=None,
    per_token=False`` is plain dynamic int8."""
    kind = kind.replace("-", "_")  # cross-encoder and cross_encoder alike
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    check_backend("onnx", quantize)
    torch = require("torch", "exporting a model to ONNX")
    require("onnx", "exporting a model to ONNX")
    parts = _embedding_parts if kind == "embedding" else _cross_encoder_parts
    hf, tokenizer, info = parts(model, trust_remote_code)
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

    out = Path(out)
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
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ModelLoadError(f"{model}: needs a fast (Rust) tokenizer to run without torch")
    backend.save(str(out / "tokenizer.json"))
    manifest = {
        "format": 1,
        "kind": kind,
        "source": model,
        "inputs": names,
        "output": output,
        "files": files,
        "pad_token_id": int(tokenizer.pad_token_id or 0),
        **info,
    }
    manifest.update(int8)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    logger.info("exported %s (%s) to %s", model, kind, out)
    return out


def onnx_cache_root() -> Path:

    return default_cache_dir() / "onnx"


def cached_export(
    model: str,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
) -> Path:
    """The export of ``model`` in the cache directory, made on first use (needs torch then)."""
    key = json.dumps([model, kind, max_length], separators=(",", ":"))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/"))[-60:]
    folder = onnx_cache_root() / f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    with _lock:
        manifest = folder / MANIFEST
        if manifest.is_file() and (quantize is None or "int8" in read_manifest(folder)["files"]):
            return folder
        if importlib.util.find_spec("torch") is None:
            raise MissingDependencyError(
                f"backend 'onnx' for {model!r} needs an exported folder, and exporting needs "
                f"the optional package 'torch': run `rerankit export {model} --out DIR` where "
                f'torch is installed and name DIR as the model (model = "DIR", or '
                f"`rerankit serve --model DIR`), or {install_hint('torch')}"
            )
        logger.info("exporting %s to ONNX once (cached in %s)", model, folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".export-"))
        try:
            export(
                model,
                staging,
                kind=kind,
                quantize="int8",  # both files: either can be asked for later
                max_length=max_length,
                trust_remote_code=trust_remote_code,
            )
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


# --- runtime (onnxruntime + tokenizers) ------------------------------------------------------


class OnnxModel:
    """An exported folder on ONNX Runtime. ``encode`` (embedding models) and ``predict``
    (cross-encoders) take the arguments sentence-transformers' methods take, so the scorers
    use either backend the same way. Inputs are sorted by token length and padded per
    batch; ``threads`` sets ONNX Runtime's intra-op threads (None: its default, one per
    core)."""

    def __init__(
        self,
        path: str | Path,
        *,
        quantize: str | None = None,
        threads: int | None = None,
        max_length: int | None = None,
    ) -> None:
        ort = require("onnxruntime", "running an ONNX model")
        tokenizers = require("tokenizers", "running an ONNX model")
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        flavour = "int8" if quantize == "int8" else "float32"
        file = self.manifest["files"].get(flavour)
        if file is None:
            raise ModelLoadError(
                f"{self.path} has no {flavour} model; export it with "
                f"`rerankit export ... {'--quantize int8 ' if quantize else ''}--out {self.path}`"
            )
        self.kind = self.manifest["kind"]
        self.quantize = quantize
        self.max_seq_length = int(max_length or self.manifest["max_length"])
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(
                str(self.path / file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types
            raise ModelLoadError(f"{self.path / file}: {exc}") from exc
        self._tokenizer = tokenizers.Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._spans = unpadded(self._tokenizer)  # whole texts, for token_spans
        self.inputs = list(self.manifest["inputs"])
        self.pair_encoder = (
            PairEncoder(self._spans, self.max_seq_length) if self.kind == "cross_encoder" else None
        )
        self.tokenizer = None  # no Hugging Face tokenizer here: see count_tokens

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Each text's tokens (no special tokens, no length cap) as character offsets."""
        return offsets(self._spans, texts)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text takes (no special tokens, no length cap)."""
        return lengths(self._spans, texts)

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens each text takes (capped at the maximum length), summed."""
        return sum(len(e.ids) for e in self._tokenizer.encode_batch(list(texts)))

    def _run(self, encodings: list[Any], batch_size: int) -> np.ndarray:
        outputs: list[np.ndarray | None] = [None] * len(encodings)
        pad = int(self.manifest.get("pad_token_id", 0))
        for positions, feed in padded_batches(encodings, batch_size, pad):
            (result,) = self.session.run(None, {k: feed[k] for k in self.inputs})
            if self.kind == "embedding":
                result = self._pool(result, feed["attention_mask"])
            for row, i in enumerate(positions):
                outputs[i] = result[row]
        return np.stack(outputs) if outputs else np.zeros((0, 0), dtype=np.float32)

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        pooling = self.manifest.get("pooling", "mean")
        if pooling == "cls":
            out = hidden[:, 0]
        elif pooling == "max":
            out = np.where(mask[..., None] > 0, hidden, -np.inf).max(axis=1)
        else:
            weights = mask[..., None].astype(hidden.dtype)
            out = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.manifest.get("normalize"):
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.clip(norms, 1e-12, None)
        return out.astype(np.float32)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        prompt: str | None = None,
        **_: Any,
    ) -> np.ndarray:
        """Sentence embeddings, as ``SentenceTransformer.encode`` gives them."""
        if self.kind != "embedding":
            raise TypeError(f"{self.path} is a {self.kind}, not an embedding model")
        texts = [f"{prompt}{t}" if prompt else t for t in sentences]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._run(self._tokenizer.encode_batch(texts), batch_size)

    def predict(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, **_: Any
    ) -> np.ndarray:
        """Raw logits per (query, document) pair, as ``CrossEncoder.predict`` gives them
        with an identity activation: shape ``(n,)`` for one label, ``(n, labels)`` else.
        Each query is kept whole and its documents cut to fit (:mod:`.pairs`)."""
        if self.pair_encoder is None:
            raise TypeError(f"{self.path} is a {self.kind}, not a cross-encoder")
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        encodings: list[Any] = [None] * len(pairs)
        for query, positions in by_query.items():
            found = self.pair_encoder.encode(query, [pairs[i][1] for i in positions])
            for i, e in zip(positions, found.encodings, strict=True):
                encodings[i] = e
        return self.predict_encoded(encodings, batch_size)

    def predict_encoded(self, encodings: list[Any], batch_size: int = 32) -> np.ndarray:
        """Raw logits for pairs encoded by :attr:`pair_encoder` (shapes as :meth:`predict`)."""
        if self.kind != "cross_encoder":
            raise TypeError(f"{self.path} is a {self.kind}, not a cross-encoder")
        if not encodings:
            return np.zeros(0, dtype=np.float32)
        logits = self._run(encodings, batch_size)
        return logits[:, 0] if logits.shape[1] == 1 else logits


def load_onnx(
    model: str,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    threads: int | None = None,
    trust_remote_code: bool = False,
) -> OnnxModel:
    """An :class:`OnnxModel` for ``model``: an exported folder as it is, anything else
    exported once into the cache first (which needs torch)."""
    if is_exported(model):
        folder = Path(model)
        found = read_manifest(folder)["kind"]
        if found != kind:
            raise ModelLoadError(f"{model} holds a {found}, not a {kind}")
    else:
        folder = cached_export(
            model,
            kind=kind,
            quantize=quantize,
            max_length=max_length,
            trust_remote_code=trust_remote_code,
        )
    return OnnxModel(folder, quantize=quantize, threads=threads, max_length=max_length)
