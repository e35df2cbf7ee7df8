"""``rerankit train --model HUB_ID`` where the hub cannot be reached: one line saying so and
that a local folder works, exit 2 as other usage errors, nothing written."""

from __future__ import annotations

import pytest

from rerankit.cli import main


@pytest.mark.parametrize("what", ["embedding", "cross-encoder"])
def test_a_hub_id_offline_is_one_clear_line_and_exit_2(tmp_path, monkeypatch, capsys, what):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "out"
    args = ["train", what, "--data", "examples/scifact-mini", "--out", str(out)]
    code = main([*args, "--model", "nobody-here/made-up-model-7", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "rerankit train: error: --model nobody-here/made-up-model-7: the Hugging Face hub "
        "cannot be reached (or HF_HUB_OFFLINE is set) and the local Hugging Face cache does "
        "not hold this model; a local model folder works offline: --model PATH\n"
    )
    assert not out.exists()
