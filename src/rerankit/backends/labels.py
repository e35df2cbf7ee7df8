"""A cross-encoder's labels, as its ``config.json`` names them (``id2label``): which of a
two-label model's labels means "relevant" (:func:`relevant_label`), and whether it has more
labels than a relevance model (:func:`too_many_labels`: one of three or more, an NLI or
topic classifier, gives no single relevance score).

A two-label model scores ``logit[relevant] - logit[other]``. Label 1 is the relevant one
unless the names say plainly that label 0 is: one of them a positive name and the other a
negative one (:data:`POSITIVE`, :data:`NEGATIVE`: ``relevant``/``irrelevant``,
``positive``/``negative``, ``yes``/``no``, ``true``/``false``). Transformers' default names
(``LABEL_0``, ``LABEL_1``) mean the default order; any other names (``entailment`` and
``contradiction``, say) are not read as relevance: label 1 stays the relevant one, and the
log says so when the model loads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .manifest import MANIFEST

__all__ = [
    "NEGATIVE",
    "POSITIVE",
    "declared_label_count",
    "label_names",
    "labels_note",
    "loaded_label_count",
    "loaded_labels",
    "recorded_labels",
    "relevant_label",
    "too_many_labels",
]

#: label names that say "relevant" (compared in lower case, ``_`` and ``-`` read as spaces)
POSITIVE = frozenset({"relevant", "positive", "yes", "true"})
#: label names that say "not relevant"
NEGATIVE = frozenset(
    {"irrelevant", "not relevant", "non relevant", "nonrelevant", "negative", "no", "false"}
)


def _said(name: Any) -> str:
    return re.sub(r"[\s_-]+", " ", str(name)).strip().lower()


def label_names(id2label: Mapping[Any, Any] | None) -> list[str] | None:
    """A model's label names in label order, from its ``id2label`` (keys ``0``, ``"0"``,
    ...); None when it has none or they are not numbered 0, 1, ..."""
    if not isinstance(id2label, Mapping) or not id2label:
        return None
    try:
        numbered = {int(k): str(v) for k, v in id2label.items()}
    except (TypeError, ValueError):
        return None
    if sorted(numbered) != list(range(len(numbered))):
        return None
    return [numbered[i] for i in range(len(numbered))]


def relevant_label(id2label: Mapping[Any, Any] | None) -> int:
    """Which label of a two-label model means relevant: 0 when ``id2label`` names label 0
    with a positive name and label 1 with a negative one (``{0: "relevant", 1:
    "irrelevant"}``), else 1 (the default order; also for names that say neither, and for
    any model without exactly two labels)."""
    names = label_names(id2label)
    if names is None or len(names) != 2:
        return 1
    first, second = (_said(n) for n in names)
    return 0 if first in POSITIVE and second in NEGATIVE else 1


def _default_names(names: list[str]) -> bool:
    return all(_said(n) in (f"label {i}", str(i)) for i, n in enumerate(names))


def labels_note(model: str, id2label: Mapping[Any, Any] | None) -> str | None:
    """What the log says of a two-label model's labels when it loads: which one is scored
    as relevant when that is label 0, or when the names say neither way (None for the
    default names, and for names that put relevant at label 1)."""
    names = label_names(id2label)
    if names is None or len(names) != 2 or _default_names(names):
        return None
    relevant = relevant_label(id2label)
    if relevant == 0:
        return (
            f"cross-encoder {model}: its config.json names label 0 {names[0]!r} and label 1 "
            f"{names[1]!r}: scored as logit[0] - logit[1] (label 0 is the relevant one)"
        )
    first, second = (_said(n) for n in names)
    if first in NEGATIVE and second in POSITIVE:
        return None
    return (
        f"cross-encoder {model}: its config.json names its labels {names[0]!r} and "
        f"{names[1]!r}, which do not say which is relevant; label 1 ({names[1]!r}) is scored "
        "as the relevant one (logit[1] - logit[0]). If label 0 is, save the model with "
        'id2label {0: "relevant", 1: "irrelevant"} in its config.json'
    )


def recorded_labels(model: Any) -> Mapping[str, Any]:
    """What a loaded cross-encoder records of its labels, as a ``config.json`` holds them
    (``id2label``, ``num_labels``; either may be absent): an ONNX export's manifest's, a
    sentence-transformers ``CrossEncoder``'s config's, else nothing. The one reader of a
    loaded model's labels (:func:`loaded_labels`, :func:`loaded_label_count`)."""
    manifest = getattr(model, "manifest", None)
    if isinstance(manifest, Mapping):
        return manifest
    for holder in (getattr(model, "model", None), model):
        config = getattr(holder, "config", None)
        if config is not None:
            found = {k: getattr(config, k, None) for k in ("id2label", "num_labels")}
            return {k: v for k, v in found.items() if v is not None}
    return {}


def loaded_labels(model: Any) -> Mapping[Any, Any] | None:
    """The ``id2label`` of a loaded cross-encoder (:func:`recorded_labels`): None when it
    has none (an export made before rerankit recorded it)."""
    found = recorded_labels(model).get("id2label")
    return found if isinstance(found, Mapping) else None


def loaded_label_count(model: Any) -> int | None:
    """How many labels a loaded cross-encoder has (:func:`recorded_labels`, counted as its
    files are: :func:`declared_label_count`), or None when it does not say."""
    return _config_label_count(recorded_labels(model))


def _config_label_count(config: Mapping[str, Any]) -> int | None:
    """The labels a ``config.json`` (an export's manifest, a loaded model's config) says a
    model has: its ``id2label`` names, else its ``num_labels``."""
    names = label_names(config.get("id2label"))
    if names is not None:
        return len(names)
    found = config.get("num_labels")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def declared_label_count(model: str, revision: str | None = None) -> int | None:
    """How many labels the cross-encoder ``model`` has, read from its files without loading
    it: a folder's ``config.json`` (an export's manifest), or a hub id's ``config.json`` in
    the local Hugging Face cache at ``revision``; None when they do not say (or are not
    here)."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        config = folder / (MANIFEST if (folder / MANIFEST).is_file() else "config.json")
    else:
        try:
            import huggingface_hub

            found = huggingface_hub.try_to_load_from_cache(model, "config.json", revision=revision)
        except (ImportError, ValueError):  # no hub client; not a valid hub id
            return None
        if not isinstance(found, str):
            return None
        config = Path(found)
    try:
        read = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing or unreadable: loading says so
        return None
    return _config_label_count(read) if isinstance(read, Mapping) else None


def too_many_labels(model: str, count: int) -> str:
    """What rerankit says of a cross-encoder ``model`` with ``count`` (3 or more) labels."""
    return (
        f"cross-encoder {model!r} has {count} labels (num_labels in its config.json); "
        "rerankit scores a relevance model of 1 label (its relevance logit) or 2 (not "
        f"relevant / relevant), and a model of {count} (an NLI or topic classifier) gives no "
        "single relevance score: use a reranker trained for relevance, or fine-tune this one "
        "with num_labels=1"
    )
