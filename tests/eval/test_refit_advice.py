"""The refit advice under an evaluation's ECE column: candidates given in memory are named by
a placeholder (tune takes the same mapping), never written out; the same pipeline gets the
same advice whether it was passed as a file or as an object; and no advice recommends the
refit that was just tried (tune's own report after ``calibrate=True``)."""

from __future__ import annotations

import json

from eval_tiny import write_tiny

import rerankit
from rerankit.config import read_spec
from rerankit.errors import flags_first
from rerankit.eval import evaluate
from rerankit.eval.notes import calibration_note, fitted_on, refit_call
from rerankit.training.labelling import LABEL_REPORT, first_stage_mismatch

#: a notebook's candidates: many queries, many (doc id, score) pairs each
MANY = {f"PLAIN-{q}": [(f"MED-{q}-{d}", 1.0 / (d + 1)) for d in range(20)] for q in range(300)}
PLACEHOLDER = "first_stage=<the same mapping you passed>"
OFF = [{"pipeline": "hybrid", "ece": 0.07}, {"pipeline": "calibrated", "ece": 0.06}]

#: a calibrated fusion whose output calibration is not the default hybrid's: a refit
SPEC = (
    'name = "learned"\n\n[[stages]]\nname = "learned"\nnormalization = "calibrated"\n'
    "output_calibration = { slope = 3.0, intercept = 1.5 }\n"
    "scorers = [\n"
    '  { type = "bm25", name = "bm25_background", weight = 0.5, calibration = { slope = 4, '
    "intercept = -2 } },\n"
    '  { type = "proximity", weight = 0.5, calibration = { slope = 6, intercept = -1 } },\n'
    "]\n"
)
#: a calibrated fusion of other signals, written by hand: no refit by tune
OWN = SPEC.replace('type = "bm25", name = "bm25_background"', 'type = "coverage"')
HEADER = (
    "# Written by `rerankit tune --calibrate` on tiny test:odd (2 queries): refitted weights "
    "did not beat the default's order, so this is the default hybrid's order with its "
    "probabilities refitted to these judgments.\n"
)


def test_candidates_in_memory_are_named_by_a_placeholder_never_written_out():
    said = calibration_note(OFF[:1], {"data": "my-data", "first_stage": MANY, "candidates": 20})
    assert f'rerankit.training.tune("my-data", {PLACEHOLDER}, candidates=20' in said
    assert "MED-" not in said and "PLAIN-" not in said and len(said) < 1200
    assert "which tune takes as evaluate does" in said
    call = refit_call("my-data", MANY, 20, split="test:even")
    assert "MED-" not in call and PLACEHOLDER in call
    assert 'train_split="test:odd", test_split="test:even"' in call


def test_evaluate_on_candidates_in_memory_advises_tune_with_the_same_mapping(tmp_path):
    folder = write_tiny(tmp_path / "tiny")
    pipeline = tmp_path / "mine.toml"
    pipeline.write_text(OWN)
    given = {"q1": [("d3", 9.5), ("d1", 6.5)], "q2": [("d2", 3.0)], "q3": [("d4", 1.0)]}
    result = evaluate(folder, {"mine": str(pipeline)}, first_stage=given, embedding_cache=False)
    note = next(line for line in result.table().split("\n") if line.startswith("ECE:"))
    assert PLACEHOLDER in note and "'d3'" not in note
    assert "written to a file" not in note and 'first_stage="candidates.jsonl"' not in note
    out = tmp_path / "out"  # out= wrote them too: that file is another way
    result = evaluate(
        folder, {"mine": str(pipeline)}, first_stage=given, out=out, embedding_cache=False
    )
    note = next(line for line in result.table().split("\n") if line.startswith("ECE:"))
    assert PLACEHOLDER in note and f"or {out / 'candidates.jsonl'}, where out= wrote" in note


def test_a_label_report_without_digests_names_candidates_in_memory_by_their_count(tmp_path):
    (tmp_path / LABEL_REPORT).write_text(json.dumps({"first_stage": "bm25", "candidates": 20}))
    said = first_stage_mismatch(tmp_path, MANY, 20)
    assert "candidates given for 300 queries" in said and "MED-" not in said


def test_the_same_pipeline_gets_the_same_advice_as_a_file_and_as_an_object(tmp_path):
    path = tmp_path / "learned.toml"
    path.write_text(HEADER + SPEC)
    in_memory = rerankit.load(read_spec(path))
    assert fitted_on(str(path), rerankit.load(path))["calibrated"]
    assert fitted_on(in_memory, in_memory) == {"data": None, "split": None, "calibrated": True}
    bare = tmp_path / "bare.toml"  # the same pipeline without tune's header
    bare.write_text(SPEC)
    assert fitted_on(str(bare), rerankit.load(bare))["calibrated"]
    default = tmp_path / "default.toml"  # the default's output calibration: no refit
    default.write_text(
        SPEC.replace("slope = 3.0, intercept = 1.5", "slope = 1.588705, intercept = 1.290698")
    )
    assert fitted_on(str(default), rerankit.load(default)) is None
    assert fitted_on("hybrid", rerankit.load("hybrid")) is None
    own = tmp_path / "own.toml"
    own.write_text(OWN)
    assert fitted_on(str(own), rerankit.load(own)) is None

    rows = [{"pipeline": n, "ece": 0.06} for n in ("hybrid", "object", "file")]
    said = calibration_note(rows, {"data": "d", "refitted": ["object", "file"]})
    # one sentence for all three: no refit advised while a refit in the table is off too
    assert "Above 0.05 for hybrid, object, file: object, file are already refits" in said
    assert 'tune("d"' not in said and "refit before relying" not in said


def test_evaluate_advises_a_refit_passed_as_an_object_as_it_does_its_file(tmp_path):
    folder = write_tiny(tmp_path / "tiny")
    path = tmp_path / "learned.toml"
    path.write_text(HEADER + SPEC)
    pipelines = {"object": rerankit.load(read_spec(path)), "file": str(path)}
    result = evaluate(folder, pipelines, embedding_cache=False)
    eces = {r["pipeline"]: r["ece"] for r in result.rows if r.get("ece") is not None}
    assert eces["object"] == eces["file"] > 0.05
    note = next(line for line in result.table().split("\n") if line.startswith("ECE:"))
    assert "Above 0.05 for object, file: object, file are already refits" in note
    assert "tune(" not in note.split("already refits by")[1].split("calibrate=True)")[1]


def test_after_a_calibrate_run_that_kept_the_default_no_advice_runs_it_again():
    ran = {"data": "d", "candidates": 20, "split": "test:even", "tried": "calibrated"}
    for wording in (None, flags_first):
        if wording is None:
            said = calibration_note(OFF, ran)
        else:
            with wording():
                said = calibration_note(OFF, ran)
        assert "Above 0.05 for hybrid, calibrated: the refit this" in said
        assert "so calibrated has the default's probabilities" in said
        assert "calibrated.toml" not in said and "already a refit" not in said
        assert "a refit may pay once more queries are judged" in said
    # tune's written file is a refit that is well calibrated: the default is told so
    said = calibration_note(
        [*OFF[:1], {"pipeline": "calibrated", "ece": 0.02}], {**ran, "refitted": "calibrated"}
    )
    assert said.endswith("as here: calibrated is that refit")


def _judged_folder(folder, queries: int):
    """A BEIR folder with ``queries`` judged test queries and no training split."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        "".join(f'{{"_id": "q{i}", "text": "query {i}"}}\n' for i in range(queries))
    )
    (folder / "corpus.jsonl").write_text(
        "".join(f'{{"_id": "d{i}", "text": "doc {i}"}}\n' for i in range(queries))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(queries))
    )
    return folder


def _run(path, queries):
    path.write_text("".join(f"{q} Q0 d0 1 1.0 mine\n" for q in queries))
    return str(path)


def test_a_refit_is_not_advised_as_a_command_tune_would_refuse(tmp_path):
    """A run that ranks a few of the evaluated queries: tune would fit on test:odd's ranked
    ones, fewer than it takes, and refuse the command the note gave; now the note says
    what a refit needs."""
    folder = str(_judged_folder(tmp_path / "data", 20))
    few = _run(tmp_path / "few.trec", ["q0", "q1", "q2", "q3", "q4"])  # 3 at odd positions
    call = refit_call(folder, few, 100, split="test")
    assert "--calibrate" not in call and "calibrate=True, out" not in call
    assert "none can be refit here yet" in call
    assert f"the test:odd split's judged queries that {few} ranks are 3" in call
    assert "at least 4 judged queries" in call and "judge more queries" in call
    with flags_first():
        said = refit_call(folder, few, 100, split="test")
    assert "rerankit tune --calibrate fits on at least 4" in said
    # enough of them: the command, as before
    many = _run(tmp_path / "many.trec", [f"q{i}" for i in range(10)])
    assert 'train_split="test:odd", test_split="test:even"' in refit_call(
        folder, many, 100, split="test"
    )
    # --max-queries 3 leaves tune 3 of the odd half
    assert "the first 3 of the test:odd split's" in refit_call(folder, many, 100, 3, "test")
    assert "calibrate=True" in refit_call(folder, many, 100, 8, "test")  # 5 of them: enough
    note = calibration_note(OFF, {"data": folder, "first_stage": few, "split": "test"})
    assert "as here: none can be refit here yet" in note and "calibrated.toml" not in note


def test_a_half_of_the_split_nobody_named_is_explained(tmp_path):
    """Three judged test queries and no training split: tune would fit on test:odd (2 of
    them) and refuse; the note named ``test:odd`` without saying where that split came
    from, so a user who evaluated ``test`` could not tell. Now it says why."""
    folder = _judged_folder(tmp_path / "data", 3)
    call = refit_call(str(folder), "auto", 10, split="test")
    assert "the test split's judged queries" not in call  # tune's fit split is named below
    assert (
        "the test:odd split's judged queries are 2 (the folder has no qrels/train.tsv, so "
        "tune fits on half of the test split's queries, test:odd, and checks the refit on "
        "the other half, test:even); judge more queries"
    ) in call
    # evaluating the even half: tune fits on the odd one, and says so
    even = refit_call(str(folder), "auto", 10, split="test:even")
    assert "test:odd, and checks the refit on the other half, test:even)" in even
    # a training split the retriever's file does not rank: that is the reason given
    (folder / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"t{i}\td0\t1\n" for i in range(8))
    )
    few = _run(tmp_path / "few.trec", ["q0", "q1", "q2"])
    said = refit_call(str(folder), few, 10, split="test")
    assert f"({few} ranks too few of the train split's queries, so tune fits on half" in said
    # the training split tune reads by default: nothing to explain
    assert "(the folder" not in refit_call(str(folder), "auto", 10, split="test")
