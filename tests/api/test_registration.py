"""Registering rerankers and other names: factories that load other names, and names that
replace a built-in."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rerankit
from rerankit import registry
from rerankit.errors import ConfigError
from rerankit.ordering import Deduplicate

#: run in a child process, so that a regression hangs the child (killed by the timeout), not
#: this worker with a lock held by a thread that never ends
_FACTORIES = textwrap.dedent(
    """
    import threading
    import rerankit
    from rerankit.errors import ConfigError

    rerankit.register_reranker("mine", lambda: rerankit.load("bm25"))
    mine = rerankit.load("mine")
    assert mine is rerankit.load("bm25") and mine is rerankit.load("mine")
    docs = [{"id": "a", "text": "solar power"}, {"id": "b", "text": "wind"}]
    assert rerankit.rerank("solar", docs, reranker="mine")[0].id == "a"

    # two threads, each loading a name whose factory loads the other thread's name
    rerankit.register_reranker("outer", lambda: rerankit.load("inner"))
    rerankit.register_reranker("inner", lambda: rerankit.load("jaccard"))
    got = {}
    threads = [
        threading.Thread(target=lambda n=n: got.__setitem__(n, rerankit.load(n)))
        for n in ("outer", "inner") * 4
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["outer"] is got["inner"] is rerankit.load("jaccard")

    rerankit.register_reranker("selfish", lambda: rerankit.load("selfish"))
    rerankit.register_reranker("ping", lambda: rerankit.load("pong"))
    rerankit.register_reranker("pong", lambda: rerankit.load("ping"))
    cycles = {"selfish": "'selfish' -> 'selfish'", "ping": "'ping' -> 'pong' -> 'ping'"}
    for name, cycle in cycles.items():
        try:
            rerankit.load(name)
        except ConfigError as exc:
            assert cycle in str(exc), exc
            print("cycle:", exc)
        else:
            raise AssertionError(name + " loaded")
    rerankit.register_reranker("selfish", lambda: rerankit.load("bm25"))  # fixed: loads now
    assert rerankit.load("selfish") is rerankit.load("bm25")
    print("ok")
    """
)


def test_a_factory_may_load_other_names_and_a_cycle_is_an_error():
    src = str(Path(rerankit.__file__).resolve().parents[1])  # this rerankit, in the child too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _FACTORIES], capture_output=True, text=True, timeout=30, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ok"
    assert "reranker 'ping' loads itself while it is built ('ping' -> 'pong' -> 'ping')" in (
        done.stdout
    )


@pytest.fixture
def own_registry(monkeypatch):
    """The registry as it is, put back after the test (another test lists the names)."""
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))


class MyDedupe(Deduplicate):
    pass


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_replacing_a_built_in_name_warns_and_registering_yours_again_does_not(own_registry, caplog):
    with caplog.at_level(logging.INFO, logger="rerankit"):
        registry.register("rule", "deduplicate", MyDedupe)
        assert _warnings(caplog) == [
            "rule 'deduplicate' now names your 'MyDedupe', replacing the built-in one in this "
            "process"
        ]
        assert isinstance(rerankit.load({"rule": {"type": "deduplicate"}}).stages[0].step, MyDedupe)
        caplog.clear()
        registry.register("rule", "deduplicate", MyDedupe)  # a notebook cell run again
        rerankit.register_reranker("mine", lambda: rerankit.load("bm25"))
        rerankit.register_reranker("mine", lambda: rerankit.load("jaccard"))
        assert _warnings(caplog) == []
        assert [r.levelname for r in caplog.records] == ["INFO", "INFO"]
        rerankit.register_reranker("hybrid-relative", lambda: rerankit.load("bm25"))
        [said] = _warnings(caplog)
    assert said.startswith("reranker 'hybrid-relative' now names your ")
    assert said.endswith("replacing the built-in one in this process")


def test_a_factory_may_return_a_name_a_pipeline_file_or_a_scorer(own_registry, tmp_path):
    """What a stage takes works as a factory's result (it failed on the first rerank with
    AttributeError: 'str' object has no attribute 'rerank'); anything else is refused."""
    from rerankit.errors import ConfigError
    from rerankit.rerankers import ScorerReranker
    from rerankit.scorers import BM25Scorer

    file = tmp_path / "lexical.toml"
    file.write_text('name = "lexical"\nscorer = { type = "bm25" }\n')
    rerankit.register_reranker("by-name", lambda: "bm25")
    rerankit.register_reranker("by-file", lambda: str(file))
    rerankit.register_reranker("by-scorer", BM25Scorer)
    docs = ["solar panels on roofs", "wind farms"]
    for name in ("by-name", "by-file", "by-scorer"):
        result = rerankit.rerank("solar panels", docs, reranker=name)
        assert [r.index for r in result] == [0, 1], name
    assert rerankit.load("by-name") is rerankit.load("bm25")
    assert isinstance(rerankit.load("by-scorer"), ScorerReranker)
    rerankit.register_reranker("by-number", lambda: 42)
    with pytest.raises(ConfigError, match="reranker 'by-number': its factory returned int"):
        rerankit.load("by-number")


def test_an_unknown_name_tells_a_python_caller_to_import_the_module_that_registers_it(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # no file or folder of that name
    with pytest.raises(ConfigError) as loading:
        rerankit.load("acme_unregistered")
    with pytest.raises(ConfigError) as reranking:
        rerankit.rerank("q", ["a"], reranker="acme_unregistered")
    for message in (str(loading.value), str(reranking.value)):
        assert "import the module that registers it" in message
        assert "--plugin MODULE" in message  # the command line's way is still named
