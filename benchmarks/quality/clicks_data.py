"""The inputs of ``benchmarks/quality/clicks.py``, computed once and cached on disk: each
split's BM25 top 100 (k1=0.9, b=0.4), learning to rank's features of those candidates
(:func:`rerankit.scorers.learned.features`, as ``rerankit tune --method ltr`` builds them)
and the default ``hybrid``'s scores of them given their first-stage scores (the logging
ranker). Cached in ``.cache/clicks-features/<collection>-<split>.npz``.

NFCorpus's training split has about 2,590 judged queries; computing their features takes
hours on two cores, so its training queries are a seeded random subset of 800
(:data:`SUBSET`: ``random.Random(0).sample`` of the judged query ids, sorted), as many as
SciFact's 809. Test splits are used whole.

Run alone to fill the cache: ``python -m benchmarks.quality.clicks_data``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import BEIR as DATA

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "clicks-features"
SPLITS = {"scifact": ("train", "test"), "nfcorpus": ("train", "test")}
#: (collection, split) -> how many of its judged queries are used (a seeded sample)
SUBSET = {("nfcorpus", "train"): 800}


def _subset(data, name: str, split: str):
    """The dataset with a seeded sample of its queries when :data:`SUBSET` names the split."""
    import random

    size = SUBSET.get((name, split))
    if size is None or len(data.queries) <= size:
        return data
    keep = set(random.Random(0).sample(sorted(data.queries), size))
    data.queries = {q: t for q, t in data.queries.items() if q in keep}
    data.qrels = {q: j for q, j in data.qrels.items() if q in keep}
    return data


def prepared(name: str, split: str):
    """``(dataset, {qid: (doc ids, feature matrix)}, {qid: the hybrid's scores})`` of a
    collection's split, from the cache when it is there."""
    os.environ.setdefault("RERANKIT_EMBEDDING_CACHE", str(ROOT / ".cache/embeddings.sqlite"))
    from rerankit.eval.data import load_beir

    data = _subset(load_beir(DATA / name, split), name, split)
    path = CACHE / f"{name}-{split}.npz"
    if path.is_file():
        stored = np.load(path, allow_pickle=False)
        index = json.loads(str(stored["index"]))
        rows, hybrid = {}, {}
        for qid, ids in index.items():
            rows[qid] = (ids, stored[f"x:{qid}"])
            hybrid[qid] = stored[f"h:{qid}"]
        return data, rows, hybrid
    from rerankit.eval.first_stage import first_stage
    from rerankit.training.methods import feature_rows
    from rerankit.training.selection import default_hybrid_scores

    start = time.perf_counter()
    cands = first_stage(data, "bm25", 100)
    rows = feature_rows(data, cands, None, progress=False)
    print(f"{name} {split}: features in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    start = time.perf_counter()
    hybrid = default_hybrid_scores(data, {q: cands[q] for q in rows})
    print(f"{name} {split}: hybrid in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    arrays = {f"x:{q}": x for q, (_, x) in rows.items()}
    arrays.update({f"h:{q}": np.asarray(s) for q, s in hybrid.items()})
    index = json.dumps({q: ids for q, (ids, _) in rows.items()})
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, index=np.array(index), **arrays)
    tmp.replace(path)
    return data, rows, hybrid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    for name, splits in SPLITS.items():
        for split in splits:
            prepared(name, split)


if __name__ == "__main__":
    main()
