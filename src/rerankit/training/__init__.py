"""Fitting rerankit to your judgments, as functions that take data and options and return
what they chose and measured (the command line prints the same):

- :func:`tune` (``rerankit tune``): a fusion, the calibrated hybrid's weights or a LightGBM
  ranker chosen by nested cross-validation, written only when it beats the default by more
  than the margin times the noise (:mod:`.tuning`, deciding in :mod:`.selection`, the
  methods in :mod:`.methods`, :mod:`.fusion_search`, :mod:`.calibrated`, :mod:`.ltr`,
  cross-validation in :mod:`.crossval`);
- :func:`fine_tune` (``rerankit train``): the embedding model or a cross-encoder trained on
  the judgments and checked on queries it never saw (:mod:`.fine_tuning`, with
  :mod:`.embedding`, :mod:`.cross_encoder` and :mod:`.trainer`);
- :func:`label` (``rerankit label``): judgments from an LLM judge (:mod:`.labelling`).

>>> from rerankit.training import tune
>>> result = tune("my-collection", out="tuned.toml")               # doctest: +SKIP
>>> result.adopted, result.verdict.describe(), result.path         # doctest: +SKIP
"""

from .fine_tuning import FineTuneOptions, FineTuneResult, HeldOutCheck, fine_tune
from .labelling import LabelReport, label
from .reporting import Reporter
from .tuning import TuneOptions, TuneResult, tune

__all__ = [
    "FineTuneOptions",
    "FineTuneResult",
    "HeldOutCheck",
    "LabelReport",
    "Reporter",
    "TuneOptions",
    "TuneResult",
    "fine_tune",
    "label",
    "tune",
]
