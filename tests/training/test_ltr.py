"""Learning to rank: features, training, the learned scorer and its pipeline file."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

pytest.importorskip("lightgbm", reason="learning to rank needs the 'learn' extra")
pytest.importorskip("sentence_transformers", reason="the features need the 'torch' extra")

from rerankit.cli import main
from rerankit.scorers import learned
from rerankit.training import ltr
from rerankit.types import Document

TOPICS = ["solar power", "wind turbines", "vaccines immune", "stock market", "pasta sauce"]


@pytest.fixture(scope="module")
def signals():
    from rerankit.backends.bundled import bundled_model_path

    if bundled_model_path() is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 is not installed")
    return learned.Signals()


def test_features_are_the_documented_columns(signals):
    texts = ["solar power plants", "wind at sea", "solar solar power power"]
    x = learned.features(signals, "solar power", texts, [3.0, 1.0, 2.0])
    assert x.shape == (3, len(learned.FEATURES))
    col = {name: x[:, i] for i, name in enumerate(learned.FEATURES)}
    np.testing.assert_allclose(col["first_stage_norm"], [1.0, 0.0, 0.5])
    np.testing.assert_allclose(col["first_stage_rank"], [1 / 3, 1.0, 2 / 3])
    cos = signals.embedding.score_texts("solar power", texts)
    np.testing.assert_allclose(col["cosine"], cos, atol=1e-5)
    assert col["cosine_gap"].max() == pytest.approx(0.0)
    assert col["coverage"][1] == 0.0 and col["coverage"][0] == 1.0
    # without first-stage scores the first-stage columns are constant
    plain = learned.features(signals, "solar power", texts)
    assert np.ptp(plain[:, :3], axis=0).max() == 0.0


def _synthetic(tmp_path, n_queries=40):
    rng = random.Random(1)
    corpus, queries, train, test = [], [], [], []
    for t, topic in enumerate(TOPICS):
        for j in range(8):
            noise = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(6))
            corpus.append({"_id": f"d{t}-{j}", "text": f"{topic} {noise}"})
    for i in range(n_queries):
        t = i % len(TOPICS)
        queries.append({"_id": f"q{i}", "text": TOPICS[t]})
        target = train if i < 30 else test
        target += [f"q{i}\td{t}-{i % 8}\t2", f"q{i}\td{t}-{(i + 1) % 8}\t1"]
    return _write_collection(tmp_path, corpus, queries, train, test)


def _write_collection(folder, corpus, queries, train, test):
    """A BEIR folder: corpus and queries (dicts), train and test qrels (TSV lines)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    head = "query-id\tcorpus-id\tscore\n"
    (folder / "qrels" / "train.tsv").write_text(head + "\n".join(train) + "\n")
    (folder / "qrels" / "test.tsv").write_text(head + "\n".join(test) + "\n")
    return folder


def test_training_learns_a_ranking_and_contributions_add_up(tmp_path):
    rng = np.random.default_rng(0)
    rows, qrels = {}, {}
    for q in range(60):
        x = rng.normal(size=(20, len(learned.FEATURES)))
        ids = [f"{q}-{i}" for i in range(20)]
        rows[f"q{q}"] = (ids, x)
        qrels[f"q{q}"] = {ids[i]: 1 for i in np.argsort(-x[:, 3])[:3]}  # "cosine" decides
    valid = {f"q{q}" for q in range(48, 60)}
    booster, report = ltr.train(rows, qrels, valid=valid, seed=0)
    assert report["valid_ndcg@10"] > 0.8
    assert max(report["importance"], key=report["importance"].get) == "cosine"
    path = ltr.save(booster, tmp_path / "m.lgb.txt", report)
    loaded = json.loads(path.with_suffix(".json").read_text())
    assert loaded["best_iteration"] == report["best_iteration"]


def _ranking_rows(queries=60, seed=0):
    """Random features where the ``cosine`` column decides the three relevant documents."""
    rng = np.random.default_rng(seed)
    rows, qrels = {}, {}
    for q in range(queries):
        x = rng.normal(size=(20, len(learned.FEATURES)))
        ids = [f"{q}-{i}" for i in range(20)]
        rows[f"q{q}"] = (ids, x)
        qrels[f"q{q}"] = {ids[i]: 1 for i in np.argsort(-x[:, 3])[:3]}
    return rows, qrels


def test_cross_validated_options_adopt_a_model_that_beats_the_default():
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.training.crossval import cross_validate, verdict

    rows, qrels = _ranking_rows()
    rng = np.random.default_rng(1)
    default = {q: rng.random(20) for q in rows}  # a default that knows nothing
    fit = ltr.options(
        rows,
        qrels,
        default=default,
        settings={"7 leaves": ltr.SETTINGS["7 leaves"]},
        trees=(10, 50),
        blends=(0.5, 1.0),
        features=["cosine", "bm25"],
    )
    cv = cross_validate(list(rows), fit, k=3)
    per_default = {q: ranked_ndcg(ids, default[q], qrels[q]) for q, (ids, _) in rows.items()}
    found = verdict(cv, per_default)
    assert found.adopt and found.learned > 0.8 > 0.4 > found.default
    assert set(cv.options) == {("7 leaves", t, b, None) for t in (10, 50) for b in (0.5, 1.0)}
    assert cv.best[2] == 1.0  # mixing in a default that knows nothing only hurts
    # the evaluator of an option is the nDCG@10 of that blend, computed here directly
    models = fit(list(rows)[:40])
    booster = ltr.fit(
        rows,
        qrels,
        list(rows)[:40],
        trees=50,
        params=ltr.SETTINGS["7 leaves"],
        features=["cosine", "bm25"],
    )
    q = "q50"
    model = learned.min_max(booster.predict(rows[q][1][:, [3, 6]]))
    mixed = 0.5 * model + 0.5 * default[q]
    assert models[("7 leaves", 50, 0.5, None)](q) == pytest.approx(
        ranked_ndcg(rows[q][0], mixed, qrels[q])
    )


def test_monotone_constraints_keep_a_feature_from_counting_against_relevance():
    """Training labels that reward a lower cosine cannot make the model score a higher
    cosine lower: the constraint holds it flat instead."""
    rows, _ = _ranking_rows()
    flipped = {q: {ids[i]: 1 for i in np.argsort(x[:, 3])[:3]} for q, (ids, x) in rows.items()}
    booster = ltr.fit(rows, flipped, list(rows), trees=50, features=["cosine", "bm25"])
    probe = np.zeros((50, 2))
    probe[:, 0] = np.linspace(-3, 3, 50)
    predicted = booster.predict(probe)
    assert np.all(np.diff(predicted) >= -1e-12)


def test_a_pointwise_objective_takes_grades_as_probabilities():
    """LightGBM's cross-entropy objective wants targets in [0, 1]: grades 0-2 are scaled to
    them, and the model learns the ranking the grades mean."""
    rows, _ = _ranking_rows(queries=80)
    graded = {}
    for q, (ids, x) in rows.items():
        order = np.argsort(-x[:, 3])
        graded[q] = {ids[order[0]]: 2, ids[order[1]]: 1, ids[order[2]]: 1}
    names = ["cosine", "bm25"]
    train, held = list(rows)[:60], list(rows)[60:]
    booster = ltr.fit(
        rows, graded, train, trees=50, features=names, params={"objective": "cross_entropy"}
    )
    predicted = booster.predict(rows[held[0]][1][:, learned.feature_columns(names)])
    assert np.all((predicted > 0) & (predicted < 1))  # probabilities
    assert _held_out_ndcg(booster, rows, graded, held, names) > 0.8


def _held_out_ndcg(booster, rows, truth, held, names) -> float:
    """Mean nDCG@10 against ``truth`` of the ``held`` queries ranked by ``booster``."""
    from rerankit.eval.metrics import ndcg_at_k

    cols = learned.feature_columns(names)
    values = []
    for q in held:
        ids, x = rows[q]
        order = np.argsort(-booster.predict(x[:, cols]), kind="stable")
        values.append(ndcg_at_k([ids[i] for i in order], truth[q], 10))
    return float(np.mean(values))


def test_judged_only_learns_from_the_judged_candidates_and_not_from_silence():
    """Labels that judged only each query's first-stage top 8 (as `rerankit label` writes):
    taking the rest as non-relevant teaches the model that a low first-stage score means
    irrelevant; leaving them out learns what decides relevance (the cosine)."""

    rows, truth = _ranking_rows(queries=80)
    fs = learned.FEATURES.index("first_stage")
    labels = {}
    for q, (ids, x) in rows.items():
        pool = np.argsort(-x[:, fs])[:8]
        labels[q] = {ids[i]: int(ids[i] in truth[q]) for i in pool}
    names = ["first_stage", "cosine"]
    train, held = list(rows)[:60], list(rows)[60:]
    fitted = {
        only: ltr.fit(rows, labels, train, trees=50, features=names, judged_only=only)
        for only in (False, True)
    }

    def quality(booster):
        return _held_out_ndcg(booster, rows, truth, held, names)

    assert quality(fitted[True]) > quality(fitted[False]) + 0.1
    # the same booster as one trained on the judged candidates alone
    judged = {}
    for q, (ids, x) in rows.items():
        keep = [i for i, d in enumerate(ids) if d in labels[q]]
        judged[q] = ([ids[i] for i in keep], x[keep])
    alone = ltr.fit(judged, labels, train, trees=50, features=names)
    probe = rows[held[0]][1][:, learned.feature_columns(names)]
    np.testing.assert_allclose(fitted[True].predict(probe), alone.predict(probe))
    with pytest.raises(ValueError, match="judged candidates"):
        ltr.fit(rows, {}, train, trees=5, features=names, judged_only=True)


def _judge_rows(queries=80, noise=0.15, seed=0):
    """Each query's 20 judged candidates: the cosine decides the one relevant document, and
    a noisy judge also marks about ``noise`` of the others relevant, at random."""
    rng = np.random.default_rng(seed)
    rows, truth, labels = {}, {}, {}
    for q in range(queries):
        x = rng.normal(size=(20, len(learned.FEATURES)))
        ids = [f"{q}-{i}" for i in range(20)]
        best = ids[int(np.argmax(x[:, 3]))]
        rows[f"q{q}"], truth[f"q{q}"] = (ids, x), {best: 1}
        labels[f"q{q}"] = {d: int(d == best or rng.random() < noise) for d in ids}
    return rows, truth, labels


def test_denoise_drops_the_judged_relevant_that_the_other_queries_contradict():
    rows, truth, labels = _judge_rows()
    before = json.dumps(labels, sort_keys=True)
    names = ["cosine", "bm25"]
    cleaned = ltr.denoise(rows, labels, list(rows), features=names)
    assert json.dumps(labels, sort_keys=True) == before  # the labels given are untouched
    kept_true = kept_false = false = 0
    for q, judged in labels.items():
        assert set(cleaned[q]) <= set(judged)
        for d, grade in judged.items():
            if grade == 0:
                assert cleaned[q][d] == 0  # a non-relevant label is never dropped
            elif d in truth[q]:
                kept_true += d in cleaned[q]
            else:
                false += 1
                kept_false += d in cleaned[q]
        # at most DENOISE_TOP relevant labels stay per query
        assert sum(1 for g in cleaned[q].values() if g) <= ltr.DENOISE_TOP
    assert false > 150  # the judge made many mistakes
    assert kept_true >= 0.95 * len(rows)
    assert kept_false <= 0.4 * false
    # a query left out of qids is not in the answer; too few queries to fold: unchanged
    assert set(ltr.denoise(rows, labels, ["q1", "q2"], features=names)) == {"q1", "q2"}
    assert ltr.denoise(rows, labels, ["q1", "q2"], features=names)["q1"] == labels["q1"]


def test_denoised_options_learn_better_from_a_noisy_judge_and_fit_as_chosen():

    rows, truth, labels = _judge_rows(queries=120, noise=0.35)
    rng = np.random.default_rng(1)
    default = {q: rng.random(20) for q in rows}
    names = ["cosine", "bm25"]
    fit = ltr.options(
        rows,
        labels,
        default=default,
        settings={"7 leaves": ltr.SETTINGS["7 leaves"]},
        trees=(50,),
        blends=(1.0,),
        features=names,
        denoise_tops=(None, ltr.DENOISE_TOP),
    )
    train, held = list(rows)[:90], list(rows)[90:]
    models = fit(train)
    assert set(models) == {("7 leaves", 50, 1.0, None), ("7 leaves", 50, 1.0, 5)}

    def on_truth(option):
        booster = ltr.fit_option(rows, labels, train, option, features=names)
        return _held_out_ndcg(booster, rows, truth, held, names)

    assert on_truth(("7 leaves", 50, 1.0, 5)) > on_truth(("7 leaves", 50, 1.0, None)) + 0.02
    # fit_option with a denoise top is fit on denoise's labels
    booster = ltr.fit_option(rows, labels, train, ("7 leaves", 50, 1.0, 5), features=names)
    cleaned = {**labels, **ltr.denoise(rows, labels, train, features=names)}
    direct = ltr.fit(
        rows, cleaned, train, trees=50, params=ltr.SETTINGS["7 leaves"], features=names
    )
    probe = rows[held[0]][1][:, learned.feature_columns(names)]
    np.testing.assert_allclose(booster.predict(probe), direct.predict(probe))


def test_few_training_queries_use_the_core_features():
    assert ltr.feature_set(ltr.FEW_QUERIES) == learned.FEATURES
    assert ltr.feature_set(ltr.FEW_QUERIES - 1) == ltr.CORE_FEATURES
    assert set(ltr.CORE_FEATURES) <= set(learned.FEATURES) == set(ltr.MONOTONE)
    with pytest.raises(ValueError, match="unknown features"):
        learned.feature_columns(["cosine", "colour"])


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, signals):
    """``rerankit tune --method ltr`` on a small synthetic dataset: (data, pipeline file)."""
    root = tmp_path_factory.mktemp("ltr")
    data = _synthetic(root / "data")
    out = root / "pipelines" / "ltr.toml"  # a folder that does not exist yet
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--out", str(out)]
    assert main([*args, "--folds", "3", "--keep-learned", "--no-progress"]) == 0
    return data, out


def test_tune_ltr_measures_the_default_it_would_write(
    tmp_path, capsys, synthetic, hybrid_ndcg, default_ndcg_printed
):
    data = synthetic(tmp_path / "data", misleading=True)  # where the fusions tell apart
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--folds", "3"]
    assert main([*args, "--out", str(tmp_path / "a.toml"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert default_ndcg_printed(printed) == pytest.approx(hybrid_ndcg(data), abs=0.006)


def test_tune_learns_from_the_judged_candidates_of_a_labelled_folder(tmp_path, capsys):
    data = _synthetic(tmp_path / "data")
    (data / "label_report.json").write_text('{"labels": 60}\n')  # as `rerankit label` leaves
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--folds", "3"]
    assert main([*args, "--out", str(tmp_path / "a.toml"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "training and cross-validating on the judged candidates only" in out
    assert "also comparing models that leave out the relevant labels" in out


def test_judged_candidates_keep_the_named_ones_in_order_with_their_default_scores():
    x = np.arange(12, dtype=float).reshape(4, 3)
    rows = {"q1": (["a", "b", "c", "d"], x), "q2": (["e"], x[:1]), "q3": (["f"], x[:1])}
    default = {"q1": np.array([0.9, 0.1, 0.5, 0.3]), "q2": np.array([1.0]), "q3": np.zeros(1)}
    qrels = {"q1": {"d": 2, "b": 0, "z": 1}, "q2": {"x": 1}}
    cut, scores = ltr.judged_candidates(rows, qrels, default)
    assert list(cut) == ["q1"]  # q2 names none of its candidates, q3 has no judgments
    assert cut["q1"][0] == ["b", "d"] and (cut["q1"][1] == x[[1, 3]]).all()
    assert scores["q1"].tolist() == [0.1, 0.3]
    assert rows["q1"][0] == ["a", "b", "c", "d"] and default["q1"].shape == (4,)  # untouched


def test_a_pipeline_and_its_model_moved_together_still_load(tuned, moved_together):
    """tune writes the model's path relative to the pipeline file (it is beside it), and
    loading reads it from the file's folder, whatever the working directory."""
    _, out = tuned
    docs = ["solar power alpha beta", "pasta sauce gamma", "wind turbines delta"]
    moved_together(out, "ltr.lgb.txt", docs)


def test_the_learned_scorer_scores_and_explains(tuned):
    from rerankit import load

    _, out = tuned
    pipeline = load(out)
    docs = ["solar power alpha beta", "pasta sauce gamma", "wind turbines delta"]
    result = pipeline.rerank("solar power", docs)
    scorer = learned.LearnedScorer(out.with_suffix(".lgb.txt"))
    parts = scorer.contributions("solar power", [Document(d) for d in docs])
    raw = scorer.score_texts("solar power", [Document(d) for d in docs])
    assert {r.index: r.score for r in result} == pytest.approx(dict(enumerate(raw)))
    explained = result.explain()[0]["strategies"]  # per-feature shares in explain()
    shares = [v["contribution"] for k, v in explained.items() if k.startswith("learned.")]
    # 30 training queries: the model reads the core features only
    assert scorer.feature_names == ltr.CORE_FEATURES
    assert len(shares) == len(ltr.CORE_FEATURES) + 1
    assert sum(shares) == pytest.approx(result[0].score, abs=1e-6)
    assert [sum(p.values()) for p in parts] == pytest.approx(list(raw), abs=1e-6)
    assert set(parts[0]) == {*ltr.CORE_FEATURES, "bias"}
    assert scorer.matrix("solar power", [Document(d) for d in docs]).shape == (3, 7)


def test_a_learned_model_that_reads_the_retriever_says_when_it_is_missing(tuned):
    from rerankit import load

    _, out = tuned
    pipeline = load(out)
    assert any(f.startswith("first_stage") for f in ltr.CORE_FEATURES)
    docs = [{"text": "solar power alpha"}, {"text": "pasta sauce"}, {"text": "wind turbines"}]
    (warning,) = [w for w in pipeline.rerank("solar power", docs).warnings if "retriever" in w]
    assert "every document came without 'first_stage_score'" in warning
    assert "--first-stage-field" in warning and "first_stage_field=" in warning
    scored = [{**d, "score": s} for d, s in zip(docs, (3.0, 1.0, 2.0), strict=True)]
    some = pipeline.rerank("solar power", scored[:2] + docs[2:], first_stage_field="score")
    assert any("1 of 3 documents came without" in w for w in some.warnings)
    given = pipeline.rerank("solar power", scored, first_stage_field="score")
    assert not any("retriever" in w for w in given.warnings)


@pytest.mark.slow  # make test-slow (about 8 s): keeps make test under 10 minutes
def test_a_learned_pipeline_is_evaluated_from_its_file_in_a_fresh_process(tuned):
    data, out = tuned
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rerankit.cli",
            "eval",
            "--data",
            str(data),
            "--rerankers",
            "bm25",
            "--rerankers",
            str(out),
            "--k",
            "10",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    declared = tomllib.loads(Path(out).read_text())["name"]  # the name tune gave it
    assert f"| {declared} |" in done.stdout


def test_a_model_file_that_is_missing_is_named():
    with pytest.raises(ValueError, match=r"nowhere\.lgb\.txt: no such file \(the learned"):
        learned.LearnedScorer("nowhere.lgb.txt")


@pytest.mark.slow  # make test-slow (about 13 s): keeps make test under 10 minutes
def test_ltr_over_another_embedding_model_records_it_and_uses_it_again(tmp_path, signals, capsys):
    """``--embedding-model`` (e.g. a fine-tuned folder) goes into the report and the pipeline
    file, and the learned scorer loads that model for its features."""
    import tomllib

    from rerankit import load
    from rerankit.backends.bundled import bundled_model_path

    folder = str(bundled_model_path())
    data = _synthetic(tmp_path / "data")
    out = tmp_path / "ltr-ft.toml"
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--out", str(out)]
    assert main([*args, "--embedding-model", folder, "--keep-learned", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    # the blend is with this model, as the file writes it, not the bundled MiniLM
    assert "blended" in printed and "with first stage + MiniLM" not in printed
    assert f"with first stage + {folder}" in printed
    # the line names both shares: "learned score 0.75, blended with first stage + X 0.25"
    shares = re.search(r"learned score ([\d.]+), blended with first stage \+ \S+ ([\d.]+)", printed)
    assert shares and float(shares[1]) + float(shares[2]) == pytest.approx(1.0), printed
    stage = tomllib.loads(out.read_text())["stages"][0]  # the model alone, or in a blend
    declared = stage.get("scorer") or next(s for s in stage["scorers"] if s["type"] == "learned")
    assert declared["embedding"] == folder
    model = out.with_suffix(".lgb.txt")
    assert json.loads(model.with_suffix(".json").read_text())["embedding_model"] == folder
    assert learned.trained_embedding(model) == folder
    scorer = learned.LearnedScorer(model)  # no embedding given: the one it was trained with
    assert scorer.embedding.model_id == folder
    docs = ["solar power alpha", "pasta sauce beta", "wind turbines gamma"]
    result = load(out).rerank("solar power", docs)
    assert result[0].index == 0


def test_a_report_without_an_embedding_means_the_bundled_model(tmp_path):
    model = tmp_path / "m.lgb.txt"
    assert learned.trained_embedding(model) is None  # no report at all
    model.with_suffix(".json").write_text("{not json")
    assert learned.trained_embedding(model) is None
    model.with_suffix(".json").write_text(json.dumps({"embedding_model": "my/model"}))
    assert learned.trained_embedding(model) == "my/model"


NAMES = (
    "anvil banjo cactus dolphin easel falcon glacier harp igloo jaguar kettle lantern "
    "mango nutmeg oyster parrot quartz raccoon saffron tulip umbrella violin walnut yacht "
    "zebra acorn bison candle donkey emerald ferret gazelle hammock iguana juniper koala "
    "lobster marble nectar orchid"
).split()


def _named_documents(tmp_path):
    """Like ``_synthetic``, but each query names one thing only its relevant document
    mentions, so the words decide what is relevant; with ``run.txt``, a retriever that
    returns the query's topic and puts the relevant document last."""
    corpus, queries, train, test, run = [], [], [], [], []
    for t, topic in enumerate(TOPICS):
        for j in range(8):
            corpus.append({"_id": f"d{t}-{j}", "text": f"{topic} notes on the {NAMES[8 * t + j]}"})
    for i in range(40):
        t, j = i % len(TOPICS), i % 8
        queries.append({"_id": f"q{i}", "text": f"{TOPICS[t]} {NAMES[8 * t + j]}"})
        (train if i < 30 else test).append(f"q{i}\td{t}-{j}\t1")
        others = [k for k in range(8) if k != j] + [j]
        run += [f"q{i} Q0 d{t}-{k} {r + 1} {8 - r} adverse" for r, k in enumerate(others)]
    (tmp_path / "run.txt").parent.mkdir(parents=True)
    (tmp_path / "run.txt").write_text("\n".join(run) + "\n")
    return _write_collection(tmp_path, corpus, queries, train, test)


@pytest.mark.parametrize("method", ["fusion", "ltr"])
def test_with_another_embedding_the_default_is_the_better_of_hybrid_and_its_fusion(
    tmp_path, tiny_st, capsys, method
):
    """``--embedding-model`` must not lower the bar: the default a learned pipeline has to
    beat (and that ``tune`` writes when it does not) is the better of the ``hybrid`` and the
    fusion over that embedding on the training queries. A random two-layer model's fusion
    over a retriever that ranks the relevant document last is weaker than the hybrid, so the
    hybrid is written."""
    import re

    import tomllib

    data = _named_documents(tmp_path / "data")
    out = tmp_path / "tuned.toml"
    args = ["tune", "--data", str(data), "--k", "10", "--out", str(out), "--no-progress"]
    args += ["--first-stage", str(data / "run.txt")]
    if method == "ltr":
        args += ["--method", "ltr"]
    args += ["--embedding-model", str(tiny_st), "--adopt-margin", "1000"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    found = re.search(
        r"the default to beat: (.*?), the better.*`hybrid` ([\d.]+), .* ([\d.]+)\)", printed
    )
    assert found, printed
    hybrid, fused = float(found.group(2)), float(found.group(3))
    assert hybrid > fused  # random weights: the hybrid (real MiniLM and BM25) is better
    assert found.group(1) == "the `hybrid`"
    assert f"{hybrid:6.2f}         the default" in printed  # what the verdict measured
    assert "not adopted" in printed
    written = tomllib.loads(out.read_text())
    assert written["stages"] == [{"reranker": "hybrid"}]


def test_only_paths_that_exist_beside_a_pipeline_file_are_read_from_its_folder(tmp_path):
    from rerankit.config import read_pipeline

    (tmp_path / "m.lgb.txt").write_text("")
    (tmp_path / "p.toml").write_text(
        '[[stages]]\nscorer = { type = "learned", model = "m.lgb.txt" }\n'
        '[[stages]]\nscorer = { type = "cross_encoder", model = "org/reranker" }\n'
    )
    stages = read_pipeline(tmp_path / "p.toml")["stages"]
    assert stages[0]["scorer"]["model"] == str(tmp_path / "m.lgb.txt")
    assert stages[1]["scorer"]["model"] == "org/reranker"  # a hub id, as written


def test_a_setting_that_asks_more_rows_per_leaf_than_there_are_still_splits():
    # 5 queries of 10 candidates: 50 rows, under the 100 per leaf "3 leaves" asks for
    rows, qrels = _ranking_rows(queries=5)
    rows = {q: (ids[:10], x[:10]) for q, (ids, x) in rows.items()}
    setting = dict(ltr.SETTINGS["3 leaves"])
    booster = ltr.fit(rows, qrels, list(rows), trees=25, params=setting, features=["cosine"])
    assert booster.feature_importance("split").sum() > 0  # single-leaf trees split nothing
    assert booster.params["min_data_in_leaf"] == 10  # a quarter of the 40 rows a bag holds
    assert setting == ltr.SETTINGS["3 leaves"] == {"num_leaves": 3, "min_data_in_leaf": 100}


@pytest.mark.slow
def test_tune_never_writes_a_learned_ranker_that_made_no_split(tmp_path, capsys):
    data = _synthetic(tmp_path / "data")
    qrels = data / "qrels" / "train.tsv"  # every judged candidate equally relevant
    qrels.write_text(qrels.read_text().replace("\t2\n", "\t1\n"))
    (data / "label_report.json").write_text('{"labels": 60}\n')  # judged candidates only
    out = tmp_path / "ltr.toml"
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--folds", "3"]
    assert main([*args, "--keep-learned", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "made no split" in printed and "the default is written instead, even with" in printed
    assert not (tmp_path / "ltr.lgb.txt").exists()
    assert tomllib.loads(out.read_text())["stages"] == [{"reranker": "hybrid"}]
    assert "made no split" in out.read_text()
    assert out.read_text().startswith("# Written by `rerankit tune --method ltr` on ")


def test_the_default_written_by_ltr_names_the_method_as_calibrate_does(tmp_path, capsys):
    """The default written when the learned ranker does not win said `rerankit tune`, as a
    fusion's does, where `--calibrate`'s says `rerankit tune --calibrate`."""
    data = _synthetic(tmp_path / "data")
    out = tmp_path / "ltr.toml"
    args = ["tune", "--data", str(data), "--method", "ltr", "--k", "10", "--folds", "3"]
    assert main([*args, "--adopt-margin", "1000", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert out.read_text().startswith("# Written by `rerankit tune --method ltr` on data train:")
    assert "the learned ranker did not beat the default" in out.read_text()
