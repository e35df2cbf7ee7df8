"""``rerankit tune --clicks LOG`` and ``rerankit interleave-report LOG`` end to end, on
logs written by rerankit's click simulator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rerankit.cli import main
from rerankit.config import read_spec
from rerankit.scorers.learned import FEATURES
from rerankit.training.clicks import (
    ClickLog,
    PositionBasedModel,
    read_log,
    team_draft,
    text_hash,
    write_features,
)
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


def _simulated_log(path, store: str, sessions: int = 60) -> None:
    """Users who click what is about their query, over a ranker that shows it anywhere."""
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
        )
        texts = _texts(q)
        logged.texts = texts if store == "text" else []
        logged.hashes = [text_hash(t) for t in texts] if store == "hash" else []
        for impression, feedback in records(logged, pipeline="old"):
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
    # clicks on the two about the query are a strong signal: the learned ranker wins
    assert "adopted: it beats what was served" in printed
    assert read_spec(out)["name"] == "learned-from-clicks"
    assert out.with_suffix(".lgb.txt").is_file()
    # the features read the tiny model: so does the pipeline, and the model's report says so
    stage = read_spec(out)["stages"][0]  # the learned score alone, or blended
    learned_entry = stage["scorer"] if "scorer" in stage else stage["scorers"][0]
    assert learned_entry["embedding"] == str(tiny_st)
    assert json.loads(out.with_suffix(".lgb.json").read_text())["embedding_model"] == str(tiny_st)
    model = out.with_suffix(".lgb.txt")
    assert f"wrote {model} and {model.with_suffix('.json')}: the model and its report" in printed


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
    assert "names the model beside it" in capsys.readouterr().out
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
    assert "not adopted: what served the log is kept" in printed
    assert f"the pipeline that served the log ({served})" in printed
    assert read_spec(out) == read_spec(served)
    # asked to keep the learned pipeline all the same: written, and said so
    assert main([*argv, "--served", str(served), "--folds", "3", "--keep-learned"]) == 0
    printed = capsys.readouterr().out
    assert (
        "not adopted (what served the log would be kept); the learned ranker is fitted "
        "anyway, as asked" in printed
    )
    assert "what served the log is kept" not in printed
    assert (
        f"wrote {out}: the learned pipeline, not adopted: written anyway as asked "
        "(--keep-learned)" in printed
    )
    assert read_spec(out)["name"] == "learned-from-clicks"


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
    # a pair the log does not hold: the error says which pairs it does
    assert (
        main(["interleave-report", str(tmp_path / "interleaved.jsonl"), "--pipelines", "a", "b"])
        == 1
    )
    error = capsys.readouterr().err
    assert "no interleaved sessions of a and b" in error and "current and candidate" in error


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
    curve = [line.split(":")[0] for line in printed.splitlines() if "sessions a query" in line]
    assert len(curve) == len(set(curve)) == 4  # 1, 2, 3 and 5 of each query's 5 sessions


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
