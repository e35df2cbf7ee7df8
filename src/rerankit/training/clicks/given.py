"""Propensities given rather than estimated from the log being learned from
(``rerankit tune --clicks LOG --propensities ...``, ``learn_from_log(LOG,
propensities=...)``): measured elsewhere, say from a log where the top positions were
exchanged too (``randpair(..., protect=0)`` in your own front end), and read here from a
list of numbers, a comma-separated text (``"1,0.9,0.7"``) or a file ``tune --clicks``
wrote (``learned.propensities.json``, its ``by_position``; or a JSON list)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from .counterfactual import MIN_PROPENSITY
from .propensity import Propensities, estimate_propensities

__all__ = ["as_propensities", "floored", "read_propensities"]

logger = logging.getLogger(__name__)

#: what to pass, for the errors
WHAT = (
    "propensities: give one number a position, from position 1 down, as a comma-separated "
    "list (1,0.9,0.7,...) or a file as rerankit tune --clicks writes it "
    "(learned.propensities.json)"
)


def read_propensities(value: Any, depth: int = 10) -> list[float]:
    """The propensities of positions 1..``depth`` in ``value`` (see the module doc),
    relative to position 1. An InputError names what is wrong: a file that is not such a
    file, a value that is not a positive number, fewer than ``depth`` values (learning
    weighs the clicks at every one of the first ``depth`` positions). A 0 in a file (what
    ``tune --clicks`` wrote for a position without a click on an exchanged pair before it
    stopped writing 0) is taken as the least propensity learning weighs clicks by
    (``MIN_PROPENSITY``, 0.05 of position 1), with a warning."""
    source = "propensities"
    if isinstance(value, Path) or (
        isinstance(value, str) and (value.endswith(".json") or Path(value).is_file())
    ):
        source, value = str(value), _from_file(Path(value))
    elif isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    elif not isinstance(value, Sequence | np.ndarray):
        raise InputError(f"{WHAT}; got {type(value).__name__}")
    values = []
    for p, v in enumerate(list(value), start=1):
        try:
            number = float(v)
        except (TypeError, ValueError):
            number = math.nan
        if v is None:  # tune writes null for a position its log never showed
            raise InputError(
                f"{source}: position {p} has no value (the log it was estimated from never "
                f"showed anything there); {WHAT}, with a value for each of the first {depth}"
            )
        if number == 0 and source != "propensities":  # a file an older tune --clicks wrote
            logger.warning("%s", floored(source, [p]))
            number = MIN_PROPENSITY * (values[0] if values else 1.0)
        if not (math.isfinite(number) and number > 0):
            raise InputError(f"{source}: position {p}: {v!r} is not a positive number; {WHAT}")
        values.append(number)
    if len(values) < depth:
        raise InputError(
            f"{source}: {len(values)} values, and learning weighs clicks at the first {depth} "
            f"positions: give one for each of positions 1 to {depth}"
        )
    return [v / values[0] for v in values[:depth]]


def floored(value: Any, positions: Sequence[int] | None = None, depth: int = 10) -> str | None:
    """What :func:`read_propensities` says of the 0s in a file (``value``, as given to
    it): None when it has none among the first ``depth`` (or is no file); ``positions``:
    those positions, instead of reading the file."""
    if positions is None:
        path = Path(value) if isinstance(value, str | Path) else None
        if path is None or not path.is_file():
            return None
        try:
            found = _from_file(path)
        except InputError:
            return None
        positions = [p for p, v in enumerate(found[:depth], start=1) if v == 0]
    if not positions:
        return None
    where = ", ".join(map(str, positions))
    return (
        f"{value}: position{'s' if len(positions) > 1 else ''} {where}: 0 (no click there in "
        f"the log it was estimated from, as an older tune --clicks wrote it) taken as "
        f"{MIN_PROPENSITY:g}, the least propensity learning weighs a click by"
    )


def _from_file(path: Path) -> list[Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; {WHAT}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc}); {WHAT}") from None
    if isinstance(found, Mapping):
        found = found.get("by_position")
    if not isinstance(found, list):
        raise InputError(f"{path}: neither a JSON list nor an object with 'by_position'; {WHAT}")
    return found


def as_propensities(
    given: Propensities | Sequence[float] | np.ndarray | str | Path | None,
    logs: Mapping[str, Any],
    rows: Mapping[str, tuple[Sequence[str], np.ndarray]],
    depth: int,
    corrected: bool,
) -> Propensities:
    """The propensities learning weighs clicks by: all 1 (not ``corrected``: the naive
    learner), estimated from ``logs`` (``given`` None), or ``given``."""
    sessions = sum(log.sessions for log in logs.values())
    if not corrected:
        return Propensities(np.ones(depth), "none (naive: clicks as labels)", sessions)
    if given is None:
        return estimate_propensities(logs, rows, depth=depth)
    if isinstance(given, Propensities):
        return given
    return Propensities(np.asarray(read_propensities(given, depth)), "given", sessions)
