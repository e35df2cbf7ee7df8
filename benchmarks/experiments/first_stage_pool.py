"""Choosing how the default ``hybrid`` uses the retriever's scores, on the development pool
across domains (the same six collections and rule as ``default_pool.py``).

Decided: the default ``hybrid`` ranks by the texts alone even when first-stage scores are
given (``HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT`` 0). Reported in docs/documents.md.

When every candidate carries a first-stage score, ``hybrid`` fuses it with the texts. The
candidates compared, each fusing the first stage's score with a weight ``w``:

* ``first stage + whole``: min-max first stage and min-max MiniLM cosine of the whole
  document (what ``hybrid`` did with first-stage scores before this choice: ``w`` = 0.3,
  "the fusion before" in the output);
* ``first stage (N) + texts-only (M)``: the first stage normalised by N (``min_max``,
  ``z_score`` or ``rank``) and the texts-only default's fused logit normalised by M, a
  weighted average: the retriever's score beside everything the texts-only default reads.

A candidate's *regret* on a collection is how far it falls short of the first stage, of
``embedding``, and of ``hybrid-relative`` and the texts-only default minus 0.5 (a
retriever's score should not make the ranking worse). The rule, as ``default_pool.py``:
no regret anywhere if any candidate manages it, else a largest regret within 0.1 of the
smallest; then the best mean nDCG@10. Development queries only; test splits are never read.
The last lines score the library's ``hybrid`` with first-stage scores as installed: they
should equal the chosen row (``HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT`` in
``rerankit/rerankers/hybrid.py``).

Run: ``python -m benchmarks.experiments.first_stage_pool`` (embeddings cached in
``.cache/embeddings.sqlite``, as ``default_pool.py``).
"""

from __future__ import annotations

import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.experiments.default_pool import (
    POOL,
    TIE,
    TOLERANCE,
    Collection,
    prepare,
    standard_error,
)

WEIGHTS = tuple(round(0.05 * i, 2) for i in range(0, 13))  # 0 .. 0.6
FIRST = ("min_max", "z_score", "rank")
TEXTS = ("min_max", "z_score")
REFERENCES = ("embedding", "hybrid-relative", "texts-only default")
#: the fusion with first-stage scores before this choice: first stage + whole, 0.3
BEFORE = ("first stage + whole", 0.3)


def normalised(scores: np.ndarray, mask: np.ndarray, method: str) -> np.ndarray:
    """Each query's row normalised over its own candidates (``rerankit.normalize``)."""
    from rerankit.normalize import normalize_scores

    out = np.zeros(scores.shape)
    for i in range(scores.shape[0]):
        n = int(mask[i].sum())
        if n:
            out[i, :n] = normalize_scores(scores[i, :n], method)
    return out


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="a pool collection (repeatable)")
    parser.add_argument(
        "--keep",
        type=Path,
        help="a file to keep the pool's scores in, and read them from when it exists",
    )
    args = parser.parse_args()
    prepare(args.only)
    from rerankit import load
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.runner import run_pipeline

    pool, refs = [], {}
    if args.keep and args.keep.exists():
        pool, refs = pickle.loads(args.keep.read_bytes())
    for name, (path, split) in POOL.items():
        if name in refs:
            continue
        start = time.perf_counter()
        data = load_beir(path, split)
        cands = first_stage(data, "auto", 100)
        coll = Collection(name, data, cands)
        coll.add("first stage", {q: np.array([s for _, s in c]) for q, c in cands.items()})
        coll.reference["first stage"] = coll.raw["first stage"]
        for ref, pipeline, given in (
            ("embedding", "embedding", False),
            ("hybrid-relative", "hybrid-relative", False),
            ("texts-only default", "hybrid", False),
        ):
            run = run_pipeline(ref, load(pipeline), data, cands, first_stage_scores=given)
            coll.reference[ref] = coll.run_scores(run.run)
            if ref == "embedding":  # the cosines (the run holds positions)
                coll.raw["embedding"] = coll.run_scores(run.scores)
            if ref == "texts-only default":  # its probabilities, as logits
                p = np.clip(coll.run_scores(run.scores), 1e-12, 1 - 1e-12)
                coll.raw["texts logit"] = np.log(p / (1 - p))
        refs[name] = {k: coll.ndcg(v) for k, v in coll.reference.items()}
        pool.append(coll)
        print(
            f"{name}: {len(coll.qids)} queries in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        coll.data = None  # not needed below, and not worth keeping
        if args.keep:
            args.keep.write_bytes(pickle.dumps((pool, refs)))

    candidates = []  # (label, w, {collection: scores})
    for w in WEIGHTS:
        scores = {}
        for c in pool:
            fs = normalised(c.raw["first stage"], c.mask, "min_max")
            emb = normalised(c.raw["embedding"], c.mask, "min_max")
            scores[c.name] = w * fs + (1 - w) * emb
        candidates.append(("first stage + whole", w, scores))
        for nf in FIRST:
            for nt in TEXTS:
                scores = {}
                for c in pool:
                    fs = normalised(c.raw["first stage"], c.mask, nf)
                    tx = normalised(c.raw["texts logit"], c.mask, nt)
                    scores[c.name] = w * fs + (1 - w) * tx
                candidates.append((f"first stage ({nf}) + texts-only ({nt})", w, scores))
    cells = [{c.name: c.ndcg(s[c.name]) for c in pool} for _, _, s in candidates]

    def regret(cell) -> list[float]:
        out = []
        for name, value in cell.items():
            r = refs[name]
            need = max(
                r["first stage"],
                r["embedding"],
                r["hybrid-relative"] - TOLERANCE,
                r["texts-only default"] - TOLERANCE,
            )
            out.append(max(0.0, need - value))
        return out

    least = min(max(regret(c)) for c in cells)
    bound = 0.0 if least == 0 else least + TIE
    order = sorted(
        range(len(candidates)),
        key=lambda i: (
            max(regret(cells[i])) > bound,
            max(regret(cells[i])) if max(regret(cells[i])) > bound else 0.0,
            -statistics.fmean(cells[i].values()),
        ),
    )
    chosen = order[0]
    before = next(s for lab, w, s in candidates if (lab, round(w, 2)) == BEFORE)
    names = [c.name for c in pool]
    print(
        f"{len(candidates)} candidates; rule: no regret anywhere, else a largest regret within "
        f"{TIE} of the smallest ({least:.2f}), then the best mean (targets: >= first stage, "
        ">= embedding, >= hybrid-relative - 0.5, >= the texts-only default - 0.5)\n"
    )
    print("| reranker | " + " | ".join(names) + " | mean | largest regret |")
    print("|---|" + "---:|" * (len(names) + 2))
    for key in ("first stage", *REFERENCES):
        row = [refs[n][key] for n in names]
        print(
            f"| {key} | "
            + " | ".join(f"{v:.2f}" for v in row)
            + f" | {statistics.fmean(row):.2f} | |"
        )
    seen = set()
    for i in order:
        label, w, _ = candidates[i]
        if label in seen and i != chosen and (label, round(w, 2)) != BEFORE:
            continue
        seen.add(label)
        row = [cells[i][n] for n in names]
        mark = "**chosen**: " if i == chosen else "best "
        if (label, round(w, 2)) == BEFORE:
            mark = "the fusion before: "
        print(
            f"| {mark}{label}, w {w:.2f} | "
            + " | ".join(f"{v:.2f}" for v in row)
            + f" | {statistics.fmean(row):.2f} | {max(regret(cells[i])):.2f} |"
        )
    label, w, scores = candidates[chosen]
    print(
        f"\nchosen: {label}, first-stage weight {w:.2f}; per collection, against the "
        "texts-only default and the fusion before (first stage + whole, 0.3) "
        "(+- standard error over queries):"
    )
    for c in pool:
        mine = c.per_query(scores[c.name])
        parts = []
        for ref in ("texts-only default", "the fusion before", "first stage"):
            d = mine - c.per_query(
                before[c.name] if ref == "the fusion before" else c.reference[ref]
            )
            parts.append(f"{ref} {np.mean(d):+.2f} +- {standard_error(d):.2f}")
        print(f"  {c.name}: {cells[chosen][c.name]:.2f}; " + "; ".join(parts))
    print("\nweights of the chosen family:")
    for i, (lab, ww, _) in enumerate(candidates):
        if lab == label:
            row = [cells[i][n] for n in names]
            print(
                f"  w {ww:.2f}: "
                + " ".join(f"{v:6.2f}" for v in row)
                + f" | mean {statistics.fmean(row):.2f} | regret {max(regret(cells[i])):.2f}"
            )

    print("\nthe library's `hybrid` with first-stage scores on the pool, as installed:")
    for c in pool:
        path, split = POOL[c.name]
        data = load_beir(path, split)
        cands = first_stage(data, "auto", 100)
        run = run_pipeline("hybrid", load("hybrid"), data, cands, first_stage_scores=True)
        value = c.ndcg(c.run_scores(run.run))
        print(f"  {c.name}: {value:.2f} (chosen row: {cells[chosen][c.name]:.2f})")


if __name__ == "__main__":
    main()
