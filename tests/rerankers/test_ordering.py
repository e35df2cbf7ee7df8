"""Ordering rules: spec 4's difficulty ordering, MMR, score cut, near-duplicate removal."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rerankit
from rerankit import Document, Pipeline, rerank
from rerankit.compat import DIFFICULTY_BUCKETS
from rerankit.compat import apply_difficulty_ordering as compat_difficulty
from rerankit.errors import InvalidDocumentError
from rerankit.ordering import (
    MMR,
    Deduplicate,
    MinScore,
    Outcome,
    Rule,
    apply_difficulty_ordering,
    deduplicate,
    min_score,
    mmr,
)
from rerankit.scorers import BM25Scorer

LEVELS = ["advanced", "introductory", "intermediate", "introductory", "advanced", None, "weird"]


def items(levels=LEVELS):
    return [{"id": i, "text": f"doc {i}", "difficulty": lvl} for i, lvl in enumerate(levels)]


def test_buckets():
    assert DIFFICULTY_BUCKETS == {"introductory": 0, "intermediate": 1, "advanced": 2}


def test_learn_mode_sorts_by_bucket_and_keeps_relevance_inside_a_bucket():
    out = apply_difficulty_ordering(items(), mode="learn")
    # introductory (1, 3), then intermediate incl. missing and unknown (2, 5, 6), then advanced
    assert [d["id"] for d in out] == [1, 3, 2, 5, 6, 0, 4]
    assert compat_difficulty(items(), mode="learn") == out


def test_research_mode_and_short_lists_are_unchanged():
    given_items = items()
    before = copy.deepcopy(given_items)
    assert apply_difficulty_ordering(given_items, mode="research") == given_items
    assert apply_difficulty_ordering([], mode="learn") == []
    one = items(["advanced"])
    assert apply_difficulty_ordering(one, mode="learn") == one
    assert given_items == before  # nothing mutated
    with pytest.raises(ValueError, match="mode"):
        apply_difficulty_ordering(given_items, mode="teach")


def test_documents_past_the_window_stay_put():
    out = apply_difficulty_ordering(items(), mode="learn", window=3)
    assert [d["id"] for d in out] == [1, 2, 0, 3, 4, 5, 6]


def test_metadata_locations_and_kinds():
    nested = [
        {"text": "a", "metadata": {"difficulty": "advanced"}},
        {"text": "b", "metadata": {"difficulty": "Introductory"}},
    ]
    assert [d["text"] for d in apply_difficulty_ordering(nested)] == ["b", "a"]
    docs = [Document("a", metadata={"level": "advanced"}), Document("b", metadata={"level": 0})]
    out = apply_difficulty_ordering(docs, field="level")
    assert [d.text for d in out] == ["b", "a"] and all(isinstance(d, Document) for d in out)


def test_on_a_rerank_result_it_renumbers_ranks():
    result = rerank("doc", items(), reranker="bm25")
    out = apply_difficulty_ordering(result, mode="learn")
    assert type(out) is type(result)
    assert [r.rank for r in out] == list(range(1, len(LEVELS) + 1))
    assert [r.document["difficulty"] for r in out][:2] == ["introductory", "introductory"]
    assert sorted(r.index for r in out) == list(range(len(LEVELS)))


def test_documents_without_a_known_difficulty_are_counted_in_one_warning(caplog):
    result = rerank("doc", items(), reranker="bm25")
    out = apply_difficulty_ordering(result, mode="learn")
    # LEVELS has one missing value and one unknown one
    assert [w for w in out.warnings if "difficulty" in w] == [
        "rule 'difficulty': field 'difficulty' is missing or not one of 'introductory', "
        "'intermediate', 'advanced' in 2 of 7 documents of its window; they count as "
        "intermediate"
    ]
    misspelt = apply_difficulty_ordering(result, field="dificulty")
    assert "'dificulty' is missing" in misspelt.warnings[-1]
    assert "in every document of its window" in misspelt.warnings[-1]
    known = apply_difficulty_ordering(
        rerank("doc", items(["advanced", "introductory"]), reranker="bm25")
    )
    assert not [w for w in known.warnings if "difficulty" in w]
    with caplog.at_level("WARNING", logger="rerankit.ordering"):
        apply_difficulty_ordering(items(), mode="learn")  # a plain list logs it
    assert "in 2 of 7 documents" in caplog.text


@settings(max_examples=200, deadline=None)
@given(
    levels=st.lists(st.sampled_from([*DIFFICULTY_BUCKETS, None, "x"]), max_size=30),
    window=st.integers(0, 35),
)
def test_learn_mode_properties(levels, window):
    out = apply_difficulty_ordering(items(levels), mode="learn", window=window)
    ids = [d["id"] for d in out]
    assert sorted(ids) == list(range(len(levels)))
    top = min(window, len(levels))
    assert ids[top:] == list(range(top, len(levels)))  # past the window: untouched
    rank = {"introductory": 0, "advanced": 2}
    buckets = [rank.get(d["difficulty"], 1) for d in out[:top]]
    assert buckets == sorted(buckets)
    for b in set(buckets):  # inside a bucket the relevance order holds
        same = [d["id"] for d in out[:top] if rank.get(d["difficulty"], 1) == b]
        assert same == sorted(same)


def test_min_score_and_deduplicate_report_what_they_drop():
    result = rerank(
        "solar power",
        ["solar power plants", "solar power plants!", "wind farms", "solar panels"],
        reranker="bm25",
    )
    cut = min_score(result, 0.01)
    assert all(r.score >= 0.01 for r in cut) and len(cut) < len(result)
    assert any("min_score dropped" in w for w in cut.warnings)
    assert set(cut.dropped) == {r.index for r in result if r.score < 0.01}
    deduped = deduplicate(result)
    assert [r.text for r in deduped].count("solar power plants") + [r.text for r in deduped].count(
        "solar power plants!"
    ) == 1
    assert len(deduped.dropped) == 1 and "near-duplicate" in deduped.warnings[-1]
    plain = deduplicate(["a b c", "a b c", "d e"])
    assert plain == ["a b c", "d e"]


def test_mmr_pushes_a_redundant_item_down():
    docs = [
        {"text": "solar panels on roofs", "rerank_score": 0.9},
        {"text": "solar panels on roofs today", "rerank_score": 0.85},
        {"text": "wind turbines offshore", "rerank_score": 0.75},
        {"text": "cooking pasta", "rerank_score": 0.1},
    ]
    # relevance (min-max): 1, 0.94, 0.81, 0; the near-copy overlaps the first by 0.8
    assert [d["text"] for d in mmr(docs, 0.5)] == [docs[i]["text"] for i in (0, 2, 1, 3)]
    assert mmr(docs, 1.0) == docs  # pure relevance: unchanged
    vectors = [[1, 0], [1, 0.01], [0, 1], [0.7, 0.7]]
    with_vectors = [dict(d, embedding=v) for d, v in zip(docs, vectors, strict=True)]
    assert [d["text"] for d in mmr(with_vectors, 0.5)][1] == "wind turbines offshore"
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return vectors

    assert [d["text"] for d in MMR(0.5, embed=embed)(docs)][1] == "wind turbines offshore"
    assert calls == [4]
    assert mmr(docs[:1]) == docs[:1]
    with pytest.raises(ValueError, match="lambda_"):
        MMR(1.5)


#: a retriever's hits whose text is under "content", not "text"
CONTENT = [
    {"url": f"u{i}", "content": t}
    for i, t in enumerate(["solar panels", "wind farms", "nuclear power", "coal plants"])
]


def test_rules_that_compare_texts_refuse_dicts_without_their_text_field():
    """Read as "" each, every text was the same: deduplicate kept one of four distinct
    documents, and mmr changed nothing, without a word."""
    for rule in (deduplicate, mmr):
        with pytest.raises(InvalidDocumentError, match="missing text field 'text'") as err:
            rule(CONTENT)
        assert "fields present: 'url', 'content'" in str(err.value)
        assert "text_field=" in str(err.value) and err.value.field == "text"
        # only what the rule takes: no rule takes text_fields
        assert "text_fields" not in str(err.value)
    assert deduplicate(CONTENT, text_field="content") == CONTENT
    assert sorted(d["url"] for d in mmr(CONTENT, text_field="content")) == ["u0", "u1", "u2", "u3"]
    assert CONTENT[0] == {"url": "u0", "content": "solar panels"}  # nothing mutated
    # a result's documents carry the text they were ranked by, whatever field held it
    result = rerank(
        "solar", [*CONTENT, dict(CONTENT[0], url="u4")], reranker="bm25", text_field="content"
    )
    assert len(deduplicate(result)) == 4 and len(mmr(result)) == 5
    # mmr compares vectors when every item carries one: no text needed
    vectors = [
        {"embedding": [1, 0], "rerank_score": 0.9},
        {"embedding": [0, 1], "rerank_score": 0.5},
    ]
    assert mmr(vectors) == vectors


def test_min_score_refuses_a_list_with_no_score_and_says_which_it_kept_unscored(caplog):
    with pytest.raises(
        InvalidDocumentError, match="none of the 4 items has a numeric 'rerank_score'"
    ) as err:
        min_score(CONTENT, 0.5)  # kept them all
    assert "['content', 'url']" in str(err.value) and "score_field=" in str(err.value)
    scored = [dict(d, distance=s) for d, s in zip(CONTENT, (0.9, 0.2, 0.7, 0.4), strict=True)]
    assert [d["url"] for d in min_score(scored, 0.5, score_field="distance")] == ["u0", "u2"]
    some = [{"text": "a", "rerank_score": 0.7}, {"text": "b"}, {"text": "c", "rerank_score": 0.1}]
    with caplog.at_level("WARNING", logger="rerankit.ordering"):
        assert [d["text"] for d in min_score(some, 0.5)] == ["a", "b"]
    assert "1 of 3 items have no numeric 'rerank_score' and are kept" in caplog.text


class Probabilities:
    """A scorer of probabilities: each text's number in ``table``."""

    score_scale = "probability"
    name = "p"

    def __init__(self, table):
        self.table = table

    async def score(self, query, docs, **context):
        return np.array([self.table[d.text] for d in docs])


def test_min_score_warns_that_a_threshold_on_relative_or_logit_scores_is_no_probability():
    result = rerank("solar power", CONTENT, reranker="bm25", text_field="content")
    assert result.score_scale == "relative"
    [note] = [w for w in min_score(result, 0.5).warnings if "no probability" in w]
    assert note.startswith("rule 'min_score': the scores are relative") and "top_k" in note
    logits = min_score(replace(result, score_scale="logit"), 0.5)
    assert any("logits" in w and "0 for 0.5" in w for w in logits.warnings)
    # in a pipeline the rule sees the scale of the stage that scored before it
    texts = {d["content"]: p for d, p in zip(CONTENT, (0.9, 0.2, 0.7, 0.4), strict=True)}
    calibrated = Pipeline([Probabilities(texts), MinScore(0.5)])
    cut = calibrated.rerank("q", CONTENT, text_field="content")
    assert [(r.text, r.score) for r in cut] == [("solar panels", 0.9), ("nuclear power", 0.7)]
    assert not [w for w in cut.warnings if "no probability" in w]
    lexical = Pipeline([BM25Scorer(), MinScore(0.5)]).rerank("solar", CONTENT, text_field="content")
    assert any("'min_score': the scores are relative" in w for w in lexical.warnings)


def test_mmr_k_picks_that_many_from_the_top_and_cuts_nothing(tmp_path):
    docs = [{"text": f"solar panels {i % 3}", "rerank_score": 1.0 - i / 20} for i in range(20)]
    out = mmr(docs, 0.5, k=5)
    assert len(out) == 20  # k reorders the top; top_k / -k / top_n cut
    picked = {d["text"] for d in out[:5]}
    assert len(picked) == 3  # the five spread over the three texts
    assert out[5:] == [d for d in docs if d not in out[:5]]  # the rest in their order
    for bad in (0, -1, "5", 2.5, True):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            MMR(0.5, k=bad)
    path = tmp_path / "p.toml"  # and where a file declares it
    path.write_text(
        '[[stages]]\nscorer = { type = "bm25" }\n\n'
        '[[stages]]\nrule = { type = "mmr", lambda = 0.7, k = 0 }\n'
    )
    with pytest.raises(Exception, match="k must be a positive integer"):
        rerankit.load(str(path))


class _Cap(Rule):
    """At most one document per source first (the per-source cap of docs/pipelines.md)."""

    name = "cap"

    def decide(self, items):
        seen, first, later = set(), [], []
        for i, item in enumerate(items):
            source = item.document["source"]
            (later if source in seen else first).append(i)
            seen.add(source)
        return Outcome(order=first + later, dropped=[])


def test_a_pipeline_warns_when_mmr_follows_a_rule_that_reorders(caplog):
    docs = [
        {"id": "b1", "text": "solar panels for the roof", "source": "blog"},
        {"id": "b2", "text": "solar panels and solar power", "source": "blog"},
        {"id": "w1", "text": "solar power in winter", "source": "wiki"},
    ]
    with caplog.at_level("WARNING", logger="rerankit"):
        lost = Pipeline([BM25Scorer(), Deduplicate(0.8), _Cap(), MMR(1.0)], name="p")
    [record] = [r for r in caplog.records if "order is lost" in r.getMessage()]
    assert "'mmr'" in record.getMessage() and "'cap'" in record.getMessage()
    assert [r.id for r in lost.rerank("solar panels", docs)][1] != "w1"  # what it warns of
    caplog.clear()
    with caplog.at_level("WARNING", logger="rerankit"):  # the recommended order: no warning
        kept = Pipeline([BM25Scorer(), Deduplicate(0.8), MMR(1.0), _Cap(), MinScore(0.0)])
        Pipeline([_Cap(), BM25Scorer(), MMR(1.0)])  # a scoring stage in between gives new scores
    assert not [r for r in caplog.records if "order is lost" in r.getMessage()]
    assert [r.document["source"] for r in kept.rerank("solar panels", docs)][:2] == ["blog", "wiki"]
