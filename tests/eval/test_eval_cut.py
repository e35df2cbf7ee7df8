"""A pipeline that ends in a score cut (``min_score`` with a floor) scores only what it
kept: eval measures its recall at each threshold against every relevant candidate of the
first stage, and says under the table that its ECE and thresholds describe only what it
kept, without advising a refit of its calibration."""

from __future__ import annotations

from eval_tiny import write_tiny

from rerankit.eval import evaluate
from rerankit.eval.thresholds import format_thresholds, threshold_rows

#: probabilities from a calibrated fusion of model-free signals
OWN = (
    'name = "mine"\n\n[[stages]]\nname = "mine"\nnormalization = "calibrated"\n'
    "output_calibration = { slope = 3.0, intercept = 1.5 }\n"
    "scorers = [\n"
    '  { type = "coverage", weight = 0.5, calibration = { slope = 4, intercept = -2 } },\n'
    '  { type = "proximity", weight = 0.5, calibration = { slope = 6, intercept = -1 } },\n'
    "]\n"
)
CUT = OWN + '\n[[stages]]\nrule = { type = "min_score", threshold = 0.9, keep_at_least = 1 }\n'


def test_recall_counts_the_relevant_candidates_a_pipeline_dropped():
    scores = {"q1": {"a": 0.9}, "q2": {"d": 0.6}}  # b, c and e dropped by a cut
    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"e": 1}}
    given = {"q1": ["a", "b", "c"], "q2": ["d", "e"]}
    rows = threshold_rows(scores, qrels, (0.5,), candidates=given)
    assert rows[0]["relevant"] == 3 and rows[0]["recall"] == 1 / 3
    assert rows[0]["dropped"] == 3 and rows[0]["kept"] == 2
    assert threshold_rows(scores, qrels, (0.5,))[0]["recall"] == 1.0  # what it kept only


def test_eval_of_a_cut_measures_recall_over_every_candidate_and_says_what_it_kept(tmp_path):
    folder = write_tiny(tmp_path / "tiny")
    (tmp_path / "mine.toml").write_text(OWN)
    (tmp_path / "cut.toml").write_text(CUT)
    pipelines = {"mine": str(tmp_path / "mine.toml"), "cut": str(tmp_path / "cut.toml")}
    result = evaluate(folder, pipelines, candidates=4, embedding_cache=False)
    rows = {r["pipeline"]: r for r in result.rows}
    assert rows["cut"]["dropped_candidates"] > 0 and rows["mine"]["dropped_candidates"] == 0
    assert rows["cut"]["ece"] > 0.05  # over what it kept: the high scores alone
    # recall's denominator: every relevant candidate, the same for both
    low = {name: t[0] for name, t in result.thresholds.items()}
    assert low["cut"]["relevant"] == low["mine"]["relevant"] == 4
    assert low["cut"]["recall"] <= low["mine"]["recall"]
    table = result.table()
    assert "Above 0.05 for cut" not in table and "refit before relying" not in table
    note = next(line for line in table.splitlines() if line.startswith("Dropped some"))
    assert "cut (" in note and "mine" not in note
    assert "describe only the candidates they kept" in note
    assert "measure the ranker without it" in note
    printed = format_thresholds(result.thresholds)
    assert "cut dropped" in printed and "mine dropped" not in printed
