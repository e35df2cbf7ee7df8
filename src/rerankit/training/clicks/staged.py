"""A LightGBM booster's predictions at several numbers of trees from one pass, for the
many evaluations of a cross-validation over the number of trees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["staged_predictions"]


def staged_predictions(
    booster: Any, x: np.ndarray, trees: Sequence[int], chunk: int = 20_000
) -> dict[int, np.ndarray]:
    """A booster's predictions of ``x`` with its first ``t`` trees, for each ``t`` in
    ``trees``, from one pass over the largest: each row's leaf in each tree, their values
    summed tree by tree (half the work of predicting at each number of trees)."""
    dump = booster.dump_model()["tree_info"][: max(trees)]
    width = max(info["num_leaves"] for info in dump)
    table = np.zeros((len(dump), width))
    for i, info in enumerate(dump):
        stack = [info["tree_structure"]]
        while stack:
            node = stack.pop()
            if "leaf_value" in node:
                table[i, node.get("leaf_index", 0)] = node["leaf_value"]
            else:
                stack += [node["left_child"], node["right_child"]]
    out = {t: np.empty(len(x)) for t in trees}
    for start in range(0, len(x), chunk):
        part = x[start : start + chunk]
        leaves = np.asarray(booster.predict(part, num_iteration=len(dump), pred_leaf=True))
        leaves = leaves.reshape(len(part), -1)
        running = np.cumsum(table[np.arange(len(dump)), leaves], axis=1)
        for t in trees:
            out[t][start : start + chunk] = running[:, min(t, len(dump)) - 1]
    return out
