"""``rerankit tune --clicks LOG`` and ``rerankit interleave-report LOG`` end to end, on
logs written by rerankit's click simulator."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

import rerankit
from rerankit.cli import build_parser, main
from rerankit.config import read_spec
from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import (
    ClickLog,
    PositionBasedModel,
    learn_from_log,
    read_log,
    team_draft,
    text_hash,
    write_features,
)
from rerankit.training.clicks.advice import FAR_TOO_FEW, deploy_advice, verdict
from rerankit.training.clicks.deploy import Written
from rerankit.training.clicks.optimized import optimized_interleave
from rerankit.training.clicks.sessions import records
from rerankit.training.clicks.simulate import simulate_query

TOPICS = [
    "solar power",
    "wind turbines",
    "vaccines",
    "interest rates",
    "pasta sauce",
    "volcanoes",
    "honey bees",
    "chess openings",
    "coral reefs",
    "marathon training",
    "sourdough bread",
    "black holes",
]


def _texts(q: int) -> list[str]:
    topic = TOPICS[q]
    texts = [f"A practical guide to {topic}.", f"{topic.capitalize()}: what research says."]
    return texts + [f"Notes on {TOPICS[(q + i) % len(TOPICS)]}." for i in range(1, 7)]


def _simulated_log(
    path, store: str, sessions: int = 60, *, pipeline: str = "old", explore: float = 0.0
) -> None:
    """Users who click what is about their query, over a ranker that shows it anywhere
    (with RandPair swapping that share of the pairs below the top 3 when ``explore``)."""
    rng = np.random.default_rng(0)
    log = ClickLog(path, store=store)
    for q, topic in enumerate(TOPICS):
        logged = simulate_query(
            PositionBasedModel(),
            key=f"q{q}",
            query=topic,
            doc_ids=[f"{q}-{i}" for i in range(8)],
            order=rng.permutation(8),
            grades=np.array([4, 3, 0, 0, 0, 0, 0, 0]),
            sessions=sessions,
            rng=rng,
            first_stage=rng.random(8).tolist(),
            explore=explore,
        )
        texts = _texts(q)
        logged.texts = texts if store == "text" else []
        logged.hashes = [text_hash(t) for t in texts] if store == "hash" else []
        for impression, feedback in records(logged, pipeline=pipeline):
            log.write(impression)
            if feedback:
                log.write(feedback)


def test_tune_clicks_learns_from_a_hashed_log_with_the_corpus_and_writes_beside_it(
    tmp_path, capsys, tiny_st
):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "hash", sessions=30)
    out = tmp_path / "out" / "clicks.toml"
    assert main(["tune", "--clicks", str(log), "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert "no text for document" in error and "--data" in error  # hashes only: needs --data
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    argv = ["tune", "--clicks", str(log), "--data", str(corpus), "--out", str(out)]
    # a tiny random embedding model: the words the query shares carry the signal here
    assert main([*argv, "--folds", "3", "--embedding-model", str(tiny_st)]) == 0
    printed = capsys.readouterr().out
    assert "read 1 file: 360 impressions" in printed
    assert "sessions by pipeline: old 360" in printed
    clicks = sum(len(s.clicks) for s in read_log(log)[0])
    assert f"clicks: {clicks} in the log, {clicks} counted (in the first 10 positions)" in printed
    assert "propensities by position (" in printed and "9: n/a (never shown)" in printed
    assert "sessions a query:" in printed and "verdict: " in printed
    propensities = json.loads(out.with_name("clicks.propensities.json").read_text())
    assert propensities["by_position"][0] == 1.0 and len(propensities["by_position"]) == 10
    # 360 sessions leave few clicks low on the page: said under the estimate, and recorded
    assert "\n  warning: propensities not reliable at position" in printed
    assert propensities["warning"].startswith("propensities not reliable at position")
    assert propensities["warning"] in printed
    assert propensities["clicks_by_position"][8:] == [0, 0]  # 8 documents: 9 and 10 unshown
    # clicks on the two about the query are a strong signal: the learned ranker wins
    assert "adopted: it beats what was served" in printed
    # on 360 sessions: with how little it rests on
    assert "; but far too few sessions for a verdict: 360 sessions over 12 queries" in printed
    assert read_spec(out)["name"] == "learned-from-clicks"
    assert out.with_suffix(".lgb.txt").is_file()
    # the features read the tiny model: so does the pipeline, and the model's report says so
    stage = read_spec(out)["stages"][0]  # the learned score alone, or blended
    learned_entry = stage["scorer"] if "scorer" in stage else stage["scorers"][0]
    assert learned_entry["embedding"] == str(tiny_st)
    report = json.loads(out.with_suffix(".lgb.json").read_text())
    assert report["embedding_model"] == str(tiny_st)
    assert report["propensities"]["warning"] == propensities["warning"]
    model = out.with_suffix(".lgb.txt")
    # each file named with what reads it; the three to deploy named together
    assert f"wrote {model}: the model: the pipeline loads it" in printed
    assert f"wrote {model.with_suffix('.json')}: the model's report" in printed
    propensities_file = out.with_name("clicks.propensities.json")
    assert f"wrote {propensities_file}: the propensities by position: for you; serving" in printed
    assert f"to deploy, copy {out}, {model}, {model.with_suffix('.json')} together" in printed
    # what serving it asks: relative scores, and the first-stage score the log carried
    assert "note: its scores are relative (min-max within each request" in printed
    assert "relevance_score > 0.5" in printed
    assert "note: it reads each document's first-stage score" in printed
    # what clients see: the name changes; the comparison to run; the next round's --served
    assert (
        "note: it is served as 'learned-from-clicks' (the name in clicks.toml); clients that "
        "name 'old', and those using Cohere's model names" in printed
    )
    assert 'set name = "old" in clicks.toml, or' in printed
    assert '[pipelines.old] reranker = "clicks.toml"' in printed
    # "old" runs nowhere here and the corpus has no judgments: what the command needs is said
    assert (
        f"compare the two on judged queries first: rerankit eval --data FOLDER --first-stage "
        f"RUN --rerankers {out}, where FOLDER: a BEIR-layout folder with judgments "
        f"(corpus.jsonl, queries.jsonl, qrels/test.tsv); {corpus} is not one; RUN: old's "
        "rankings of FOLDER's queries as a TREC run file" in printed
    )
    assert f"learn again from that log with --served {out}" in printed


def test_a_pipeline_learned_from_clicks_and_its_model_moved_together_still_load(
    tmp_path, capsys, moved_together
):
    """The pipeline names its model relative to itself (they are written side by side),
    and loading reads it from the pipeline file's folder, whatever the working directory."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    out = tmp_path / "out" / "clicks.toml"
    argv = ["tune", "--clicks", str(log), "--features", str(_random_features(tmp_path))]
    assert main([*argv, "--out", str(out), "--folds", "3", "--keep-learned"]) == 0
    assert "together (the pipeline names its model beside it)" in capsys.readouterr().out
    docs = ["solar power guide", "pasta sauce notes", "wind turbines research"]
    moved_together(out, "clicks.lgb.txt", docs)


def _random_features(folder):
    """A features file of random numbers for the simulated log's queries."""
    rng = np.random.default_rng(1)
    rows = {
        f"q{q}": ([f"{q}-{i}" for i in range(8)], rng.random((8, len(FEATURES))))
        for q in range(len(TOPICS))
    }
    return write_features(rows, folder / "features.npz")


def test_tune_clicks_writes_what_served_the_log_when_learning_does_not_win(tmp_path, capsys):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    served = tmp_path / "served.toml"
    served.write_text('name = "served"\nreranker = "bm25"\n')
    out = tmp_path / "clicks.toml"
    # features of random numbers: nothing to learn from them, so what served is kept
    features = _random_features(tmp_path)
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--out", str(out)]
    assert main([*argv, "--served", str(served), "--folds", "3"]) == 0
    printed = capsys.readouterr().out
    # 5 sessions a query, just above the floor: said plainly, not as a measurement
    line = next(x for x in printed.splitlines() if x.startswith("verdict: "))
    assert re.fullmatch(
        r"verdict: far too few sessions for a verdict: \d+ sessions over \d+ queries with a "
        r"click; not adopted: what served the log is kept; about 80,000 are needed \(.*",
        line,
    ), line
    assert "counterfactual" not in line and "noise" not in line
    assert "rerankit check --clicks LOG counts them" in line  # what to do about it
    assert f"wrote {out}: the pipeline that served the log ({served})" in printed
    assert read_spec(out) == read_spec(served)
    assert f"nothing to deploy: {out} is what served the log (serving it changes nothing)" in (
        printed
    )
    assert "run again with --keep-learned" in printed and "to deploy," not in printed
    assert "first-stage score" not in printed  # bm25 reads none: nothing asked
    # a registered name works as --served too
    assert main([*argv, "--served", "bm25", "--folds", "3"]) == 0
    printed = capsys.readouterr().out
    said = "the pipeline that served the log (bm25, as --served bm25 names it)"
    assert f"wrote {out}: {said}" in printed
    assert read_spec(out) == {"name": "bm25", "reranker": "bm25"}
    assert rerankit.load(str(out)).score_scale == "relative"
    assert "note: its scores" not in printed  # what served, served again: callers see no change
    assert "it is served as" not in printed and "learn again" not in printed  # nothing to add
    # neither a file nor a registered name: said before any work
    assert main([*argv, "--served", "no-such-ranker", "--folds", "3"]) == 2
    error = capsys.readouterr().err
    # the command's error names the flag given (beside the keyword of the library it calls)
    assert "--served no-such-ranker: neither a pipeline file" in error
    assert "bm25" in error
    # asked to keep the learned pipeline all the same: written, and said so
    assert main([*argv, "--served", str(served), "--folds", "3", "--keep-learned"]) == 0
    printed = capsys.readouterr().out
    assert "the learned ranker is fitted anyway, as asked" in printed
    assert (
        f"wrote {out}: the learned pipeline, not adopted: written anyway as asked "
        "(--keep-learned)" in printed
    )
    assert read_spec(out)["name"] == "learned-from-clicks"


@pytest.mark.parametrize("logged", ["bm25", "old", ""])
def test_tune_clicks_without_served_writes_the_pipeline_the_log_names(tmp_path, capsys, logged):
    """Not adopted and no --served: the log's pipeline when it is a registered name, else
    the default hybrid, saying that it is not what served the log and why."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5, pipeline=logged)
    out = tmp_path / "clicks.toml"
    features = _random_features(tmp_path)
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--out", str(out)]
    assert main([*argv, "--folds", "3"]) == 0
    printed = capsys.readouterr().out
    assert "not adopted" in printed
    if logged == "bm25":
        assert f"wrote {out}: the pipeline that served the log (bm25, as the log names it)" in (
            printed
        )
        assert read_spec(out) == {"name": "bm25", "reranker": "bm25"}
        # the simulated feedback comes half a second after its answer: a limit of 0 s
        # leaves out all but the first sessions' (logged at time 0, so never judged late)
        assert main([*argv, "--folds", "3", "--max-feedback-delay", "0"]) == 1
        assert "too few clicks to learn from" in capsys.readouterr().err
        return
    why = f"the log names {logged!r}, not a registered name" if logged else "names no pipeline"
    assert f"wrote {out}: the default hybrid (first stage + MiniLM), NOT what served" in printed
    assert why in printed and "or a registered name, with --served to write it" in printed
    assert read_spec(out)["name"] == "hybrid"
    assert "note: it reads each document's first-stage score" in printed  # the default does


def test_tune_clicks_notes_the_top_positions_no_swap_measured(tmp_path, capsys):
    """RandPair below the top 3 measures positions 5 and below; positions 2-4 come from the
    logged order alone, and the note says so (and that exploring does not fix them)."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=80, explore=0.5)
    features = _random_features(tmp_path)
    argv = ["tune", "--clicks", str(log), "--features", str(features)]
    assert main([*argv, "--out", str(tmp_path / "c.toml"), "--folds", "3"]) == 0
    printed = capsys.readouterr().out
    assert "adjacent ratios from swaps where measured" in printed
    assert "note: positions 2-4 were not measured by exchanged pairs" in printed
    assert (
        "RandPair in the service never moves the top 3, so its exploration does not fix" in printed
    )
    assert "was good" not in printed
    assert "      80 sessions a query:" in printed  # whole sessions print as whole numbers


def test_tune_clicks_writes_the_features_once_and_reads_them_after(tmp_path, capsys, tiny_st):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    features = tmp_path / "kept" / "features.npz"
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--folds", "3"]
    argv += ["--out", str(tmp_path / "c.toml"), "--embedding-model", str(tiny_st)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert f"features written to {features}" in first and features.is_file()
    written = features.stat().st_mtime_ns
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert f"features read from {features}" in second
    assert features.stat().st_mtime_ns == written
    verdict = [line for line in first.splitlines() if line.startswith("verdict:")]
    assert verdict == [line for line in second.splitlines() if line.startswith("verdict:")]
    # features of another embedding model, or of another log: an error, not a silent mix
    assert main([*argv[:-2]]) == 1
    assert "not MiniLM as asked" in capsys.readouterr().err
    other = tmp_path / "other.jsonl"
    _simulated_log(other, "text", sessions=5)
    with open(other, "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "type": "impression",
                    "id": "x",
                    "query": "new query",
                    "documents": [{"id": "n1", "text": "new"}],
                    "shown": [0],
                }
            )
            + "\n"
        )
    assert main(["tune", "--clicks", str(other), *argv[3:]]) == 1
    assert "no features for the log's query 'new query'" in capsys.readouterr().err


def test_tune_needs_data_or_clicks(capsys):
    assert main(["tune"]) == 1
    assert "--data FOLDER (judgments) or --clicks LOG" in capsys.readouterr().err


def test_interleave_report_names_the_pipeline_users_prefer(tmp_path, capsys):
    rng = np.random.default_rng(3)
    log = ClickLog(tmp_path / "interleaved.jsonl", store="id")
    user = PositionBasedModel()
    grades = np.array([4, 3, 2, 1, 0, 0, 0, 0])
    for s in range(600):
        order, teams = team_draft([4, 5, 0, 1, 2, 3, 6, 7], list(range(8)), rng, k=8)
        docs = [{"id": f"d{i}"} for i in range(8)]
        pair = {"pipelines": ["current", "candidate"], "teams": teams}
        log.log_impression(f"s{s}", f"query {s % 30}", docs, order, interleaving=pair)
        clicked = user.click(np.array([order]), grades, rng)[0]
        if clicked.any():
            log.log_feedback(f"s{s}", [order[p] for p in np.flatnonzero(clicked)])
    assert main(["interleave-report", str(tmp_path / "interleaved.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "read 1 file: 600 impressions" in printed and "winner: candidate" in printed
    flipped = ["--pipelines", "candidate", "current", "--confidence", "0.9"]
    assert main(["interleave-report", str(tmp_path / "interleaved.jsonl"), *flipped]) == 0
    assert "winner: candidate" in capsys.readouterr().out
    assert main(["interleave-report", str(tmp_path / "interleaved.jsonl"), "--by", "query"]) == 0
    printed = capsys.readouterr().out
    assert "interval over queries" in printed and "winner: candidate" in printed
    # the log named as check and tune name it: the same report
    assert main(["interleave-report", "--clicks", str(tmp_path / "interleaved.jsonl")]) == 0
    assert "winner: candidate" in capsys.readouterr().out
    assert main(["interleave-report"]) == 2
    assert "name the click log: rerankit interleave-report LOG" in capsys.readouterr().err
    # feedback is written within moments of its answer here: a minute's limit keeps it
    # all, a limit of 0 s leaves it all out (and so finds no winner)
    log_path = str(tmp_path / "interleaved.jsonl")
    assert main(["interleave-report", log_path, "--max-feedback-delay", "60", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["read"]["late_feedback"] == 0
    assert main(["interleave-report", log_path, "--max-feedback-delay", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["read"]["late_feedback"] == report["read"]["feedback"] > 0
    assert report["winner"] is None
    with pytest.raises(SystemExit):
        main(["interleave-report", log_path, "--max-feedback-delay", "-1"])
    # a pair the log does not hold: the error says which pairs it does
    assert (
        main(["interleave-report", str(tmp_path / "interleaved.jsonl"), "--pipelines", "a", "b"])
        == 1
    )
    error = capsys.readouterr().err
    assert "no interleaved sessions of a and b" in error and "current and candidate" in error
    # ... and names the log and what was read of it
    assert (
        f"{tmp_path / 'interleaved.jsonl'}: " in error and "read 1 file: 600 impressions" in error
    )
    # the logs of two replicas, read together: the same report as the one log
    assert main(["interleave-report", str(tmp_path / "interleaved.jsonl")]) == 0
    whole = capsys.readouterr().out.splitlines()
    replicas = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    _split_by_answer(tmp_path / "interleaved.jsonl", replicas)
    assert main(["interleave-report", *map(str, replicas)]) == 0
    split = capsys.readouterr().out.splitlines()
    assert split[0].startswith("read 2 files: 600 impressions") and split[1:] == whole[1:]


def test_interleave_report_reads_optimized_sessions_and_a_log_of_both_names_one(tmp_path, capsys):
    rng = np.random.default_rng(4)
    path = tmp_path / "both.jsonl"
    log = ClickLog(path, store="id")
    user = PositionBasedModel()
    grades = np.array([4, 3, 2, 1, 0, 0, 0, 0])  # the candidate's order is the better one
    current, candidate = [4, 5, 0, 1, 2, 3, 6, 7], list(range(8))
    for s in range(300):
        order, credits = optimized_interleave(current, candidate, rng, k=8)
        docs = [{"id": f"d{i}"} for i in range(8)]
        pair = {"pipelines": ["current", "candidate"], "credits": credits}
        log.log_impression(f"s{s}", f"query {s % 30}", docs, order, interleaving=pair)
        clicked = user.click(np.array([order]), grades, rng)[0]
        if clicked.any():
            log.log_feedback(f"s{s}", [order[p] for p in np.flatnonzero(clicked)])
    log.flush()
    assert main(["interleave-report", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "(optimized)" in printed and "winner: candidate" in printed
    order, teams = team_draft(current, candidate, rng, k=8)
    pair = {"pipelines": ["current", "candidate"], "teams": teams}
    log.log_impression(
        "t", "query 0", [{"id": f"d{i}"} for i in range(8)], order, interleaving=pair
    )
    log.flush()
    assert main(["interleave-report", str(path)]) == 1
    assert "interleaved two ways (300 optimized and 1 team-draft)" in capsys.readouterr().err
    assert main(["interleave-report", str(path), "--method", "team-draft", "--json"]) == 0
    dashed = json.loads(capsys.readouterr().out)
    assert dashed["sessions"] == 1 and dashed["read"]["impressions"] == 301
    # the Python function's spelling, team_draft, names the same method
    assert main(["interleave-report", str(path), "--method", "team_draft", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == dashed


def _split_by_answer(log, parts: list) -> None:
    """The records of ``log`` shared among the logs ``parts`` by answer id, as replicas
    write them (each answer's impression and feedback in the log of the one that gave it)."""
    for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
        record = json.loads(line)
        part = parts[zlib.crc32(record["id"].encode()) % len(parts)]
        with open(part, "a", encoding="utf-8") as f:
            f.write(line)


def test_tune_and_interleave_report_read_the_logs_of_several_replicas(tmp_path, capsys):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    replicas = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    _split_by_answer(log, replicas)
    rotated = replicas[1].with_name("b.jsonl.1")  # the older half of b, rotated
    lines = replicas[1].read_text(encoding="utf-8").splitlines(keepends=True)
    rotated.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    replicas[1].write_text("".join(lines[len(lines) // 2 :]), encoding="utf-8")
    assert all(part.stat().st_size for part in [*replicas, rotated])
    features = _random_features(tmp_path)
    argv = ["--features", str(features), "--served", "bm25", "--folds", "3"]
    out = ["--out", str(tmp_path / "next.toml")]
    assert main(["tune", "--clicks", str(log), *argv, *out]) == 0
    whole = capsys.readouterr().out.splitlines()
    several = ["--clicks", str(replicas[0]), "--clicks", str(replicas[1])]
    assert main(["tune", *several, *argv, *out]) == 0
    split = capsys.readouterr().out.splitlines()
    assert whole[0] == "read 1 file: 60 impressions, 24 feedback records"
    assert split[0] == "read 3 files: 60 impressions, 24 feedback records"
    assert whole[1:] == split[1:]  # the same sessions: the same verdict
    assert main(["interleave-report", str(replicas[0]), "no-such.jsonl"]) == 2
    assert "no-such.jsonl: no such file (LOG: a click log" in capsys.readouterr().err


def _corpus(folder) -> None:
    folder.mkdir()
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for q in range(len(TOPICS)):
            for i, text in enumerate(_texts(q)):
                f.write(json.dumps({"_id": f"{q}-{i}", "title": "", "text": text}) + "\n")


def _stray_impression(path) -> None:
    """What the service logs for a request about documents of another corpus (docs/clicks.md's
    curl example): ids "0" and "1", their hashes."""
    log = ClickLog(path, store="hash")
    docs = [{"id": "0", "text": "Solar panels on roofs."}, {"id": "1", "text": "Wind farms."}]
    log.log_impression("stray", "solar power", docs, [0, 1])
    log.log_feedback("stray", [0])
    log.close()


def test_tune_clicks_skips_impressions_whose_documents_are_not_in_the_corpus(
    tmp_path, capsys, tiny_st
):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "hash", sessions=5)
    _stray_impression(log)
    _corpus(tmp_path / "corpus")
    out = tmp_path / "clicks.toml"
    argv = ["tune", "--clicks", str(log), "--data", str(tmp_path / "corpus"), "--out", str(out)]
    assert main([*argv, "--folds", "3", "--embedding-model", str(tiny_st)]) == 0
    printed = capsys.readouterr().out
    assert "61 impressions" in printed
    assert "(1 impression left out: a document without a text)" in printed
    assert (
        "impression stray: query 'solar power': no text for document '0' (the log keeps its "
        "hash); it is not in the corpus given" in printed
    )
    assert "60 sessions" in printed  # learned from the others
    curve = [line.split(":")[0] for line in printed.splitlines() if " a query:" in line]
    assert len(curve) == len(set(curve)) == 4  # 1, 2, 3 and 5 of each query's 5 sessions
    assert "       1 session a query:" in printed and "       2 sessions a query:" in printed


def test_tune_clicks_stops_when_no_impression_has_its_documents(tmp_path, capsys):
    log = tmp_path / "clicks.jsonl"
    _stray_impression(log)
    _corpus(tmp_path / "corpus")
    argv = ["tune", "--clicks", str(log), "--data", str(tmp_path / "corpus")]
    assert main([*argv, "--out", str(tmp_path / "clicks.toml")]) == 1
    error = capsys.readouterr().err
    assert "none of its 1 impressions can be learned from" in error
    assert "no text for document '0'" in error and "not in the corpus given" in error
    assert "--data" not in error  # it was given
    assert main(["tune", "--clicks", str(log), "--out", str(tmp_path / "clicks.toml")]) == 1
    assert "pass the corpus it came from" in capsys.readouterr().err  # it was not


def test_simulate_clicks_takes_the_training_split_by_its_name_and_the_old_spelling():
    for flag in ("--train-split", "--split"):
        args = build_parser().parse_args(
            ["simulate-clicks", "--data", "d", flag, "dev", "--out", "o"]
        )
        assert args.split == "dev"


def test_simulate_clicks_logs_every_candidate_shows_the_first_10_and_its_help_says_so(
    tmp_path, capsys, synthetic
):
    data = synthetic(tmp_path / "beir")
    log = tmp_path / "clicks.jsonl"
    argv = ["simulate-clicks", "--data", str(data), "--max-queries", "2", "--sessions", "3"]
    assert main([*argv, "--candidates", "12", "--out", str(log), "--no-progress"]) == 0
    sessions, _ = read_log(log)
    assert {(len(s.impression.documents), len(s.impression.shown)) for s in sessions} == {(12, 10)}
    with pytest.raises(SystemExit):
        main(["simulate-clicks", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "first-stage candidates per query: every one is logged, the first 10 in the " in text
    assert "all shown" not in text


def test_simulate_clicks_over_a_beir_folder_writes_a_log_tune_learns_from(
    tmp_path, capsys, synthetic, tiny_st
):
    data = synthetic(tmp_path / "beir")
    log = tmp_path / "clicks.jsonl"
    argv = ["simulate-clicks", "--data", str(data), "--max-queries", "6", "--sessions", "40"]
    assert main([*argv, "--out", str(log), "--seed", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {log}: 240 sessions of 6 queries" in printed and "served by bm25" in printed
    assert "propensities by position: 1, 0.897, 0.706, 0.5," in printed  # eta 1's truth
    features = log.with_suffix(".npz")
    assert (
        f"learn from it: rerankit tune --clicks {log} --data {data} --features {features} "
        "--out learned.toml"
    ) in printed
    assert "a rehearsal: the log's 'served' is the simulation's ranker (bm25)" in printed
    sessions, _ = read_log(log)
    assert len(sessions) == 240
    assert {s.impression.query_id for s in sessions} == {f"q{i}" for i in range(6)}
    assert {s.impression.pipeline for s in sessions} == {"bm25"}
    first = sessions[0].impression
    assert len(first.documents) == 10 and len(first.shown) == 10
    assert all(d.first_stage_score is not None and d.text is None for d in first.documents)
    # users click what the judgments call relevant far more often than the rest
    judged = {f"q{i}": {f"d{i % 5}-{i % 8}", f"d{i % 5}-{(i + 1) % 8}"} for i in range(6)}
    seen = {True: 0, False: 0}
    hit = {True: 0, False: 0}
    for s in sessions:
        docs = s.impression.documents
        clicked = {docs[i].id for i in s.clicks}
        for i in s.impression.shown[:3]:  # the top 3, looked at most
            rel = docs[i].id in judged[s.impression.query_id]
            seen[rel] += 1
            hit[rel] += docs[i].id in clicked
    assert hit[True] / seen[True] > 3 * hit[False] / seen[False]
    # the same seed gives the same log; an existing file is not appended to
    again = tmp_path / "again.jsonl"
    assert main([*argv, "--out", str(again), "--seed", "1", "--no-progress"]) == 0
    assert again.read_text() == log.read_text()
    assert main([*argv, "--out", str(log), "--no-progress"]) == 1
    assert "exists: simulate into a new file" in capsys.readouterr().err
    # RandPair: the top 3 never move, the pairs below them sometimes do
    explored = tmp_path / "explored.jsonl"
    assert main([*argv, "--out", str(explored), "--explore", "0.5", "--no-progress"]) == 0
    orders = {}
    for s in read_log(explored)[0]:
        orders.setdefault(s.impression.query_id, set()).add(tuple(s.impression.shown))
    assert all(len({o[:3] for o in shown}) == 1 for shown in orders.values())
    assert all(len(shown) > 1 for shown in orders.values())
    # each impression records its exchanged pairs as the service does ({"swapped": [...]},
    # [] when none was), and undoing them gives the logging pipeline's one order
    undone = {}
    for s in read_log(explored)[0]:
        swapped = s.impression.explore["swapped"]
        order = list(s.impression.shown)
        for p in swapped:
            order[p - 1], order[p] = order[p], order[p - 1]
        undone.setdefault(s.impression.query_id, set()).add(tuple(order))
        assert (tuple(order) == tuple(s.impression.shown)) == (swapped == [])
    assert all(len(orders) == 1 for orders in undone.values())
    assert all(s.impression.explore is None for s in read_log(log)[0])  # not explored
    # tune learns from it, with the collection as the corpus
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    capsys.readouterr()
    tune = ["tune", "--clicks", str(log), "--data", str(data), "--folds", "3"]
    assert main([*tune, "--out", str(tmp_path / "c.toml"), "--embedding-model", str(tiny_st)]) == 0
    printed = capsys.readouterr().out
    assert "6 queries, 240 sessions" in printed and "sessions by pipeline: bm25 240" in printed


def test_serve_help_puts_interleave_and_explore_in_server_not_in_feedback(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a [server] table (API keys, limits, interleave and explore, ...)" in text
    assert "with its [server.feedback] table (the click log" in text
    assert "[server.feedback] with interleave" not in text


def test_deploy_advice_names_the_old_pipeline_only_when_the_log_does():
    learned = Written(Path("out/learned.toml"), "the learned pipeline", learned=True)
    unnamed = deploy_advice(learned, None)
    assert "clients that name another pipeline" in unnamed[0] and "'hybrid'" not in unnamed[0]
    named = deploy_advice(learned, "current", served="serving.toml", data="my-data")
    assert '[pipelines.current] reranker = "learned.toml"' in named[0]
    # neither serving.toml nor my-data is here: the command says what it needs
    assert (
        "rerankit eval --data FOLDER --first-stage RUN --rerankers out/learned.toml" in (named[1])
    )
    assert "served='out/learned.toml' (--served)" in named[2]
    # for a team without judgments: interleaving on live traffic
    assert "without judged queries, put both in front of live traffic instead: " in named[1]
    assert '[server] interleave = ["current", "learned"]' in named[1]
    assert "rerankit interleave-report" in named[1]
    kept = Written(Path("out/learned.toml"), "what served", learned=False)
    assert deploy_advice(kept, "current") == []


def _judged_folder(folder: Path, split: str = "test") -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "solar"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "sun"}\n')
    (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


@pytest.mark.parametrize("split", ["test", "dev"])
def test_the_suggested_eval_command_parses_and_names_what_exists(tmp_path, monkeypatch, split):
    import shlex

    from rerankit import registry
    from rerankit.cli.main import build_parser

    monkeypatch.chdir(tmp_path)
    learned = tmp_path / "out" / "learned.toml"
    learned.parent.mkdir()
    learned.write_text('name = "learned"\nstages = []\n')
    judged = _judged_folder(tmp_path / "judged", split)
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text("")
    written = Written(learned, "the learned pipeline", learned=True)
    cases = [  # (what served the log, --data): a registered name or a file, a judged folder
        ("hybrid", str(judged)),
        (str(learned), str(judged)),
    ]
    for served, data in cases:
        line = deploy_advice(written, served, data=data)[-2]
        command = line.split("compare the two on judged queries first: ")[1]
        command = command.split("; without judged queries")[0]
        assert ", where" not in command  # nothing left to fill in
        argv = shlex.split(command)
        assert argv[0] == "rerankit"
        args = build_parser().parse_args(argv[1:])
        assert args.command == "eval"
        assert [Path(d).is_dir() for d in args.data] == [True]
        assert args.split == split
        for name in args.rerankers.split(","):
            assert registry.canonical("reranker", name) or Path(name).is_file(), name
    # a log of a system rerankit does not know, and a corpus file for --data (the report's)
    line = deploy_advice(written, "legacy-search", data=str(corpus_file))[-2]
    assert "legacy-search," not in line and f"--data {corpus_file}" not in line
    assert "RUN: legacy-search's rankings of FOLDER's queries as a TREC run file" in line
    assert f"{corpus_file} is not one" in line


def test_tune_says_when_the_served_order_of_some_sessions_was_interleaved(
    tmp_path, capsys, tiny_st
):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    plain = tmp_path / "plain.jsonl"
    _simulated_log(plain, "text", sessions=30, pipeline="hybrid")
    log = tmp_path / "clicks.jsonl"
    with open(log, "w", encoding="utf-8") as out:  # every other impression interleaved
        for n, line in enumerate(plain.read_text().splitlines()):
            record = json.loads(line)
            if record["type"] == "impression" and n % 4 == 0:
                teams = [n % 2 for n in range(len(record["shown"]))]
                record["interleaving"] = {"pipelines": ["hybrid", "learned"], "teams": teams}
            out.write(json.dumps(record) + "\n")
    interleaved = sum(1 for s in read_log(log)[0] if s.impression.interleaving)
    assert interleaved > 0
    argv = ["tune", "--clicks", str(log), "--out", str(tmp_path / "out.toml"), "--folds", "3"]
    assert main([*argv, "--embedding-model", str(tiny_st)]) == 0
    printed = capsys.readouterr().out
    assert (
        f"  note: {interleaved} of them showed an interleaved order (hybrid and learned mixed, "
        'as [server] interleave serves them): there the verdict\'s "served" is that mix'
    ) in printed
    capsys.readouterr()
    assert (
        main(
            [
                "tune",
                "--clicks",
                str(plain),
                "--out",
                str(tmp_path / "p.toml"),
                "--folds",
                "3",
                "--embedding-model",
                str(tiny_st),
            ]
        )
        == 0
    )
    assert "interleaved order" not in capsys.readouterr().out


def test_tune_clicks_takes_propensities_given_and_says_which_queries_it_left_out(tmp_path, capsys):
    """An explored log's warning does not ask for exploration and names --propensities;
    --propensities takes the file tune wrote (or numbers), checked before the work; a query
    without a click is counted as left out."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=80, explore=0.5)
    unclicked = ClickLog(log, store="text")  # a query nobody clicked on
    docs = [{"id": f"x-{i}", "text": t} for i, t in enumerate(_texts(0))]
    unclicked.log_impression("x:0", "nothing here", docs, list(range(8)), query_id="qx")
    unclicked.close()
    rng = np.random.default_rng(1)
    rows = {
        f"q{q}": ([f"{q}-{i}" for i in range(8)], rng.random((8, len(FEATURES))))
        for q in range(len(TOPICS))
    }
    rows["qx"] = ([d["id"] for d in docs], rng.random((8, len(FEATURES))))
    features = write_features(rows, tmp_path / "features.npz")
    argv = ["tune", "--clicks", str(log), "--features", str(features), "--folds", "3"]
    assert main([*argv, "--out", str(tmp_path / "a.toml")]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "12 queries, 961 sessions (1 logged query without a click counted left out" in printed
    assert "warning: propensities not reliable" in printed
    assert "This log already has exchanged pairs" in printed
    assert "turn on exploration" not in printed
    assert "--propensities 1,0.9,0.7,..." in printed
    written = tmp_path / "a.propensities.json"
    assert main([*argv, "--propensities", str(written)]) == 1  # 8 shown: 9 and 10 are null
    assert "position 9 has no value" in capsys.readouterr().err
    estimated = json.loads(written.read_text())["by_position"]
    estimated[8:] = [estimated[7], estimated[7]]
    written.write_text(json.dumps({"by_position": estimated}))
    assert main([*argv, "--out", str(tmp_path / "b.toml"), "--propensities", str(written)]) == 0
    printed = capsys.readouterr().out
    assert "propensities by position (given, 961 sessions): 1: 1.000, " in printed
    assert f"10: {estimated[9]:.3f}" in printed
    assert "warning:" not in printed
    assert main([*argv, "--propensities", "1,0.9,0.5"]) == 1
    error = capsys.readouterr().err
    assert "propensities: 3 values, and learning weighs clicks at the first 10 positions" in error
    assert main(["tune", "--data", "x", "--propensities", "1,0.5"]) == 2
    error = capsys.readouterr().err
    assert "--propensities" in error and "only learning from a click log reads it" in error


def test_tune_clicks_says_each_long_step_and_the_features_progress(tmp_path, capsys, tiny_st):
    """Computing the features takes minutes on a real log: stderr says it has started, and
    how far it got (a plain line where stderr is no terminal), never minutes of silence."""
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    argv = ["tune", "--clicks", str(log), "--folds", "3", "--embedding-model", str(tiny_st)]
    assert main([*argv, "--out", str(tmp_path / "c.toml")]) == 0
    error = capsys.readouterr().err
    assert (
        "rerankit: tune --clicks: computing the features of 12 queries' candidates (96 "
        "documents), the slow part (--features FILE keeps them)" in error
    )
    assert "rerankit: features: 12/12 queries (" in error
    assert "rerankit: tune --clicks: estimating the propensities and cross-validating" in error
    assert main([*argv, "--out", str(tmp_path / "d.toml"), "--no-progress"]) == 0
    quiet = capsys.readouterr().err
    assert "computing the features of 12 queries" in quiet and "12/12 queries" not in quiet


def test_a_log_of_enough_sessions_gets_the_verdict_as_measured(tmp_path):
    pytest.importorskip("lightgbm", reason="learning from clicks needs the 'learn' extra")
    from dataclasses import replace

    log = tmp_path / "clicks.jsonl"
    _simulated_log(log, "text", sessions=5)
    found = learn_from_log(log, features=_random_features(tmp_path), folds=3)
    thin = found.learning
    assert thin.sessions < FAR_TOO_FEW and verdict(thin).startswith("far too few sessions")
    enough = replace(thin, sessions=FAR_TOO_FEW)
    assert verdict(enough) == enough.describe()
    assert "counterfactual cross-validated nDCG@10" in verdict(enough)
