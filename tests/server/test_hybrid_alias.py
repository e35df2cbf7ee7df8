"""A pipeline that is the built-in hybrid under another name, as ``rerankit tune`` writes
it when nothing learned beat the default (``name = "tuned"``), answers requests naming
``hybrid`` when served: clients that name the default keep working. A learned pipeline, a
pipeline already named ``hybrid`` and a ``"hybrid"`` alias set by hand are left as they are."""

from __future__ import annotations

import pytest

from rerankit.cli import build_parser, serve_settings
from rerankit.server.settings import ServerSettings
from rerankit.spec_toml import to_toml

DEFAULT = {"stages": [{"reranker": "hybrid"}]}
LEARNED = {"stages": [{"scorers": [{"type": "bm25", "weight": 0.7}, {"type": "embedding"}]}]}


def _file(folder, name, spec):
    path = folder / f"{name}.toml"
    path.write_text(to_toml({"name": name, **spec}, "written by rerankit tune"))
    return path


def _serve(*flags):
    return serve_settings(build_parser().parse_args(["serve", *flags]))


def test_tunes_default_file_is_reached_as_hybrid_wherever_it_runs(tmp_path):
    tuned = _file(tmp_path, "tuned", DEFAULT)
    for flags in ((), ("--backend", "onnx")):
        settings = _serve("--reranker", str(tuned), *flags)
        assert settings.default == "tuned" and "hybrid" not in settings.pipelines
        assert settings.resolve("hybrid") == "tuned"
        assert settings.resolve("rerank-v3.5") == "tuned"  # Cohere's names, as before


def test_a_settings_files_pipeline_that_is_the_hybrid_is_reached_as_hybrid(tmp_path):
    _file(tmp_path, "tuned", DEFAULT)
    conf = tmp_path / "service.toml"
    conf.write_text(
        '[server]\ndefault = "fast"\n'
        '[pipelines.fast]\nreranker = "bm25"\n[pipelines.tuned]\nreranker = "tuned.toml"\n'
    )
    assert _serve("--settings", str(conf)).resolve("hybrid") == "tuned"
    conf.write_text(conf.read_text() + '[server.aliases]\n"my-app" = "fast"\n')
    mine = _serve("--settings", str(conf))  # an alias of one's own keeps the stand-in
    assert mine.resolve("my-app") == "fast" and mine.resolve("hybrid") == "tuned"
    conf.write_text(conf.read_text().replace('"my-app" = "fast"', '"hybrid" = "fast"'))
    assert _serve("--settings", str(conf)).resolve("hybrid") == "fast"  # or points it elsewhere


@pytest.mark.parametrize(
    "spec",
    [LEARNED, {"stages": [{"reranker": "hybrid", "keep": 20}, {"scorer": {"type": "bm25"}}]}],
)
def test_a_learned_pipeline_is_not_called_hybrid(tmp_path, spec):
    settings = _serve("--reranker", str(_file(tmp_path, "tuned", spec)))
    assert settings.resolve("hybrid") == "hybrid"  # a name nothing serves: a 404
    assert "hybrid" not in settings.aliases


def test_a_file_named_hybrid_and_the_built_ins_keep_their_own(tmp_path):
    old = _serve("--reranker", str(_file(tmp_path, "hybrid", DEFAULT)))  # an earlier tune's
    assert list(old.pipelines) == ["hybrid"] and "hybrid" not in old.aliases
    built_in = ServerSettings()
    assert built_in.resolve("hybrid") == "hybrid" and "hybrid" not in built_in.aliases
    mine = {"mine": {"reranker": {"type": "hybrid", "model": "x"}}}
    moved = ServerSettings(pipelines=mine, default="mine")
    assert "hybrid" not in moved.aliases  # another embedding model: not the default
