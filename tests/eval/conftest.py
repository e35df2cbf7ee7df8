"""Synthetic BEIR-layout collections for the tune tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

TOPICS = ["solar power", "wind turbines", "vaccines immune", "stock market", "pasta sauce"]
#: a word for the topic that the query does not use
OTHER = {
    "solar power": "photovoltaic",
    "wind turbines": "windmill",
    "vaccines immune": "antibody",
    "stock market": "equities",
    "pasta sauce": "spaghetti",
}


def synthetic_beir(
    folder: Path,
    *,
    queries: int = 40,
    train: int = 30,
    misleading: bool = False,
    obvious: bool = False,
    seed: int = 1,
) -> Path:
    """A collection of 5 topics x 8 documents; query i asks for topic i % 5 and judges one
    document of it relevant (grade 2) and the next one partly (grade 1). A run file ranks
    each query's relevant documents first, then the rest of its topic, then the others.

    With ``misleading``, the judged documents use another word for the topic and the others
    repeat the query's words, so the embedding alone is misled and only the first stage
    knows; with ``obvious``, the judged documents are the only ones that name the topic, so
    every signal ranks them first; otherwise every document of a topic mentions it alike."""
    rng = random.Random(seed)
    corpus, rows, test, run = [], [], [], []
    for t, topic in enumerate(TOPICS):
        for j in range(8):
            noise = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(6))
            doc = {"_id": f"d{t}-{j}", "title": topic.title(), "text": f"{topic} {noise}"}
            if misleading:
                doc = {
                    "_id": doc["_id"],
                    "text": f"{OTHER[topic]} {noise}" if j < 2 else f"{topic} {topic} {topic}",
                }
            elif obvious:
                doc = {"_id": doc["_id"], "text": topic if j < 2 else f"{OTHER[topic]} {noise}"}
            corpus.append(doc)
    queries_out = []
    for i in range(queries):
        t = i % len(TOPICS)
        queries_out.append({"_id": f"q{i}", "text": TOPICS[t]})
        judged = (0, 1) if misleading or obvious else (i % 8, (i + 1) % 8)
        target = rows if i < train else test
        target += [f"q{i}\td{t}-{judged[0]}\t2", f"q{i}\td{t}-{judged[1]}\t1"]
        ranked = [f"d{t}-{j}" for j in judged] + [f"d{t}-{j}" for j in range(8) if j not in judged]
        ranked += [f"d{u}-{j}" for u in range(len(TOPICS)) if u != t for j in range(2)]
        run += [f"q{i} Q0 {d} {r + 1} {100 - r} fs" for r, d in enumerate(ranked)]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries_out))
    head = "query-id\tcorpus-id\tscore\n"
    (folder / "qrels" / "train.tsv").write_text(head + "\n".join(rows) + "\n")
    (folder / "qrels" / "test.tsv").write_text(head + "\n".join(test) + "\n")
    (folder / "first.run.trec").write_text("\n".join(run) + "\n")
    return folder


@pytest.fixture
def synthetic():
    """``synthetic(folder, **options)``: see :func:`synthetic_beir`."""
    return synthetic_beir
