"""Fine-tuning the embedding model: a tiny model trains, its loss falls, the result loads."""

from __future__ import annotations

import argparse
import json
import random
import re

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="training needs the 'torch' extra")
pytest.importorskip("datasets", reason="training needs the 'train' extra")
pytest.importorskip("accelerate", reason="training needs the 'train' extra")

from rerankit.cli import main
from rerankit.training.embedding import embedding_pairs, fine_tune_embedding


def test_a_few_steps_lower_the_loss_and_the_model_loads_and_exports(tiny_st, tmp_path, capfd):
    from rerankit.backends.onnx import export
    from rerankit.scorers import EmbeddingScorer

    rng = random.Random(0)
    words = "vaccines train immune system solar panels stock market energy price virus".split()
    rows = []
    for _ in range(96):  # a word, its repetition (positive), another word's (negative)
        w = rng.choice(words)
        other = rng.choice([x for x in words if x != w])
        rows.append({"anchor": w, "positive": f"{w} {w} {w}", "negative": f"{other} {other}"})
    out = tmp_path / "tuned"
    summary = fine_tune_embedding(
        rows,
        out,
        model=str(tiny_st),
        epochs=4,
        batch_size=16,
        learning_rate=5e-3,
        progress=False,
        log=lambda message: None,
    )
    printed = capfd.readouterr()
    bars = ("Loading weights", "Writing model shards", "it/s]", "Computing widget examples")
    assert not [b for b in bars if b in printed.err + printed.out]  # progress=False: quiet
    losses = summary["losses"]
    assert summary["steps"] == 24 and len(losses) >= 8
    assert np.mean(losses[-4:]) < np.mean(losses[:4])  # it learned something
    scorer = EmbeddingScorer(str(out), cache=False)
    assert scorer.score_texts("solar", ["solar solar", "market"]).shape == (2,)
    assert (out / "checkpoints").is_dir()
    exported = export(str(out), tmp_path / "onnx")  # and it exports for the ONNX backend
    assert json.loads((exported / "rerankit_onnx.json").read_text())["pooling"] == "mean"


def test_pairs_come_with_a_hard_negative_from_the_first_stage(tmp_path):
    from rerankit.eval import load_beir

    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": i, "text": t}) + "\n"
            for i, t in [("d1", "solar power"), ("d2", "solar panels"), ("d3", "wind")]
        )
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "solar"}) + "\n")
    (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    data = load_beir(tmp_path, "train")
    rows = embedding_pairs(data, {"q1": [("d1", 2.0), ("d2", 1.5), ("d3", 0.1)]})
    assert rows == [{"anchor": "solar", "positive": "solar panels", "negative": "solar power"}]


def test_training_on_the_test_split_is_refused(tmp_path, capsys):
    code = main(
        ["train", "embedding", "--data", str(tmp_path), "--train-split", "test", "--out", "x"]
    )
    assert code == 1 and "test split is for reporting" in capsys.readouterr().err


# --- cross-encoder ------------------------------------------------------------------------


def test_a_cross_encoder_trains_from_judgments_and_loads_and_exports(
    bert_dir, synthetic, tmp_path, capsys
):
    from rerankit import load
    from rerankit.backends.onnx import export
    from rerankit.eval.data import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.scorers import CrossEncoderScorer
    from rerankit.training.cross_encoder import cross_encoder_rows

    data_dir = synthetic(tmp_path / "data", obvious=True)
    data = load_beir(data_dir, "train")
    rows = cross_encoder_rows(data, first_stage(data, "bm25", 20))
    relevant = sum(g > 0 for q in data.qrels.values() for g in q.values())
    assert sum(r["label"] for r in rows) == relevant  # each relevant document once ...
    assert len(rows) == 4 * relevant  # ... with three hard negatives
    for r in rows:  # a negative is never a document judged relevant for its query
        if r["label"] == 0:
            judged = {
                data.text(d)
                for q, j in data.qrels.items()
                for d, g in j.items()
                if g > 0 and data.queries[q] == r["query"]
            }
            assert r["document"] not in judged
    out = tmp_path / "ce"
    args = ["train", "cross-encoder", "--data", str(data_dir), "--out", str(out)]
    code = main(
        [*args, "--model", str(bert_dir), "--epochs", "6", "--batch-size", "8", "--no-progress"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    # the estimate, before training, counts the steps the trainer takes (the last batch,
    # short, is one) and says its time as a person would, never "about 0 min" (minutes
    # from two on: a loaded machine's estimate may pass 120 s)
    estimate = re.search(r"(\d+) steps of 8: about (\d+ s|[2-9]\d* min) on this machine", printed)
    assert estimate and f"\n{estimate.group(1)} steps in " in printed
    # and it tells how to find out whether the model beats the default: the folder has a
    # test split, so the command is ready to run
    assert (
        f"`rerankit eval --data {data_dir} --rerankers hybrid,{out} --baseline hybrid` "
        f"measures both on {data_dir}'s test split"
    ) in printed
    assert "checkpoints folder is for resuming this training" in printed
    first, last = (float(x) for x in printed.split("training loss ")[1].split()[0:3:2])
    assert last < first
    trained = CrossEncoderScorer(str(out), device="cpu")
    before = CrossEncoderScorer(str(bert_dir), device="cpu")
    query, docs = "solar power", ["solar power", "photovoltaic alpha beta gamma delta"]
    gap_after = np.subtract(*trained.score_texts(query, docs))
    gap_before = np.subtract(*before.score_texts(query, docs))
    assert gap_after > gap_before  # the judged document moved up
    via_registry = load({"scorer": {"type": "cross_encoder", "model": str(out)}})
    assert via_registry.rerank(query, docs)[0].index == 0
    onnx = export(str(out), tmp_path / "ce-onnx", kind="cross_encoder")
    np.testing.assert_allclose(
        CrossEncoderScorer(str(onnx), backend="onnx").score_texts(query, docs),
        trained.score_texts(query, docs),
        atol=1e-4,
    )


def _answers_below_repeats(folder):
    """40 queries over 5 topics; each topic's 2 relevant documents name it once beside the
    word "answer", its 6 others repeat it, so BM25 ranks the relevant ones last and a model
    can learn from the other queries that "answer" marks them."""
    topics = ["solar", "vaccine", "market", "river", "violin"]
    rng = random.Random(0)
    corpus, qrels = [], []
    for t in topics:
        for j in range(8):
            noise = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(5))
            text = f"{t} answer {noise}" if j < 2 else f"{t} {t} {t} {noise}"
            corpus.append({"_id": f"{t}-{j}", "text": text})
    queries = [{"_id": f"q{i}", "text": f"about {topics[i % 5]}"} for i in range(40)]
    for i in range(40):
        qrels += [f"q{i}\t{topics[i % 5]}-{j}\t1" for j in (0, 1)]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels))
    return folder


def _held_out_check(out: str) -> dict[str, float]:
    """The held-out check's figures by name (BM25, the model it started from, the trained)."""
    line = next(x for x in out.splitlines() if x.startswith("held-out check"))
    figures = line.split("nDCG@10: ")[1].split(", ")
    return {name: float(value) for name, value in (f.rsplit(" ", 1) for f in figures)}


@pytest.mark.slow  # make test-slow (about 14 s): keeps make test under 10 minutes
def test_training_checks_the_model_on_queries_it_never_saw(bert_dir, tmp_path, capsys):
    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "cross-encoder", "--data", str(data_dir), "--model", str(bert_dir)]
    common = ["--batch-size", "8", "--no-progress", "--held-out", "0.2"]
    code = main([*args, "--out", str(tmp_path / "ce"), "--epochs", "6", *common])
    assert code == 0
    printed = capsys.readouterr()
    assert "held-out check, 8 training queries it never saw" in printed.out
    # the check reranks 20 of the 100 candidates, and says so
    assert "(BM25's top 20 reranked, not all 100: eval below uses them all)" in printed.out
    assert "on 8 queries this is a rough check: --cross-fit 3" in printed.out  # < 10
    check = _held_out_check(printed.out)
    trained = check["the trained cross-encoder"]
    assert trained > check["BM25"] and trained > check["the model it started from"]
    assert "warning" not in printed.err
    # the same command that learns nothing (step size 0) is told it does not beat BM25, nor
    # the model it started from, which it still is
    shallow = ["--candidates", "10"]  # the check reranks the 10 it was given, and says 10
    code = main([*args, "--out", str(tmp_path / "ce0"), "--learning-rate", "0", *shallow, *common])
    printed = capsys.readouterr()
    assert "it never saw (BM25's top 10 reranked), nDCG@10" in printed.out
    check = _held_out_check(printed.out)
    untrained = check["the trained cross-encoder"]
    assert code == 0 and untrained <= check["BM25"]
    assert untrained == pytest.approx(check["the model it started from"], abs=0.011)
    # said as train's other warnings are: rerankit: warning: ...
    said = "rerankit: warning: the trained cross-encoder does not rank better than BM25 on "
    assert said + "the 8 queries it did not see" in printed.err
    said = "rerankit: warning: the trained cross-encoder ranks no better than the model it "
    assert said + "started from" in printed.err


def test_the_embedding_model_is_checked_too_and_the_share_is_validated(tiny_st, tmp_path, capsys):
    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "embedding", "--data", str(data_dir), "--model", str(tiny_st)]
    code = main([*args, "--out", str(tmp_path / "ft"), "--no-progress", "--held-out", "0.25"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "held-out check, 10 training queries it never saw" in printed
    assert "rough check" not in printed  # 10 and more
    assert set(_held_out_check(printed)) == {
        "BM25",
        "the model it started from",
        "the trained embedding model",
    }
    with pytest.raises(SystemExit) as exit_:  # a usage error, as the help states the limit
        main([*args, "--out", str(tmp_path / "x"), "--held-out", "1.5"])
    assert exit_.value.code == 2 and "to 0.5 (half)" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before anything was trained
    code = main([*args, "--out", str(tmp_path / "y"), "--head-learning-rate", "1e-3"])
    assert code == 1 and "an embedding model has no head" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()


@pytest.mark.slow  # make test-slow: keeps make test under 10 minutes
def test_a_checkpoint_without_a_head_is_said_in_one_line_not_a_table(
    tiny_st, bert_dir, tmp_path, capfd
):
    # an embedding model has no relevance head: transformers would print its load report
    # (a table of "MISSING" weights); rerankit says it once, in words, and trains
    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "cross-encoder", "--data", str(data_dir), "--no-progress"]
    common = ["--held-out", "0", "--batch-size", "8"]
    code = main([*args, "--model", str(tiny_st), "--out", str(tmp_path / "a"), *common])
    printed = capfd.readouterr()
    assert code == 0
    assert "no relevance head in this checkpoint" in printed.out
    assert "LOAD REPORT" not in printed.err and "MISSING" not in printed.err
    # a cross-encoder checkpoint has one: nothing said
    code = main([*args, "--model", str(bert_dir), "--out", str(tmp_path / "b"), *common])
    printed = capfd.readouterr()
    assert code == 0 and "relevance head" not in printed.out + printed.err


def test_a_cross_encoder_trained_from_an_embedding_model_is_checked_without_it(
    tiny_st, tmp_path, capsys
):
    # its relevance head started random: the held-out check compares with BM25 alone, and
    # never loads the embedding model as a cross-encoder (for the bundled model's short name
    # that went to the hub)
    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "cross_encoder", "--data", str(data_dir), "--model", str(tiny_st)]
    code = main([*args, "--out", str(tmp_path / "ce"), "--no-progress", "--held-out", "0.25"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert set(_held_out_check(printed.out)) == {"BM25", "the trained cross-encoder"}


def test_training_from_an_embedding_model_lets_no_library_line_through(
    tiny_st, tmp_path, capfd, caplog
):
    """sentence-transformers' "Converting SentenceTransformer model ... to CrossEncoder."
    reached the terminal raw (rerankit says it in its own line: no relevance head), and so
    did transformers' "mtime may not be reliable ..." when two checkpoints were written
    within a second: stderr holds rerankit's lines only, and errors still pass."""
    import logging

    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "cross-encoder", "--data", str(data_dir), "--model", str(tiny_st)]
    with caplog.at_level(logging.INFO):
        code = main([*args, "--out", str(tmp_path / "ce"), "--no-progress", "--held-out", "0"])
    printed = capfd.readouterr()
    assert code == 0 and "no relevance head in this checkpoint" in printed.out
    assert [line for line in printed.err.splitlines() if not line.startswith("rerankit")] == []
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in said if m.startswith(("Converting ", "mtime may not be reliable"))]
    # the filters are gone afterwards, and never held back an error
    from rerankit.backends.local import NEW_MODEL_LOGGERS
    from rerankit.training.trainer import CHECKPOINT_ORDER_LOGGER

    for name in (*NEW_MODEL_LOGGERS, CHECKPOINT_ORDER_LOGGER):
        assert logging.getLogger(name).filters == []


def _one_relevant_in_four():
    """Rows of four topics: the document that says "answer" relevant, three repeats not."""
    return [
        {
            "query": f"about {t}",
            "document": f"{t} answer" if k == 0 else f"{t} {t}",
            "label": float(k == 0),
        }
        for t in ("solar", "river", "violin", "market")
        for k in range(4)
    ]


@pytest.mark.slow  # the default case below runs in make test
def test_the_relevance_head_can_learn_at_its_own_step_size(bert_dir, tmp_path):
    # the rest of the model at step size 0 stays as it was, weight for weight, while the
    # head (pooler and classifier) learns at its own; the relevant pairs weighted 3 to 1
    from safetensors.torch import load_file

    from rerankit.training.cross_encoder import fine_tune_cross_encoder

    rows = _one_relevant_in_four()

    def train(out, weight):
        return fine_tune_cross_encoder(
            rows,
            out,
            model=str(bert_dir),
            epochs=2,
            batch_size=4,
            learning_rate=0.0,
            head_learning_rate=1e-2,
            positive_weight=weight,
            progress=False,
        )

    assert train(tmp_path / "ce", 3.0)["steps"] == 8
    before = load_file(bert_dir / "model.safetensors")
    after = load_file(tmp_path / "ce" / "model.safetensors")
    assert set(before) == set(after)
    head = {k for k in before if k.startswith(("classifier.", "bert.pooler."))}
    assert head and head < set(before)
    for key in before.keys() - head:
        assert np.array_equal(before[key].numpy(), after[key].numpy()), key
    moved = after["classifier.weight"].numpy()
    assert not np.array_equal(before["classifier.weight"].numpy(), moved)
    # unweighted, the same steps end elsewhere: the weight reached the loss
    train(tmp_path / "unweighted", None)
    plain = load_file(tmp_path / "unweighted" / "model.safetensors")["classifier.weight"]
    assert not np.allclose(plain.numpy(), moved)


@pytest.mark.slow  # make test-slow (about 8 s): keeps make test under 10 minutes
def test_a_new_head_learns_at_its_own_step_size_by_default(tiny_st, tmp_path):
    # a checkpoint without a relevance head (an embedding model's encoder): at the rest's
    # step size the new head would barely move; by default it learns at NEW_HEAD_LEARNING_RATE
    from safetensors.torch import load_file

    from rerankit.training.cross_encoder import fine_tune_cross_encoder

    encoder = tiny_st.parent / "encoder"
    rows = _one_relevant_in_four()

    def head_after(out, **options):
        fine_tune_cross_encoder(
            rows,
            out,
            model=str(encoder),
            epochs=1,
            batch_size=4,
            learning_rate=0.0,
            progress=False,
            **options,
        )
        after = load_file(out / "model.safetensors")
        for key, value in load_file(encoder / "model.safetensors").items():
            if not key.startswith("pooler."):  # the encoder itself never moves at step size 0
                assert np.array_equal(value.numpy(), after[f"bert.{key}"].numpy()), key
        return after["classifier.weight"].numpy()

    default = head_after(tmp_path / "default")
    still = head_after(tmp_path / "still", head_learning_rate=0.0)  # the same seed, no steps
    assert not np.allclose(default, still)


@pytest.mark.slow  # make test-slow (about 6 s): keeps make test under 10 minutes
def test_a_rerun_resumes_only_its_own_run(bert_dir, tmp_path):
    # checkpoints of a run with other settings are refused before any model loads, naming
    # what differs, and left as they were; the same run resumes from them
    from rerankit.errors import InputError
    from rerankit.training.cross_encoder import fine_tune_cross_encoder
    from rerankit.training.trainer import RUN_FILE

    rows = _one_relevant_in_four()
    out = tmp_path / "ce"

    def train(pairs=rows, **options):
        settings = {"epochs": 1, "batch_size": 4, "learning_rate": 1e-3, **options}
        return fine_tune_cross_encoder(pairs, out, model=str(bert_dir), progress=False, **settings)

    assert not train()["resumed"]
    checkpoints = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert RUN_FILE in checkpoints and any(n.startswith("checkpoint-") for n in checkpoints)
    record = (out / "checkpoints" / RUN_FILE).read_text()
    with pytest.raises(InputError) as refused:
        train(head_learning_rate=1e-2)  # once failed deep in the optimizer
    message = str(refused.value)
    assert "head_learning_rate: None there, 0.01 now" in message and str(out) in message
    with pytest.raises(InputError, match="rows: "):  # other training pairs: another run
        train(rows[:-1])
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == checkpoints
    assert (out / "checkpoints" / RUN_FILE).read_text() == record
    assert train()["resumed"]  # the same settings: resumed, as before


@pytest.mark.slow  # make test-slow (about 6 s): keeps make test under 10 minutes
def test_the_command_says_which_setting_differs_from_the_checkpoints_run(
    bert_dir, tmp_path, capsys
):
    data_dir = _answers_below_repeats(tmp_path / "data")
    args = ["train", "cross-encoder", "--data", str(data_dir), "--model", str(bert_dir)]
    args += ["--out", str(tmp_path / "ce"), "--held-out", "0", "--batch-size", "8"]
    assert main([*args, "--no-progress"]) == 0
    capsys.readouterr()
    assert main([*args, "--no-progress", "--learning-rate", "1e-4"]) == 1
    err = capsys.readouterr().err
    assert "learning_rate: 2e-05 there, 0.0001 now" in err and "delete that folder" in err


def test_train_into_a_log_file_writes_plain_lines_and_a_command_at_its_depth(
    bert_dir, tmp_path, capfd
):
    # captured output is no terminal: no bar redrawn in place, no trainer loss dicts, but a
    # plain line now and then; the comparison it prints ranks the candidates it trained on
    data_dir = _answers_below_repeats(tmp_path / "data")
    out = tmp_path / "ce"
    args = ["train", "cross-encoder", "--data", str(data_dir), "--model", str(bert_dir)]
    assert main([*args, "--out", str(out), "--held-out", "0", "--candidates", "10"]) == 0
    printed = capfd.readouterr()
    assert "\r" not in printed.err and "{'loss'" not in printed.err + printed.out
    assert re.search(r"^rerankit: train: step \d+/\d+, loss \d\.\d{4}$", printed.err, re.M)
    assert "--baseline hybrid --candidates 10`" in printed.out


def test_an_embedding_model_below_bm25_is_pointed_to_learning_to_rank(tiny_st, tmp_path, capsys):
    """Each query's word is in its relevant document only, so BM25 ranks perfectly and a
    model that learned nothing (step size 0) is no better and equal to where it started:
    both are said, with the command that would use it as features."""
    folder = tmp_path / "data"
    (folder / "qrels").mkdir(parents=True)
    words = [
        f"{a}{b}" for a in ("bor", "kel", "mip", "tav") for b in ("ax", "en", "ot", "ul", "iz")
    ]
    corpus = [
        {"_id": f"d{i}", "text": f"notes on {w} and other things"} for i, w in enumerate(words)
    ]
    queries = [{"_id": f"q{i}", "text": f"notes about {w}"} for i, w in enumerate(words)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    qrels = "".join(f"q{i}\td{i}\t1\n" for i in range(len(words)))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    out = tmp_path / "ft"
    args = ["train", "embedding", "--data", str(folder), "--model", str(tiny_st)]
    assert main([*args, "--out", str(out), "--learning-rate", "0", "--no-progress"]) == 0
    printed = capsys.readouterr()
    check = _held_out_check(printed.out)
    assert check["BM25"] == 100.0
    assert check["the trained embedding model"] == check["the model it started from"]
    assert f"`rerankit tune --data {folder} --method ltr --embedding-model {out}`" in printed.err
    assert "no better than the model it started from" in printed.err


@pytest.mark.slow  # make test-slow: keeps make test under 10 minutes
def test_tune_measures_a_fine_tuned_model_on_the_queries_it_never_saw(tiny_st, tmp_path, capsys):
    """A model fine-tuned on some training queries' judgments makes any pipeline reading it
    look better on those queries: ``train`` records them beside the model, and ``tune``
    makes its verdict on the others (and refuses when there are none)."""
    from rerankit.training.trainer import TRAINED_ON

    data_dir = _answers_below_repeats(tmp_path / "data")
    train = ["train", "embedding", "--data", str(data_dir), "--model", str(tiny_st)]
    ft = tmp_path / "ft"
    assert main([*train, "--out", str(ft), "--held-out", "0.25", "--no-progress"]) == 0
    record = json.loads((ft / TRAINED_ON).read_text())
    assert record["data"] == str(data_dir.resolve()) and record["split"] == "train"
    assert len(record["queries"]) == 30  # 40 judged, 10 held out for the check
    capsys.readouterr()
    tune = ["tune", "--data", str(data_dir), "--k", "10", "--no-progress"]
    out = tmp_path / "tuned.toml"
    assert main([*tune, "--embedding-model", str(ft), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "was trained on the judgments of 30 of these 40 training queries" in printed
    assert "cross-validated nDCG@10 over 10 training queries" in printed
    # the options' table is over all 40, flattered by the 30 the model trained on: said
    assert "over 40 training queries, 30 the embedding model trained on (" in printed
    assert "(the default: " in printed and "; on the 10 the verdict is made on):" in printed
    assert out.is_file()
    # trained on every judged query: nothing left to measure on, refused before the work
    every = tmp_path / "ft-every"
    assert main([*train, "--out", str(every), "--held-out", "0", "--no-progress"]) == 0
    capsys.readouterr()
    refused = tmp_path / "refused.toml"
    assert main([*tune, "--embedding-model", str(every), "--out", str(refused)]) == 1
    refusal = capsys.readouterr().err
    assert "(--held-out 0.2, from 10 judged queries up)" in refusal  # the flag, at the shell
    assert not refused.exists()


def test_the_held_out_share_is_capped_only_when_not_asked_for():
    """Left to its default, train keeps 10 % of the queries out, at most 200 (a large
    collection keeps its queries to train on); a share asked for is kept, up to half."""
    from rerankit.training.fine_tuning import DEFAULT_HELD_OUT, held_out

    qids = [f"q{i}" for i in range(3000)]
    default = held_out(qids, DEFAULT_HELD_OUT)
    assert len(default) == 200
    asked = held_out(qids, 0.3, cap=None)
    assert len(asked) == 900 and set(default) <= set(asked)
    assert len(held_out(qids, 0.9, cap=None)) == 1500  # at most half
    assert set(held_out(list(reversed(qids)), 0.3, cap=None)) == set(asked)  # not by order
    assert held_out(qids[:9], 0.5) == []  # too few to check on


def test_too_few_queries_to_hold_out_are_said_not_skipped_silently(tiny_st, tmp_path, capsys):
    """Below 10 judged queries none can be kept out: the command says so, why and what it
    takes, and the result says it too; asking for no check says nothing."""
    from rerankit.training import fine_tune
    from rerankit.training.fine_tuning import MIN_QUERIES_TO_HOLD_OUT
    from rerankit.training.reporting import Reporter
    from rerankit.training.trainer import TRAINED_ON

    data_dir = _answers_below_repeats(tmp_path / "data")
    qrels = data_dir / "qrels" / "train.tsv"
    qrels.write_text("\n".join(qrels.read_text().splitlines()[: 1 + 2 * 6]))  # 6 queries
    train = ["train", "embedding", "--data", str(data_dir), "--model", str(tiny_st)]
    out = tmp_path / "ft"
    assert main([*train, "--out", str(out), "--no-progress", "--max-pairs", "6"]) == 0
    printed = capsys.readouterr()
    assert "held-out check" not in printed.out
    # one step is said as one, in the estimate and in the summary
    assert "6 training pairs, 1 step of 16: about " in printed.out, printed.out
    assert "\n1 step in " in printed.out, printed.out
    assert "no held-out check: 6 judged training queries are too few" in printed.err
    assert f"it takes {MIN_QUERIES_TO_HOLD_OUT} or more" in printed.err
    assert len(json.loads((out / TRAINED_ON).read_text())["queries"]) == 6
    lines = []
    asked = fine_tune(
        data_dir,
        tmp_path / "asked",
        model=str(tiny_st),
        held_out=0.5,
        max_pairs=6,
        reporter=Reporter(note=lines.append),
    )
    assert asked.held_out_check is None and "6 judged training queries" in asked.held_out_skipped
    assert lines == [f"warning: {asked.held_out_skipped}"]
    unasked = fine_tune(data_dir, tmp_path / "none", model=str(tiny_st), held_out=0, max_pairs=6)
    assert unasked.held_out_check is None and unasked.held_out_skipped is None


@pytest.mark.slow  # 12 s: make test-slow
def test_cross_fitting_lets_tune_measure_on_every_training_query(tiny_st, tmp_path, capsys):
    """``--cross-fit 2`` trains the model on every judged query and two fold models, each
    with half of them left out: ``tune`` reads each training query with the fold model that
    never saw it, and so makes its verdict on all 40 instead of a held-out share."""
    from rerankit.cli.console import read_collection
    from rerankit.eval.first_stage import first_stage
    from rerankit.training.methods import feature_rows
    from rerankit.training.selection import cross_fit_routes, per_fold
    from rerankit.training.trainer import TRAINED_ON, cross_fit_models, queries_trained_on

    data_dir = _answers_below_repeats(tmp_path / "data")
    queries = data_dir / "queries.jsonl"  # each its own text, so the folds train on others
    lines = [json.loads(x) for x in queries.read_text().splitlines()]
    mark = ["alpha", "beta", "gamma", "delta", "one", "two", "three", "four"]
    queries.write_text(
        "".join(
            json.dumps({**q, "text": f"{q['text']} {mark[i % 8]}"}) + "\n"
            for i, q in enumerate(lines)
        )
    )
    train = ["train", "embedding", "--data", str(data_dir), "--model", str(tiny_st)]
    ft = tmp_path / "ft"
    assert main([*train, "--out", str(ft), "--cross-fit", "2", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert len(json.loads((ft / TRAINED_ON).read_text())["queries"]) == 40  # no share kept
    assert "held-out check" not in printed
    assert "cross-fitted check, all 40 judged training queries" in printed
    folds = cross_fit_models(ft, data_dir)
    assert [len(seen) for _, seen in folds] == [20, 20]
    assert folds[0][1].isdisjoint(folds[1][1])  # each query left out of exactly one fold
    # a rerun keeps the folds trained on the same queries
    assert main([*train, "--out", str(ft), "--cross-fit", "2", "--no-progress"]) == 0
    assert printed.count("left out") == 2
    assert capsys.readouterr().out.count("trained in an earlier run") == 2

    args = argparse.Namespace(embedding_model=str(ft), data=str(data_dir))
    data = read_collection(str(data_dir), "train", None)
    cands = first_stage(data, "bm25", 10)
    routes = cross_fit_routes(args, cands)
    assert set(routes) == set(cands)
    assert all(q not in queries_trained_on(path, data_dir) for q, path in routes.items())
    rows = per_fold(
        lambda c, e: feature_rows(data, c, e, progress=False), cands, routes, None, None
    )
    assert list(rows) == [q for q in cands if cands[q]]  # every query, in order
    for q in list(rows)[:3]:  # each query's features are its own fold model's
        alone = feature_rows(data, {q: cands[q]}, routes[q], progress=False)[q]
        np.testing.assert_allclose(rows[q][1], alone[1])
        elsewhere = next(p for p, _ in folds if p != routes[q])
        other = feature_rows(data, {q: cands[q]}, elsewhere, progress=False)[q]
        assert not np.allclose(rows[q][1], other[1])  # not the model that saw it

    capsys.readouterr()
    tune = ["tune", "--data", str(data_dir), "--k", "10", "--no-progress"]
    for method in (["--method", "ltr"], []):
        out = tmp_path / f"tuned{len(method)}.toml"
        assert main([*tune, *method, "--embedding-model", str(ft), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "was cross-fitted (2 fold models)" in printed
        assert "cross-validated nDCG@10 over 40 training queries" in printed
        assert out.is_file() and "cross-fit" not in out.read_text()  # reads the whole model
    code = main([*train, "--out", str(tmp_path / "x"), "--cross-fit", "1"])
    assert code == 1 and "at least 2 folds" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow  # make test-slow (about 9 s): keeps make test under 10 minutes
def test_a_cross_encoder_cross_fits_as_the_rough_check_advises(bert_dir, tmp_path, capsys):
    """The held-out check on fewer than 10 queries advises --cross-fit 3: a cross-encoder
    takes it too, and its fold models check the training on every judged query (tune reads
    an embedding model's folds, not these: the output says they served the check only);
    without a test split, the command that compares it with the default names a FOLDER."""
    data_dir = _answers_below_repeats(tmp_path / "data")
    out = tmp_path / "ce"
    args = ["train", "cross-encoder", "--data", str(data_dir), "--model", str(bert_dir)]
    options = ["--max-pairs", "4", "--batch-size", "16", "--no-progress", "--cross-fit", "2"]
    assert main([*args, "--out", str(out), *options]) == 0
    printed = capsys.readouterr()
    assert "--cross-fit is for embedding models" not in printed.err
    assert "held-out check" not in printed.out  # the folds check it: no share kept out
    assert "cross-fitted check, all 40 judged training queries" in printed.out
    assert "they served this check only" in printed.out
    assert sorted(p.name for p in (out / "cross-fit").iterdir()) == ["fold-0", "fold-1"]
    assert (out / "cross-fit" / "fold-0" / "config.json").is_file()
    assert (
        f"`rerankit eval --data FOLDER --rerankers hybrid,{out} --baseline hybrid` measures "
        "both on judged test queries"
    ) in printed.out
