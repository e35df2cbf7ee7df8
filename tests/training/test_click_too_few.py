"""Learning from a log too thin to learn from says so before the slow part."""

from __future__ import annotations

import json

import pytest

from rerankit.training.clicks import learn_from_log


def test_learning_says_too_few_clicks_before_computing_features(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = [
        {
            "type": "impression",
            "id": f"a{q}",
            "query": f"query {q}",
            "documents": [{"id": f"d{q}", "text": "t"}],
            "shown": [0],
        }
        for q in range(3)
    ]
    log.write_text(
        "".join(
            json.dumps(r) + "\n" for r in [*rows, {"type": "feedback", "id": "a0", "clicks": [0]}]
        ),
        encoding="utf-8",
    )
    # a model that is not there: the features would fail to load it, after minutes on a
    # big log; the count of clicked queries is said first
    with pytest.raises(ValueError, match="too few clicks to learn from: 1 of the 3 logged") as e:
        learn_from_log(log, embedding=str(tmp_path / "no-such-model"))
    assert "learning needs at least 4" in str(e.value)


def test_a_refusal_says_which_clicks_were_left_out_and_what_to_do(tmp_path):
    """The clicks of a log can all be on impressions left out for a document without a
    text: the refusal says so (not only "no clicks"), and names the next step."""
    from rerankit.errors import InputError
    from rerankit.training.clicks import ClickLog

    log = tmp_path / "log.jsonl"
    clicks = ClickLog(log, store="id")
    clicks.log_impression("seen", "query 0", [{"id": "d0", "text": "t"}], [0])
    for q in range(1, 3):  # clicked, about documents the corpus does not have
        clicks.log_impression(f"a{q}", f"query {q}", [{"id": f"x{q}", "text": "t"}], [0])
        clicks.log_feedback(f"a{q}", [0])
    clicks.close()
    with pytest.raises(InputError) as e:
        learn_from_log(log, corpus={"d0": "t"})
    said = str(e.value)
    assert "no clicks to learn from" in said
    assert "2 impressions (and their clicks) left out for a document without a text" in said
    assert "rerankit simulate-clicks" in said and "rerankit check --clicks LOG" in said
    more = tmp_path / "more.jsonl"
    clicks = ClickLog(more)
    for q in range(3):
        clicks.log_impression(f"b{q}", f"query {q}", [{"id": f"d{q}", "text": "t"}], [0])
        clicks.log_feedback(f"b{q}", [0])
    clicks.close()
    with pytest.raises(ValueError, match="too few clicks to learn from: 3 of the 3") as e:
        learn_from_log(more)
    assert "rehearse the loop on a judged collection with rerankit simulate-clicks" in str(e.value)
