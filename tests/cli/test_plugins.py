"""Plugins (:mod:`rerankit.plugins`): your module registering a scorer, a rule and a named
reranker, imported by ``--plugin``, ``$RERANKIT_PLUGINS``, a pipeline file's ``plugins``
key and the service's ``[server] plugins``; one that cannot be imported is named with
where it was named."""

from __future__ import annotations

import json
import sys
import uuid

import pytest

import rerankit
from rerankit import registry
from rerankit.cli.main import main
from rerankit.errors import ConfigError

#: scores each document by its ``stars`` field; the rule puts ``pinned`` documents first
PLUGIN = """
import numpy as np
import rerankit
from rerankit.ordering import Outcome, Rule
from rerankit.registry import register


class StarScorer:
    name = "stars"

    async def score(self, query, docs, **context):
        return np.array([float(d.metadata.get("stars", 0)) for d in docs])


class PinFirst(Rule):
    name = "pin_first"

    def decide(self, items):
        order = sorted(range(len(items)), key=lambda i: not items[i].document.get("pinned"))
        return Outcome(order=order, dropped=[])


register("scorer", "{p}_stars", StarScorer)
register("rule", "{p}_pin", PinFirst)
rerankit.register_reranker("{p}", lambda: rerankit.load({{"scorer": {{"type": "{p}_stars"}}}}))
"""

DOCS = [
    {"id": "a", "text": "one", "stars": 1},
    {"id": "b", "text": "two", "stars": 5},
    {"id": "c", "text": "three", "stars": 3, "pinned": True},
]


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module of a name of its own on sys.path (a module is imported once per
    process), the registry and sys.modules put back after the test."""
    name = f"acme_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(PLUGIN.format(p=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.delenv("RERANKIT_PLUGINS", raising=False)
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    return name


def _ids(out: str) -> list[str]:
    return [json.loads(line)["id"] for line in out.splitlines()]


def test_plugin_flag_makes_its_reranker_known_to_rank_and_without_it_the_error_says_how(
    plugin, tmp_path, capsys
):
    docs = str(tmp_path / "docs.jsonl")
    assert main(["rank", "-q", "x", "-i", docs, "-r", plugin]) == 2  # a refusal
    err = capsys.readouterr().err
    assert f"unknown reranker {plugin!r}" in err
    assert "or load it with --plugin MODULE" in err
    assert main(["rank", "-q", "x", "-i", docs, "-r", plugin, "--plugin", plugin]) == 0
    assert _ids(capsys.readouterr().out) == ["b", "c", "a"]


def test_a_py_file_is_a_plugin_too(plugin, tmp_path, capsys):
    docs, path = str(tmp_path / "docs.jsonl"), str(tmp_path / f"{plugin}.py")
    assert main(["rank", "-q", "x", "-i", docs, "-r", plugin, "--plugin", path]) == 0
    assert _ids(capsys.readouterr().out) == ["b", "c", "a"]


def test_the_environment_variable_names_plugins_for_every_command(
    plugin, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("RERANKIT_PLUGINS", f" json , {plugin}")
    assert main(["rank", "-q", "x", "-i", str(tmp_path / "docs.jsonl"), "-r", plugin]) == 0
    assert _ids(capsys.readouterr().out) == ["b", "c", "a"]


def test_a_pipeline_files_plugins_key_is_imported_before_its_stages_and_check_names_types(
    plugin, tmp_path, capsys
):
    spec = tmp_path / "acme.toml"
    spec.write_text(
        f'plugins = ["{plugin}"]\n[[stages]]\nscorer = {{ type = "{plugin}_stars" }}\n'
        f'[[stages]]\nrule = {{ type = "{plugin}_pin" }}\n'
    )
    assert main(["rank", "-q", "x", "-i", str(tmp_path / "docs.jsonl"), "-r", str(spec)]) == 0
    assert _ids(capsys.readouterr().out) == ["c", "b", "a"]
    assert main(["check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert f"rule {plugin}_pin" in out and "PinFirst" not in out  # as the file spells it
    # a relative .py path is read beside the file, wherever the command runs
    (tmp_path / "sub").mkdir()
    beside = tmp_path / "sub" / "beside.toml"
    beside.write_text(spec.read_text().replace(f'"{plugin}"', f'"../{plugin}.py"'))
    assert isinstance(rerankit.load(str(beside)), rerankit.Pipeline)


def test_a_plugin_that_cannot_be_imported_is_named_with_where_it_was_named(
    plugin, tmp_path, capsys, monkeypatch
):
    docs = str(tmp_path / "docs.jsonl")
    assert main(["rank", "-q", "x", "-i", docs, "--plugin", "no_such_acme"]) == 1
    err = capsys.readouterr().err
    assert "cannot import plugin 'no_such_acme' (named by --plugin): ModuleNotFoundError" in err
    (tmp_path / "broken_acme.py").write_text("raise ImportError('needs acme-sdk')\n")
    monkeypatch.setenv("RERANKIT_PLUGINS", "broken_acme")
    assert main(["check", str(tmp_path / "x.toml")]) != 0
    err = capsys.readouterr().err
    assert "plugin 'broken_acme' (named by $RERANKIT_PLUGINS): ImportError: needs acme-sdk" in err
    monkeypatch.delenv("RERANKIT_PLUGINS")
    spec = tmp_path / "bad.toml"
    spec.write_text('plugins = ["no_such_acme"]\nscorer = { type = "bm25" }\n')
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().out
    assert str(spec) in err and "plugin 'no_such_acme' (named by the plugins key)" in err
    with pytest.raises(ConfigError, match="plugins: a list of module names"):
        rerankit.load({"plugins": plugin, "scorer": {"type": "bm25"}})


def test_an_unknown_name_in_another_case_gets_the_suggestion(plugin, tmp_path, capsys):
    docs = str(tmp_path / "docs.jsonl")
    assert main(["rank", "-q", "x", "-i", docs, "-r", "BM25X"]) == 2
    assert "did you mean 'bm25'?" in capsys.readouterr().err
    __import__(plugin)
    with pytest.raises(ConfigError, match=f"did you mean '{plugin}'"):
        rerankit.load(plugin.upper())


def test_the_service_settings_plugins_serve_the_plugins_pipelines(plugin, tmp_path):
    pytest.importorskip("fastapi", reason="needs the 'server' extra")
    from fastapi.testclient import TestClient

    from rerankit.server import ServerSettings, create_app

    (tmp_path / "service.toml").write_text(
        f'[server]\nplugins = ["{plugin}"]\ndefault = "acme"\n'
        f'[pipelines.acme]\nreranker = "{plugin}"\n'
    )
    settings = ServerSettings.from_file(tmp_path / "service.toml")
    with TestClient(create_app(settings)) as client:
        documents = [{k: v for k, v in d.items() if k != "id"} for d in DOCS]
        r = client.post("/v1/rerank", json={"query": "x", "documents": documents})
        assert r.status_code == 200, r.text
        assert [x["index"] for x in r.json()["results"]] == [1, 2, 0]
    with pytest.raises(ConfigError, match=r"named by \[server\] plugins"):
        ServerSettings.from_mapping({"server": {"plugins": ["no_such_acme"]}})


class _NoName:
    async def score(self, query, docs, **context):
        return [0.0] * len(docs)


class _Sync:
    name = "sync"

    def score(self, query, docs, **context):
        return [0.0] * len(docs)


def test_a_plugin_scorers_common_mistakes_are_said_with_the_fix(plugin):
    registry.register("scorer", "acme_no_name", _NoName)
    registry.register("scorer", "acme_sync", _Sync)
    spec = {"stages": [{"scorer": {"type": "bm25"}}, {"scorers": [{"type": "acme_no_name"}]}]}
    with pytest.raises(ConfigError) as caught:
        rerankit.load(spec)
    said = str(caught.value)
    assert said.startswith("stages[1].scorers[0]: scorer 'acme_no_name': _NoName has no name")
    assert 'name = "mine"' in said
    result = rerankit.rerank("q", ["a", "b"], reranker={"scorer": {"type": "acme_sync"}})
    assert any("score must be `async def" in w for w in result.warnings), result.warnings
    with pytest.raises(ConfigError, match=r"has no option 'name'; it takes no options$"):
        rerankit.load({"scorer": {"type": "acme_sync", "name": "x"}})


def test_a_module_in_the_current_folder_or_beside_the_file_naming_it_is_found(
    tmp_path, capsys, monkeypatch
):
    """As ``python -m`` finds a module in the current folder, and as a pipeline file's
    models are read beside it; nowhere, the error says where it was looked for."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("RERANKIT_PLUGINS", raising=False)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    first, second = (f"acme_{uuid.uuid4().hex[:8]}" for _ in range(2))
    (here / f"{first}.py").write_text(PLUGIN.format(p=first))
    (there / f"{second}.py").write_text(PLUGIN.format(p=second))
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    monkeypatch.chdir(here)
    assert main(["rank", "-q", "x", "-i", str(docs), "-r", first, "--plugin", first]) == 0
    assert _ids(capsys.readouterr().out) == ["b", "c", "a"]
    spec = there / "acme.toml"
    spec.write_text(f'plugins = ["{second}"]\nscorer = {{ type = "{second}_stars" }}\n')
    assert main(["rank", "-q", "x", "-i", str(docs), "-r", str(spec)]) == 0  # run from here
    assert _ids(capsys.readouterr().out) == ["b", "c", "a"]
    assert main(["rank", "-q", "x", "-i", str(docs), "--plugin", "acme_nowhere"]) == 1
    assert (
        "looked up on sys.path (PYTHONPATH), then in the current folder" in capsys.readouterr().err
    )


def test_a_plugin_whose_code_fails_is_named_with_its_file_and_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.delenv("RERANKIT_PLUGINS", raising=False)
    path = tmp_path / "crashing_acme.py"
    path.write_text("import json\n\nUndefined + 1\n")
    assert main(["rerankers", "--plugin", str(path)]) != 0
    err = capsys.readouterr().err
    assert "NameError: name 'Undefined' is not defined" in err and f"({path}, line 3)" in err
    needs = tmp_path / "needing_acme.py"
    needs.write_text("import acme_sdk_that_is_not_installed\n")
    assert main(["rerankers", "--plugin", str(needs)]) != 0
    err = capsys.readouterr().err  # the module it needs is missing, not the plugin
    assert "No module named 'acme_sdk_that_is_not_installed'" in err and ", line 1)" in err
    assert "looked up on sys.path" not in err
    deep = tmp_path / "deep_acme.py"  # failing in code it calls: the plugin's own line named
    deep.write_text("import json\n\njson.loads('{not json')\n")
    assert main(["rerankers", "--plugin", str(deep)]) != 0
    assert "JSONDecodeError: Expecting property name" in (err := capsys.readouterr().err)
    assert f"({deep}, line 3)" in err
