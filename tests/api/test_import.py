from __future__ import annotations

import subprocess
import sys

import pytest


def test_import_is_lazy_and_silent():
    code = (
        "import sys, rerankit\n"
        "heavy = [m for m in ('numpy', 'Stemmer', 'rerankit.rerankers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert rerankit.scorers.BM25Scorer.__name__ == 'BM25Scorer'\n"
        "assert 'numpy' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


def test_public_names_resolve():
    import rerankit

    for name in rerankit.__all__:
        assert getattr(rerankit, name) is not None
    assert "rerank" in dir(rerankit)


def test_the_front_door_is_small_and_says_where_the_rest_lives():
    """At most 15 names at the top; every scorer comes from rerankit.scorers, and a name that
    left the top is an AttributeError naming its module."""
    import rerankit
    import rerankit.scorers
    from rerankit import registry

    assert len(rerankit.__all__) <= 15 and len(set(rerankit.__all__)) == len(rerankit.__all__)
    for entry in registry.entries("scorer"):  # every registered scorer class is exported
        module, _, name = str(entry.factory).partition(":")
        if module.startswith(".scorers."):
            assert name in rerankit.scorers.__all__, name
            assert getattr(rerankit.scorers, name).__module__ == f"rerankit{module}"
    with pytest.raises(AttributeError, match=r"from rerankit\.scorers import BM25Scorer"):
        rerankit.BM25Scorer  # noqa: B018
    with pytest.raises(AttributeError, match=r"from rerankit\.cache import EmbeddingCache"):
        rerankit.EmbeddingCache  # noqa: B018
    # a name removed after its deprecation says what replaces it
    with pytest.raises(AttributeError, match=r"get_reranker was removed: use rerankit\.load"):
        rerankit.get_reranker  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        rerankit.nothing  # noqa: B018


def test_neural_scorers_import_torch_only_when_they_score():
    code = (
        "import sys, rerankit, rerankit.compat\n"
        "s = rerankit.scorers.EmbeddingScorer(); h = rerankit.load('hybrid')\n"
        "c = rerankit.scorers.CausalLMScorer(); x = rerankit.scorers.CrossEncoderScorer()\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


def test_a_missing_extra_names_what_to_install():
    code = (
        "import sys\n"
        "sys.modules['sentence_transformers'] = None  # as if not installed\n"
        "import rerankit\n"
        "try:\n"
        "    rerankit.rerank('q', ['a', 'b'], reranker={'scorer': {'type': 'embedding', "
        "'backend': 'torch'}})\n"
        "except rerankit.MissingDependencyError as exc:\n"
        "    assert isinstance(exc, ImportError)\n"
        "    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'rerankit[torch]'" in proc.stdout  # from the package index
    assert "(from a checkout: pip install -e '.[torch]')" in proc.stdout  # and from the source
    assert "EmbeddingScorer" in proc.stdout
