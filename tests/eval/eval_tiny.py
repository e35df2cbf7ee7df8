"""A tiny judged collection the eval tests share: four documents, three queries, as a
:class:`~rerankit.eval.data.Dataset` or written as a BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

from rerankit.eval.data import Dataset

CORPUS = {
    "d1": {"title": "solar panels", "text": "solar panels turn sunlight into electricity"},
    "d2": {"title": "wind", "text": "wind turbines turn wind into electricity"},
    "d3": {"title": "solar history", "text": "the history of solar power and solar cells"},
    "d4": {"title": "cooking", "text": "how to cook pasta"},
}
QUERIES = {"q1": "solar electricity", "q2": "wind power", "q3": "pasta"}
QRELS = {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1}, "q3": {"d4": 1}}


def tiny_dataset() -> Dataset:
    """The collection in memory (copies: a test may change its own)."""
    return Dataset("tiny", dict(CORPUS), dict(QUERIES), {q: dict(j) for q, j in QRELS.items()})


def write_tiny(folder: Path) -> Path:
    """The collection written as a BEIR folder (its test split judged) at ``folder``."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, **d}) + "\n" for i, d in CORPUS.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    )
    rows = [f"{q}\t{d}\t{g}" for q, j in QRELS.items() for d, g in j.items()]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows))
    return folder


def write_llm_cascade(folder: Path, url: str) -> Path:
    """``cascade.toml`` in ``folder``: BM25 keeps 2, then an OpenAI-compatible pointwise judge
    at ``url`` that tries once (a failed call degrades its query at once)."""
    path = folder / "cascade.toml"
    path.write_text(
        'name = "llm-cascade"\n\n[[stages]]\nname = "first"\nreranker = "bm25"\nkeep = 2\n\n'
        '[[stages]]\nname = "judge"\nscorer = { type = "llm_pointwise", provider = "openai", '
        f'model = "m", base_url = "{url}", '
        "retry = { attempts = 1, timeout = 5, min_wait = 0, max_wait = 0 } }\n"
    )
    return path
