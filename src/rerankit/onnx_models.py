"""Deprecated: moved to :mod:`rerankit.backends.onnx` (this name goes in the next release)."""

import sys
import warnings

from .backends import onnx

warnings.warn(
    "rerankit.onnx_models moved to rerankit.backends.onnx",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = onnx  # the same module: setting an attribute here sets it there
