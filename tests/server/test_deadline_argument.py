"""``ServerSettings(deadline=...)``: the Python name of the service's per-request deadline,
as ``[server] deadline`` and ``serve --deadline`` name it; ``timeout=``, the field's own
name and the earlier spelling, still works, and ``settings.deadline`` reads it back."""

from __future__ import annotations

import inspect

import pytest

from rerankit.server.settings import ServerSettings


def test_deadline_sets_what_timeout_sets():
    settings = ServerSettings(deadline=5)
    assert settings.timeout == 5 and settings.deadline == 5
    assert ServerSettings(timeout=7).deadline == 7
    assert ServerSettings().deadline == 30.0
    positional = ServerSettings(None, "hybrid", deadline=3)  # other arguments pass as before
    assert (positional.default, positional.deadline) == ("hybrid", 3)
    settings.deadline = 9  # and sets it
    assert settings.timeout == 9
    assert inspect.signature(ServerSettings).parameters["deadline"].default == 30.0


def test_deadline_and_timeout_at_once_are_a_type_error_naming_both():
    with pytest.raises(TypeError) as caught:
        ServerSettings(deadline=5, timeout=5)
    assert str(caught.value) == (
        "ServerSettings() got deadline= and its earlier name timeout=: give deadline= once"
    )


def test_a_deadline_that_is_not_positive_is_refused_by_its_name():
    with pytest.raises(ValueError, match=r"deadline > 0"):
        ServerSettings(deadline=0)


def test_a_deadline_survives_the_round_trip_to_a_worker():
    settings = ServerSettings(deadline=5)
    again = ServerSettings.from_mapping(settings.to_mapping())
    assert again.deadline == 5 and again.timeout == 5
    assert again.to_mapping()["server"]["timeout"] == 5  # the field keeps its name
