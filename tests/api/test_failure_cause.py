"""What a degraded result's cause is, wherever it is reported (/info, the service's one-line
summaries, eval's degraded_cause): the first warning that tells a failure, not a note."""

from __future__ import annotations

from rerankit.errors import failure_cause

NOTE = "stage 'hybrid': bm25_background: no query term occurs in any candidate; every score is 0"
FAILURE = "stage 'judge': document 0: no score (answered HTTP 500); it keeps the previous score"


def test_the_failure_is_named_not_the_note_before_it():
    assert failure_cause([NOTE, FAILURE]) == FAILURE
    assert failure_cause((NOTE, "stage 'rule' failed: boom")) == "stage 'rule' failed: boom"


def test_without_a_failure_the_first_warning_else_none():
    assert failure_cause([NOTE, "another note"]) == NOTE
    assert failure_cause([]) is None
