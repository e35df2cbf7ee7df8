"""How close an export's scores are to the model it was exported from: the same pairs
scored on torch and on ONNX Runtime (float32, and int8 when the export has it), the
largest absolute difference of each. ``rerankit export`` says it after writing a folder.

>>> from rerankit.scorers.parity import export_differences
>>> export_differences(  # doctest: +SKIP
...     "my-ce", "my-ce-onnx", kind="cross_encoder", quantize="int8"
... )
{'float32': 6.5e-09, 'int8': 3.8e-05}
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cross_encoder import CrossEncoderScorer
from .embedding import EmbeddingScorer

__all__ = ["PAIRS", "export_differences"]

#: the queries and documents an export is checked on (short, varied, some relevant)
PAIRS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "does vitamin D prevent fractures?",
        (
            "Vitamin D supplementation reduced fractures in older adults.",
            "A new stadium opened downtown.",
            "Calcium intake and bone density in postmenopausal women.",
            "Fractures of the hip are common after falls.",
        ),
    ),
    (
        "solar energy",
        (
            "Photovoltaic panels convert sunlight into electricity.",
            "Wind turbines generate power offshore.",
            "The stock market fell sharply on Monday.",
            "Solar farms need large areas of land.",
        ),
    ),
)


def export_differences(
    model: str,
    folder: str | Path,
    *,
    kind: str,
    quantize: str | None = None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
    pairs: Sequence[tuple[str, Sequence[str]]] = PAIRS,
) -> dict[str, float]:
    """The largest absolute score difference between ``model`` on torch and its export in
    ``folder`` on ONNX Runtime, over ``pairs`` (query, documents): ``{"float32": ...}``,
    with ``"int8"`` too when ``quantize`` is ``"int8"``. Scores are the scorers' own (a
    cross-encoder's logit, an embedding model's cosine), so the differences are on the
    scale a pipeline reads; ``revision``: the hub model's, as exported. Needs torch (extra
    ``torch``) and ONNX Runtime (``onnx``)."""
    options: dict[str, Any] = {"max_length": max_length, "trust_remote_code": trust_remote_code}

    def scorer(name: str, **backend: Any) -> Any:
        if kind == "cross_encoder":
            return CrossEncoderScorer(name, **options, **backend)
        return EmbeddingScorer(name, cache=False, **options, **backend)

    def scores(one: Any) -> np.ndarray:
        return np.concatenate([np.asarray(one.score_texts(q, list(d))) for q, d in pairs])

    reference = scores(scorer(model, backend="torch", revision=revision))
    out = {
        "float32": float(np.max(np.abs(scores(scorer(str(folder), backend="onnx")) - reference)))
    }
    if quantize == "int8":
        onnx = scorer(str(folder), backend="onnx", quantize="int8")
        out["int8"] = float(np.max(np.abs(scores(onnx) - reference)))
    return out
