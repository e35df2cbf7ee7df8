"""``eval --baseline``'s "within noise" says about how many judged queries would settle a
gain, as ``tune`` does of a learned pipeline not adopted (the same estimate and words)."""

from __future__ import annotations

import math
import statistics

from rerankit.eval.compare import against, format_against
from rerankit.eval.metrics import paired_standard_error


def _rows():
    """A baseline and three pipelines over 8 queries: ``ahead`` gains but within noise,
    ``clear`` gains well beyond it, ``behind`` loses within noise."""
    base = {f"q{i}": 0.5 for i in range(8)}
    ahead = dict(zip(base, [0.9, 0.3, 0.8, 0.4, 0.7, 0.5, 0.6, 0.3], strict=True))
    clear = {q: v + 0.2 + 0.01 * i for i, (q, v) in enumerate(base.items())}
    behind = dict(zip(base, [0.1, 0.7, 0.2, 0.6, 0.3, 0.5, 0.4, 0.7], strict=True))
    named = {"first stage": base, "ahead": ahead, "clear": clear, "behind": behind}
    return [{"pipeline": n, "per_query_ndcg@10": s} for n, s in named.items()]


def test_a_gain_within_noise_says_how_many_queries_would_clear_it():
    rows = _rows()
    entries = {e["pipeline"]: e for e in against(rows, "first stage")}
    diffs = [rows[1]["per_query_ndcg@10"][q] - 0.5 for q in rows[0]["per_query_ndcg@10"]]
    gain, se = statistics.fmean(diffs), paired_standard_error(diffs)
    assert entries["ahead"]["verdict"] == "within noise" and gain > 0
    expected = math.ceil(8 * (2 * se / gain) ** 2)
    assert entries["ahead"]["queries_to_clear"] == expected > 8
    # better already, or behind: nothing to settle by more queries
    assert entries["clear"]["verdict"] == "better"
    assert entries["clear"]["queries_to_clear"] is None
    assert entries["behind"]["queries_to_clear"] is None
    table = format_against(rows, "first stage")
    assert (
        f"ahead, within noise: its gain, {100 * gain:+.2f}, would clear 2 x the noise with "
        f"about {expected} judged queries like these, if it held" in table
    ), table
    assert "clear, within" not in table and "behind, within" not in table
