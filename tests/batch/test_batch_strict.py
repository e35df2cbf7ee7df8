"""`BatchSummary.status(strict=True)`: `rerankit batch --strict`'s exit status from Python,
where a degraded row counts as failed (a CI smoke test of a pipeline file run through
`run_batch`)."""

from __future__ import annotations

import json

from rerankit.batch import run_batch
from rerankit.registry import register


class NeedsBoost:
    """A plugin scorer that reads a field only some documents have: the rows whose
    candidates lack it degrade (the first stage's order is kept)."""

    name = "strict_needs_boost"

    async def score(self, query, docs, **context):
        return [float(d.metadata["boost"]) for d in docs]


register("scorer", "strict_needs_boost", NeedsBoost)

CASCADE = '[[stages]]\nreranker = "bm25"\n\n[[stages]]\n[stages.scorer]\ntype = "{second}"\n'


def test_strict_counts_a_degraded_row_as_failed(tmp_path):
    pipeline = tmp_path / "cascade.toml"
    pipeline.write_text(CASCADE.format(second="strict_needs_boost"))
    boosted = [
        {"id": "a", "text": "solar power", "boost": 2},
        {"id": "b", "text": "wind", "boost": 1},
    ]
    plain = [{"id": "a", "text": "solar power"}, {"id": "b", "text": "wind"}]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps({"query": "solar", "candidates": c}) + "\n" for c in (boosted, plain))
    )
    summary = run_batch(rows, tmp_path / "out.jsonl", str(pipeline))
    assert (summary.rows, summary.failures, summary.degraded) == (2, 0, 1)
    assert (summary.exit_status, summary.status(), summary.failed_rows()) == (0, 0, 0)
    assert (summary.status(strict=True), summary.failed_rows(strict=True)) == (3, 1)  # some
    only_plain = tmp_path / "plain.jsonl"
    only_plain.write_text(rows.read_text().splitlines()[1] + "\n")
    every = run_batch(only_plain, tmp_path / "plain_out.jsonl", str(pipeline))
    assert (every.exit_status, every.status(strict=True)) == (0, 1)  # every row
