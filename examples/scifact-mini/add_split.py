"""How this folder's test split was made: ``python examples/scifact-mini/add_split.py
SCIFACT test 30`` adds ``qrels/test.tsv`` with 30 judged queries of SciFact's ``test`` split
chosen at random (seed 2026), their queries, and the abstracts judged for them or among
each one's BM25 top 20 over the full SciFact corpus (BM25 k1=0.9, b=0.4, title + text), to
``queries.jsonl`` and ``corpus.jsonl``. ``SCIFACT`` is a BEIR-layout copy of SciFact."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from rerankit.eval.data import load_qrels
from rerankit.eval.first_stage import BM25Index

HERE = Path(__file__).resolve().parent


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def main(source: str, split: str, count: int, seed: int = 2026) -> None:
    source_dir = Path(source)
    qrels = load_qrels(source_dir / "qrels" / f"{split}.tsv")
    queries = {q["_id"]: q for q in _rows(source_dir / "queries.jsonl")}
    corpus = {d["_id"]: d for d in _rows(source_dir / "corpus.jsonl")}
    chosen = sorted(random.Random(seed).sample(sorted(qrels), count), key=int)
    ids = list(corpus)
    index = BM25Index(ids, [f"{corpus[i]['title']}\n{corpus[i]['text']}" for i in ids])
    wanted = set()
    for qid in chosen:
        wanted |= set(qrels[qid]) | set(index.search(queries[qid]["text"], 20))
    have_queries = {q["_id"] for q in _rows(HERE / "queries.jsonl")}
    have_docs = {d["_id"] for d in _rows(HERE / "corpus.jsonl")}
    with (HERE / "queries.jsonl").open("a", encoding="utf-8") as f:
        for qid in chosen:
            if qid not in have_queries:
                f.write(json.dumps({"_id": qid, "text": queries[qid]["text"]}) + "\n")
    with (HERE / "corpus.jsonl").open("a", encoding="utf-8") as f:
        for doc in ids:  # in the corpus's own order
            if doc in wanted and doc not in have_docs:
                row = corpus[doc]
                f.write(json.dumps({"_id": doc, "title": row["title"], "text": row["text"]}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{g}" for q in chosen for d, g in qrels[q].items()]
    (HERE / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
