"""What ``tune`` says after writing a pipeline: when its scores are not probabilities like
the default ``hybrid``'s (a ``--keep-learned`` fusion's are relative), a served
``relevance_score`` threshold stops meaning what it did, and tune's output says so."""

from __future__ import annotations

from types import SimpleNamespace

from rerankit.training.reporting import Reporter
from rerankit.training.selection import write_pipeline


def _said(tmp_path, spec) -> str:
    report = Reporter()
    opts = SimpleNamespace(out=str(tmp_path / f"{spec['name']}.toml"))
    write_pipeline(opts, "tuned.toml", spec, "a test pipeline", report)
    return "\n".join(report.lines)


def test_a_written_pipeline_with_relative_scores_says_its_scale_differs_from_the_default(
    tmp_path,
):
    said = _said(tmp_path, {"name": "learned", "stages": [{"reranker": "hybrid-relative"}]})
    assert "scores are relative, not probabilities" in said, said
    assert "relevance_score > 0.5" in said and "Scores over HTTP" in said


def test_a_written_pipeline_with_probabilities_says_nothing_of_its_scale(tmp_path):
    default = {"name": "tuned", "stages": [{"reranker": "hybrid"}]}
    cascade = {"name": "cut", "stages": [{"reranker": "bm25", "keep": 50}, {"reranker": "hybrid"}]}
    for spec in (default, cascade):
        said = _said(tmp_path, spec)
        assert "not probabilities" not in said, said
