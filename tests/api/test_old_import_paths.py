"""The import paths of rerankit 0.1.0 that moved: the old path still works, warns with a
DeprecationWarning naming the new one, and gives the same object; the new path is silent.
A path whose thing is gone (or that a layer may not re-export) is an ImportError naming what
to use instead, not a bare "No module named" or "cannot import name"."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest


def _fresh(module: str):
    """``module`` imported anew, so that its import-time warning is given again."""
    sys.modules.pop(module, None)
    parent, _, child = module.rpartition(".")
    if parent in sys.modules:
        sys.modules[parent].__dict__.pop(child, None)
    __import__(module)  # as an import statement does (importlib.import_module is a frame more)
    return sys.modules[module]


def _silently(module: str, name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return getattr(importlib.import_module(module), name)


#: old module -> (new module, the names it re-exports from there)
MOVED_MODULES = {
    "rerankit.pipeline": {
        "rerankit.rerankers": (
            "Pipeline",
            "Stage",
            "Reranker",
            "ScorerReranker",
            "FusionReranker",
            "HybridReranker",
        ),
        "rerankit": ("rerank", "register_reranker", "available_rerankers"),
    },
    "rerankit.hardware": {"rerankit.backends": ("HardwareProfile",)},
    "rerankit.testing": {"rerankit.llm.testing": ("FakeLLMServer", "RecordedRequest", "Reply")},
}


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_a_moved_module_still_imports_warns_and_gives_the_same_objects(old):
    homes = MOVED_MODULES[old]
    with pytest.warns(DeprecationWarning, match=rf"{old} is now {sorted(homes)[-1]}\b") as said:
        shim = _fresh(old)
    message = str(said[0].message)
    assert all(f" {home}" in message for home in homes) and "import from there" in message
    assert said[0].filename == __file__  # said where it was imported, not inside rerankit
    names = [name for names in homes.values() for name in names]
    assert sorted(shim.__all__) == sorted(names)
    for home, names in homes.items():
        for name in names:
            assert getattr(shim, name) is _silently(home, name), (old, name)


def test_the_old_pipeline_names_that_are_gone_say_what_replaces_them():
    with pytest.warns(DeprecationWarning, match=r"rerankit\.pipeline is now"):
        _fresh("rerankit.pipeline")
    with pytest.raises(ImportError, match=r"get_reranker was removed: use rerankit\.load"):
        from rerankit.pipeline import get_reranker  # noqa: F401
    with pytest.raises(ImportError, match=r"use rerankit\.rerankers\.HybridReranker"):
        from rerankit.pipeline import hybrid_reranker  # noqa: F401
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        sys.modules["rerankit.pipeline"].nothing  # noqa: B018


#: (old module, name, new module)
MOVED_NAMES = [
    ("rerankit.scorers", "Analyzer", "rerankit.text"),
    ("rerankit.types", "RerankitError", "rerankit.errors"),
    ("rerankit.types", "MissingDependencyError", "rerankit.errors"),
    ("rerankit.types", "ModelLoadError", "rerankit.errors"),
    ("rerankit.types", "ScorerError", "rerankit.errors"),
    ("rerankit.eval.runner", "first_stage", "rerankit.eval.first_stage"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED_NAMES)
def test_a_moved_name_still_works_from_its_old_module_and_warns(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is now {new}\.{name}\b") as said:
        value = getattr(module, name)
    assert said[0].filename == __file__
    assert value is _silently(new, name)
    with pytest.warns(DeprecationWarning, match=rf"{new}\.{name}"):
        exec(f"from {old} import {name} as taken", {})  # the 0.1.0 spelling of the import


def test_the_moved_errors_are_still_caught_by_their_old_names():
    from rerankit.errors import InputError

    with pytest.warns(DeprecationWarning, match=r"rerankit\.errors\.RerankitError"):
        from rerankit.types import RerankitError
    with pytest.raises(RerankitError):
        raise InputError("caught by the 0.1.0 name")


@pytest.mark.parametrize(
    ("module", "says"),
    [
        ("rerankit.eval.tune", r"moved to rerankit\.training\.fusion_search \(grid"),
        ("rerankit.eval.cli", r"eval and tune commands are part of rerankit\.cli"),
    ],
)
def test_a_module_eval_may_not_reexport_says_where_it_went(module, says):
    with pytest.raises(ImportError, match=says) as raised:
        importlib.import_module(module)
    assert not isinstance(raised.value, ModuleNotFoundError)
    assert module not in sys.modules


def test_the_new_homes_of_the_eval_modules_hold_what_the_message_names():
    from rerankit.cli import main
    from rerankit.training import fusion_search, tune

    assert callable(main) and callable(tune)
    for name in ("grid", "score_matrix", "pipeline_spec", "FUSIONS", "STRATEGIES"):
        assert hasattr(fusion_search, name), name


@pytest.mark.parametrize(
    ("module", "name", "says"),
    [
        ("rerankit.config", "load", r"rerankit\.config\.load is now rerankit\.load"),
        ("rerankit.cli", "read_documents", r"read_documents was removed: read a JSON array"),
    ],
)
def test_a_name_that_cannot_stay_says_what_to_use(module, name, says):
    with pytest.raises(ImportError, match=says):
        exec(f"from {module} import {name}", {})
    with pytest.raises(ImportError, match=says):
        getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        importlib.import_module(module).nothing  # noqa: B018


def test_import_rerankit_imports_no_old_path():
    import subprocess

    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import rerankit, rerankit.scorers, rerankit.types, rerankit.eval.runner\n"
        "old = [m for m in ('rerankit.pipeline', 'rerankit.hardware', 'rerankit.testing') "
        "if m in sys.modules]\n"
        "assert not old, old\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
