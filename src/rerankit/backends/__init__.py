"""Where local models come from and run: the bundled all-MiniLM-L6-v2 (:mod:`.bundled`),
the device, dtype and batch size they run with (:mod:`.hardware`), lazy loading shared per
process with its lock and out-of-memory splitting (:mod:`.local`), and ONNX export,
quantisation and runtime (:mod:`.onnx`). Never a scorer: the scorers that run local models
are in :mod:`rerankit.scorers` (:mod:`rerankit.scorers.local`)."""

from .hardware import HardwareProfile

__all__ = ["HardwareProfile"]
