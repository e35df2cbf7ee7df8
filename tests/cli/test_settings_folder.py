"""``--settings`` given a folder: a model folder is named as one, with the flag that serves
it (``-r``); another folder is said to be a folder, not a settings file."""

from __future__ import annotations

import json

import pytest

from rerankit.cli import main


@pytest.fixture
def model(tmp_path):
    folder = tmp_path / "my-ce"
    folder.mkdir()
    config = {"architectures": ["BertForSequenceClassification"]}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.mark.parametrize("command", ["serve", "precompute -i docs.jsonl"])
def test_a_model_folder_given_as_settings_says_to_name_it_with_r(
    command, model, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "solar"}\n', encoding="utf-8")
    assert main([*command.split(), "--settings", str(model)]) == 1
    err = capsys.readouterr().err
    assert f"{model}: a model folder, not a settings file: name it with `-r {model}`" in err
    assert "use a .toml" not in err


def test_another_folder_given_as_settings_is_said_to_be_a_folder(tmp_path, capsys):
    assert main(["serve", "--settings", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path}: a folder, not a settings file: use a .toml, .yaml, .yml or .json" in err
