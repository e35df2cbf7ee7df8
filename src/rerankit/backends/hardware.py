"""Where and how local models run: device, batch size, dtype and maximum input length.

``HardwareProfile`` plays the part of the compatible reranker service's memory profile.
``device="auto"`` picks CUDA when present (half precision there: bfloat16 where the GPU
supports it, else float16), then Apple's MPS, then the CPU (float32).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from .._optional import require
from .._words import counted

__all__ = ["HardwareProfile", "attention_kernels", "device_problem"]

logger = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = ("auto", "float32", "float16", "bfloat16")
DEFAULT_BATCH = 32
PAIRS_CPU_BATCH = 8  # benchmarks/speed/cross_encoder.py --sweep
PAIRS_CUDA_BATCH = 128  # benchmarks/speed/gpu.py --parts batch


@dataclass(frozen=True)
class HardwareProfile:
    """Settings for running a local model.

    ``device``: ``"auto"``, ``"cpu"``, ``"cuda"`` (or ``"cuda:1"``) or ``"mps"``.
    ``batch_size``: inputs per forward pass (None: chosen for the device and the kind of
    model, see :meth:`resolve_batch_size`). ``dtype``: ``"auto"``, ``"float32"``,
    ``"float16"`` or ``"bfloat16"``. ``max_length``: tokens per input (None: the model's own
    limit). ``threads``: CPU threads for inference on the ONNX backend (None: one per core).
    """

    device: str = "auto"
    batch_size: int | None = None
    dtype: str = "auto"
    max_length: int | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.device, str) or self.device.split(":")[0] not in DEVICES:
            raise ValueError(
                f"device must be one of {', '.join(DEVICES)} (or 'cuda:N'), got {self.device!r}"
            )
        if self.batch_size is not None and (
            isinstance(self.batch_size, bool)
            or not isinstance(self.batch_size, int)
            or self.batch_size < 1
        ):
            raise ValueError(
                f"batch_size must be a positive integer or None, got {self.batch_size!r}"
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.max_length is not None and (
            isinstance(self.max_length, bool)
            or not isinstance(self.max_length, int)
            or self.max_length < 1
        ):
            raise ValueError(
                f"max_length must be a positive integer or None, got {self.max_length!r}"
            )
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ValueError(f"threads must be a positive integer or None, got {self.threads!r}")

    def with_options(self, **changes: Any) -> HardwareProfile:
        """A copy with the given fields changed (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def resolve_device(self) -> str:
        """The concrete device: ``auto`` becomes ``cuda``, ``mps`` or ``cpu``."""
        if self.device != "auto":
            return self.device
        torch = require("torch", "running local models")
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"

    def resolve_batch_size(self, kind: str = "embedding", device: str | None = None) -> int:
        """The batch size: the one given, else chosen for ``device`` (the profile's own by
        default) and ``kind``: ``"pairs"`` (a cross-encoder's query-document pairs),
        ``"prompts"`` (a causal LM's) or ``"embedding"``.

        On a CPU, pairs and prompts go 8 at a time (measured: fewer padded tokens and a
        batch that stays in cache make batches of 8 the fastest, 1.2-1.4x batches of 32).
        On a CUDA GPU a cross-encoder's pairs go 128 at a time (measured on an H200: 1.06-2.4x
        the documents per second of batches of 32, most on short passages, where a batch of
        32 leaves the GPU waiting for the next kernel launch); a causal LM's prompts 32,
        since its models are larger and a batch that runs out of memory is only halved
        afterwards. Embeddings: 32 everywhere."""
        if self.batch_size is not None:
            return self.batch_size
        if kind not in ("pairs", "prompts"):
            return DEFAULT_BATCH
        where = device or self.resolve_device()  # ("auto" asks torch)
        if where == "cpu":
            return PAIRS_CPU_BATCH
        if kind == "pairs" and where.startswith("cuda"):
            return PAIRS_CUDA_BATCH
        return DEFAULT_BATCH

    def resolve_dtype(self, device: str | None = None) -> Any:
        """The torch dtype: ``auto`` is half precision on CUDA, float32 elsewhere."""
        torch = require("torch", "running local models")
        device = device or self.resolve_device()
        if self.dtype == "auto":
            if device.startswith("cuda"):
                return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            return torch.float32
        return getattr(torch, self.dtype)

    @classmethod
    def from_object(cls, profile: Any) -> HardwareProfile:
        """A profile from a HardwareProfile, None (defaults), a mapping, or any object with
        some of the attributes ``device``, ``batch_size``, ``dtype``, ``max_length``,
        ``threads`` (such as
        the compatible reranker service's memory profile)."""
        if profile is None:
            return cls()
        if isinstance(profile, cls):
            return profile
        names = ("device", "batch_size", "dtype", "max_length", "threads")
        if isinstance(profile, dict):
            unknown = sorted(set(profile) - set(names))
            if unknown:
                raise ValueError(f"unknown hardware profile fields: {unknown}")
            return cls(**profile)
        found = {n: getattr(profile, n) for n in names if getattr(profile, n, None) is not None}
        return cls(**found)


def device_problem(device: str) -> str | None:
    """Why the installed PyTorch cannot run a model on ``device`` (``cuda`` on a CPU build,
    or with no GPU to see; ``cuda:N`` past the GPUs it sees; ``mps`` away from an Apple
    GPU), or None (``auto``, ``cpu``, a device it has, or no torch: said where it loads).
    Imports torch only for ``cuda`` and ``mps``."""
    kind = device.split(":")[0]
    if kind not in ("cuda", "mps") or importlib.util.find_spec("torch") is None:
        return None
    import torch

    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return None
        return (
            f"device {device!r} asked for but this PyTorch has no MPS (Apple GPU) here; set "
            'device = "cpu"'
        )
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return (
            f"device {device!r} asked for but this PyTorch ({torch.__version__}) has no CUDA "
            '(a CPU build); set device = "cpu" or install a CUDA build'
        )
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.split(":")[1]) if ":" in device else 0
    if index < count:
        return None
    sees = (
        f"sees {counted(count, 'CUDA GPU')}"
        if count
        else "sees no CUDA GPU (no GPU or driver here)"
    )
    return f'device {device!r} asked for but PyTorch {sees}; set device = "cpu" or "auto"'


@contextlib.contextmanager
def attention_kernels(device: Any) -> Iterator[None]:
    """Around a forward pass of a model on ``device``: on CUDA, PyTorch's fused attention
    without its cuDNN kernel (flash, memory-efficient or plain attention instead).

    Why: on Hopper GPUs PyTorch prefers cuDNN's attention, which builds an execution plan
    for every new input shape. Reranking pads each batch to its longest pair, so nearly
    every request brings new shapes: on an H200 a MiniLM-shaped cross-encoder reranking
    100 passages it had not seen took a median 119 ms with cuDNN's attention and 33 ms
    without (``benchmarks/speed/gpu.py``, 32 pairs a pass). The other kernels need no plan.
    Elsewhere (CPU, MPS, ONNX Runtime) this does nothing."""
    if not str(device).startswith("cuda"):
        yield
        return
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch before 2.3: no cuDNN attention to leave out
        yield
        return
    chosen = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(chosen):
        yield
