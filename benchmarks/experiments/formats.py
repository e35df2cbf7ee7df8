"""Does the default care how a title is joined to its text? nDCG@10 on the development pool.

Decided: nothing to change; the default reads no layout, so a title may be joined to the
text any way. Reported in docs/documents.md (titles).

Each pool collection's candidates (its first stage's top 100: SciFact train and NFCorpus
dev by BM25 over the corpus, the classic collections by their shipped BM25 run) go to the
texts-only ``hybrid`` as plain strings, the title joined to the text by a newline, by a
space, by ". ", or left out; and as dicts with a ``title`` field (how ``rerankit eval``
passes them). The first three should score alike (the default reads no layout: a line break
is a space, and every passage after the first starts with the document's first words,
title included, wherever the title was put). Prints one row per collection, the largest
difference among the three joined forms, and the mean.

Run: ``python -m benchmarks.experiments.formats [--reranker NAME] [--collections
CISI,CACM]`` (document and passage embeddings cached in ``.cache/embeddings.sqlite``; each
form that changes the texts is encoded once; each collection's row is printed to stderr as
soon as it is done, so a long run can be read before it ends).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from benchmarks.common import use_embedding_cache
from benchmarks.experiments.default_pool import POOL, SHARED, standard_error

JOINED = {"newline": "\n", "space": " ", "'. '": ". "}


def forms(doc: dict) -> dict:
    """The same document in each layout measured."""
    title, text = doc.get("title") or "", doc.get("text") or ""
    out = {}
    for label, joint in JOINED.items():
        out[label] = f"{title}{joint}{text}" if title and text else (title or text)
    out["no title"] = text
    out["title field"] = {"title": title, "text": text} if title else {"text": text}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reranker", default="hybrid", help="registered name (default hybrid)")
    parser.add_argument(
        "--collections",
        default=",".join(POOL),
        help="pool collections to measure, comma-separated, in this order (default all)",
    )
    args = parser.parse_args()
    chosen = [c.strip() for c in args.collections.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in POOL]
    if unknown:
        parser.error(f"unknown collections {unknown}; the pool has {list(POOL)}")
    use_embedding_cache()
    from rerankit import load
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.metrics import ndcg_at_k

    missing = [name for name in chosen if not POOL[name][0].exists()]
    if missing:
        sys.exit(f"collections not found under {SHARED}: {', '.join(missing)}")
    reranker = load(args.reranker)
    labels = [*JOINED, "no title", "title field"]
    rows, per_query = {}, {}
    for name in chosen:
        path, split = POOL[name]
        data = load_beir(path, split)
        runs: dict[str, dict[str, list[str]]] = {label: {} for label in labels}
        for qid, ranked in first_stage(data, "auto", 100).items():
            if not ranked:
                continue
            ids = [d for d, _ in ranked]
            each = [forms(data.corpus[d]) for d in ids]
            for label in labels:
                result = reranker.rerank(data.queries[qid], [f[label] for f in each])
                runs[label][qid] = [ids[r.index] for r in result]
        judged = [q for q, j in data.qrels.items() if j and max(j.values()) > 0]
        per_query[name] = {
            label: np.array(
                [100 * ndcg_at_k(runs[label].get(q, ()), data.qrels[q]) for q in judged]
            )
            for label in labels
        }
        rows[name] = {label: float(np.mean(v)) for label, v in per_query[name].items()}
        cells = ", ".join(f"{label} {value:.2f}" for label, value in rows[name].items())
        print(f"{name}: {cells}", file=sys.stderr, flush=True)
    print(f"nDCG@10 x 100 of `{args.reranker}` given texts only, by how the title is joined:\n")
    print(
        "| collection | " + " | ".join(labels) + " | largest difference, joined forms "
        "(+- its standard error over queries) |"
    )
    print("|---|" + "---:|" * (len(labels) + 1))
    for name, cells in rows.items():
        high = max(JOINED, key=lambda j: cells[j])
        low = min(JOINED, key=lambda j: cells[j])
        se = standard_error(per_query[name][high] - per_query[name][low])
        print(
            f"| {name} | "
            + " | ".join(f"{cells[lab]:.2f}" for lab in labels)
            + f" | {cells[high] - cells[low]:.2f} +- {se:.2f} |"
        )
    means = {lab: statistics.fmean(r[lab] for r in rows.values()) for lab in labels}
    print("| mean | " + " | ".join(f"{means[lab]:.2f}" for lab in labels) + " | |")


if __name__ == "__main__":
    main()
