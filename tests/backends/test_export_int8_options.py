"""``export()``'s int8 options (``smooth_alpha``, ``per_token``) shape a cross-encoder's int8
file only: changed anywhere else they are refused, as ``rerankit export`` refuses
``--no-smoothing`` and ``--int8-scales``, before any model is read (the model named here
is not there: a refusal comes first)."""

from __future__ import annotations

import pytest

from rerankit.backends.export import export
from rerankit.backends.quantize import SMOOTH_ALPHA
from rerankit.errors import ModelLoadError


def test_the_int8_options_are_refused_without_int8(tmp_path):
    model, out = str(tmp_path / "model"), tmp_path / "out"
    with pytest.raises(ValueError, match=r"^smooth_alpha=None has no effect without quantize="):
        export(model, out, kind="cross_encoder", smooth_alpha=None)
    with pytest.raises(ValueError) as caught:
        export(model, out, kind="cross-encoder", smooth_alpha=0.5, per_token=False)
    message = str(caught.value)
    assert message.startswith("smooth_alpha=0.5, per_token=False have no effect without quantize")
    assert "shape a cross-encoder's int8 weights; leave them out" in message
    assert not out.exists()


def test_the_int8_options_are_refused_for_an_embedding_model(tmp_path):
    model, out = str(tmp_path / "model"), tmp_path / "out"
    with pytest.raises(ValueError) as caught:
        export(model, out, kind="embedding", quantize="int8", per_token=False)
    message = str(caught.value)
    assert message.startswith("per_token=False has no effect for an embedding model")
    assert "shape a cross-encoder's int8 weights; leave it out" in message
    assert not out.exists()


def test_the_defaults_passed_as_they_are_go_on_to_the_export(tmp_path):
    # as the command passes them when no int8 flag is given: the model is looked for next
    model = tmp_path / "model"
    with pytest.raises(ModelLoadError, match="no such folder"):
        export(str(model), tmp_path / "out", kind="embedding", smooth_alpha=SMOOTH_ALPHA)
    with pytest.raises(ModelLoadError, match="no such folder"):
        export(str(model), tmp_path / "out", kind="cross_encoder", per_token=True)
