"""How this folder's candidates were made, standing in for your own retriever's output: a
dense retriever (the bundled all-MiniLM-L6-v2, cosine over every abstract of
examples/scifact-mini) returns each test query's top 20, written as JSON Lines
(``candidates.jsonl``) and as a TREC run (``candidates.run.trec``), the two forms
``rerankit eval --first-stage`` reads. Run: ``python examples/own-retriever/make_candidates.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rerankit.eval.data import load_beir
from rerankit.scorers import EmbeddingScorer

HERE = Path(__file__).resolve().parent
TOP = 20


def main() -> None:
    data = load_beir(HERE.parent / "scifact-mini", "test")
    ids = list(data.corpus)
    model = EmbeddingScorer()
    docs = model.encode_documents([data.text(i) for i in ids])
    rows, run = [], []
    for qid, text in data.queries.items():
        scores = docs @ model.encode_queries([text])[0]
        best = np.argsort(-scores, kind="stable")[:TOP]
        candidates = [{"id": ids[i], "first_stage_score": round(float(scores[i]), 6)} for i in best]
        rows.append({"query_id": qid, "query": text, "candidates": candidates})
        run += [
            f"{qid} Q0 {c['id']} {rank} {c['first_stage_score']} minilm-dense"
            for rank, c in enumerate(candidates, start=1)
        ]
    (HERE / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (HERE / "candidates.run.trec").write_text("\n".join(run) + "\n")


if __name__ == "__main__":
    main()
