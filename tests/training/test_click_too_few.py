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
