"""What a LightGBM setting can learn from a training set of a given size: a setting's
``min_data_in_leaf`` capped so that a tree can split the rows it is given
(:func:`supported`), and whether a fitted model split at all (:func:`splits`). A model
that never split scores every document alike: it keeps the first stage's order and
learned nothing, and ``rerankit tune --method ltr`` never writes one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["splits", "supported"]


def supported(params: Mapping[str, Any], rows: int) -> dict[str, Any]:
    """``params`` (LightGBM's) with ``min_data_in_leaf`` capped at a quarter of the rows a
    tree sees (``rows`` times ``bagging_fraction`` when bagging), so that a first split,
    which leaves at least ``min_data_in_leaf`` rows on each side, can fall anywhere in the
    middle half: on 50 rows, a setting asking for 100 per leaf would grow only single-leaf
    trees, and one asking for half the rows could split only at the exact middle. Settings
    the rows support are kept. A copy; ``params`` is kept."""
    out = dict(params)
    bag = float(out.get("bagging_fraction", 1.0)) if out.get("bagging_freq", 0) else 1.0
    cap = max(1, int(rows * bag) // 4)
    if int(out.get("min_data_in_leaf", 20)) > cap:
        out["min_data_in_leaf"] = cap
    return out


def splits(booster: Any) -> int:
    """How many splits the trees of ``booster`` (a LightGBM booster) make in all: 0 when
    every tree is a single leaf, a model whose score is the same for every document."""
    trees = booster.dump_model().get("tree_info", [])
    return sum(int(tree.get("num_leaves", 1)) - 1 for tree in trees)
