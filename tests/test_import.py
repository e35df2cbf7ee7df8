from __future__ import annotations

import subprocess
import sys


def test_import_is_lazy_and_silent():
    code = (
        "import sys, rerankit\n"
        "heavy = [m for m in ('numpy', 'Stemmer', 'rerankit.pipeline') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert rerankit.BM25Scorer.__name__ == 'BM25Scorer'\n"
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
